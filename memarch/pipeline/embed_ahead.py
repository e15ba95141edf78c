"""Embeddings ahead of a run, in the foreground, on every core: the texts a run will embed that the
embedder's disk cache lacks, sorted by length (little padding), dealt to one worker process per core
(one torch thread each), written to the shared cache; the run then finds every vector there.

Why processes, not threads: MiniLM's forward pass on a batch of 32 long texts does not keep two
intra-op threads busy; two single-thread processes embed 1.3-1.4x more texts a second on this
2-core machine (benchmarks/bench_embed_ahead.py). On a GPU (torch sees CUDA) one worker runs there.

Example::

    report = embed_ahead(resources.embedder, texts)   # returns once every text is in the cache
    report.computed, report.seconds, report.workers
    embed_ahead(embedder, texts, on_progress=lambda p: print(p.done, p.total, p.eta_s))
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from memarch.pipeline.cache import stable_hash
from memarch.pipeline.prefetch import FAST, Prefetch

log = logging.getLogger(__name__)

# Below this many missing texts the run embeds them itself: a worker's start (its model load, ~3 s)
# costs more than it saves.
MIN_TEXTS = 256
PROGRESS_EVERY_S = 10.0
# A text's share of the work, for progress: its characters up to about what the model reads (~4.7
# characters a token: 256 tokens, or 128 for the short model), plus a fixed cost per text. Fitted to
# bench_embed_ahead.py's two floors (17 ms a 256-token text, 10 ms at 128: ~3 ms fixed, the rest per
# token), so a fixed cost of ~300 characters; the previous 40 made the ETA of a shortest-first run
# several times too long at its start.
CHARS_PER_TOKEN = 4.7
TEXT_OVERHEAD_CHARS = 300


@dataclass(frozen=True)
class AheadProgress:
    """Where the workers are: texts embedded of the texts to embed, the share of the work done (texts
    weighed by what the model reads of them: they run shortest first), and seconds since the workers
    started (listing the texts and checking the cache before is not counted, so the pace is theirs)."""

    done: int
    total: int
    share: float
    seconds: float

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far; None before any work is done."""
        return self.seconds * (1 - self.share) / self.share if self.share > 0 else None


@dataclass
class AheadReport:
    """What `embed_ahead` did: texts asked for (distinct), found in the cache, embedded by the
    workers, and what is still missing afterwards (a worker that failed: the run embeds them);
    ``known``: nothing was listed, an earlier run's `mark_known` said every text is in the cache."""

    requested: int = 0
    cached: int = 0
    computed: int = 0
    missing: int = 0
    workers: int = 0
    seconds: float = 0.0
    failed_workers: int = 0
    known: bool = False  # not listed: an earlier run of the same texts left every one in the cache

    @property
    def rate(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else 0.0


def _marker(embedder, fingerprint: str) -> Path | None:
    """Where the mark of ``fingerprint``'s texts lives for this embedder (its model and length in the
    name), beside its disk cache; None without one."""
    cache = getattr(embedder, "cache", None)
    if not fingerprint or cache is None:
        return None
    return cache.path.parent / "ahead" / stable_hash(embedder.model, embedder.max_tokens, fingerprint)[:40]


def known(embedder, fingerprint: str) -> bool:
    """Whether a run with this ``fingerprint`` (a name of its texts, e.g. `program_fingerprint`) found
    every text in this embedder's disk cache before: the next one need not list them again."""
    marker = _marker(embedder, fingerprint)
    return marker is not None and marker.exists()


def mark_known(embedder, fingerprint: str) -> None:
    """Record that every text of ``fingerprint`` is in the embedder's disk cache (an empty file
    beside the cache: deleting the cache directory deletes the marks too)."""
    marker = _marker(embedder, fingerprint)
    if marker is not None:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()


def default_workers() -> int:
    """One worker per core, or one on a GPU."""
    try:
        import torch

        if torch.cuda.is_available():
            return 1
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return max(1, os.cpu_count() or 1)


def embed_ahead(embedder, texts: Iterable[str], *, workers: int | None = None, min_texts: int | None = None,
                on_progress: Callable[[AheadProgress], None] | None = None) -> AheadReport:
    """Embed the ``texts`` the embedder's disk cache lacks, before the run needs them.

    Nothing happens (an empty report) for a fast embedder (hash, the static table), an embedder
    without a disk cache, or fewer than ``min_texts`` missing texts. ``on_progress`` gets an
    `AheadProgress` about every 10 s while the workers run (texts are embedded shortest first, so
    its share weighs each text by its length, up to what the model reads, and its ETA counts from
    the workers' start).
    """
    min_texts = MIN_TEXTS if min_texts is None else min_texts
    distinct = list(dict.fromkeys(t for t in texts if t))
    report = AheadReport(requested=len(distinct))
    cache = getattr(embedder, "cache", None)
    if embedder.model in FAST or cache is None or not hasattr(cache, "present"):
        return report
    keys = {t: embedder.key(t) for t in distinct}
    present = cache.present(keys.values())
    todo = [t for t in distinct if keys[t] not in present]
    report.cached = len(distinct) - len(todo)
    if len(todo) < min_texts:
        report.missing = len(todo)
        return report
    todo.sort(key=len)
    n = max(1, min(workers or default_workers(), len(todo) // min_texts or 1))
    rows_before = len(cache)
    started = time.perf_counter()
    jobs = [Prefetch.start({"model": embedder.model, "texts": todo[i::n]}, cache_dir=cache.path.parent, threads=1,
                           nice=0) for i in range(n)]
    jobs = [j for j in jobs if j is not None]
    report.workers = len(jobs)
    log.info("embedding %d texts ahead in %d process(es)", len(todo), len(jobs))
    todo_keys = [keys[t] for t in todo]
    # Progress without asking the cache about every key (that poll cost a third of a core, taken from
    # the workers): the rows the workers added, and, since they work through the texts shortest
    # first, the share of the work those many shortest texts weigh.
    read_chars = int(CHARS_PER_TOKEN * embedder.max_tokens)
    done_weight = np.cumsum([min(len(t), read_chars) + TEXT_OVERHEAD_CHARS for t in todo], dtype=float)
    next_tick = PROGRESS_EVERY_S
    while any(j.process.poll() is None for j in jobs):
        time.sleep(0.5)
        if on_progress is not None and time.perf_counter() - started >= next_tick:
            next_tick += PROGRESS_EVERY_S
            done = min(max(len(cache) - rows_before, 0), len(todo))
            share = float(done_weight[done - 1] / done_weight[-1]) if done else 0.0
            on_progress(AheadProgress(done, len(todo), share, time.perf_counter() - started))
    report.failed_workers = sum(1 for j in jobs if j.wait() != 0)
    report.seconds = time.perf_counter() - started
    report.missing = len(todo) - len(cache.present(todo_keys))
    report.computed = len(todo) - report.missing
    if report.missing:
        log.warning("embedding ahead: %d of %d texts not embedded (%d worker(s) failed); the run embeds them",
                    report.missing, len(todo), report.failed_workers)
    return report
