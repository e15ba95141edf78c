"""Landscapes: every architecture of a space (or a sample) evaluated once and tabulated per query
(`table.py`), built in units that share writes (`build.py`, `unit.py`, `digest.py`), joined across
shards (`join.py`), replayed by any strategy over many seeds (`replay.py`, `report.py`), and used to
score a live `compare` (`compare_oracle.py`).

The top of ``optimizers``: it runs strategies and compile's selection, so it may import them all."""
