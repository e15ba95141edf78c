"""A landscape of a fixed subset of a costly benchmark: the first N questions of each split
(``--split-limit``) and modules left out of the space (``--exclude``), which replays then search
without; both one-line errors from the CLI when wrong."""
from __future__ import annotations

import pytest

from memarch.benchmarks.base.splits import SPLITS
from memarch.cli import main
from memarch.optimizers.landscapes.build import build, plan_build
from memarch.optimizers.landscapes.replay import Replay


def test_first_questions_of_each_split_in_stream_order(small_generated):
    view = small_generated.limit_per_split(3)
    for name in SPLITS:
        every = [q.id for q in small_generated.split(name).questions()]
        kept = [q.id for q in view.split(name).questions()]
        assert kept == every[:3]
    assert small_generated.limit_per_split(None) is small_generated


@pytest.fixture(scope="module")
def subset_land(small_generated, hash_res, tmp_path_factory):
    plan = plan_build(small_generated, resources=hash_res, sample=6, seed=0, split_limit=4, exclude=("entity",))
    return build(plan, tmp_path_factory.mktemp("subset") / "subset.npz", progress=False)


def test_the_subset_and_the_left_out_modules_are_kept_in_the_file(subset_land):
    assert subset_land.meta["split_limit"] == 4 and subset_land.meta["exclude"] == ["encoder:entity"]
    assert all(n <= 4 for n in subset_land.meta["queries"].values())
    assert not [k for k in subset_land.keys if "entity" in k.split("|")[0].split("+")]
    assert set(subset_land.presets.values()) <= set(subset_land.keys)  # presets that need entity are skipped


def test_a_replay_searches_the_space_without_the_left_out_module(subset_land):
    replay = Replay(subset_land, budget=4, horizon=6)
    assert "entity" not in replay.space.encoders
    run = replay.run("tpe", 0)
    assert all("entity" not in k.split("|")[0].split("+") for k in run.keys)


def test_cli_refuses_a_bad_split_limit_or_module(tmp_path, capsys):
    base = ["landscape", "build", "--knob", "conversations=1", "--embedder", "hash", "--out", str(tmp_path / "x.npz")]
    assert main([*base, "--split-limit", "0"]) == 2
    assert "--split-limit must be at least 1" in capsys.readouterr().err
    assert main([*base, "--exclude", "nonsense"]) == 2
    assert "nonsense" in capsys.readouterr().err
