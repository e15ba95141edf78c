"""Embeddings ahead of need: texts a run will embed, embedded by a background process on the idle
core into the shared embedding cache (`memarch.pipeline.cache`, SQLite in WAL mode), in
length-sorted groups, so that the run finds them there instead of embedding them one write at a
time. An embedding is a pure function of the text (same model, same pooling): the run reads what
it would have computed, up to the float rounding of another batch (tests/pipeline/test_prefetch.py).

Example::

    prefetch = Prefetch.start({"model": "all-MiniLM-L6-v2", "texts": texts})   # returns at once
    ...                                         # the run; its embedder finds the vectors
    prefetch.stop()                             # what is left is left (a cache warmer)

A job names its texts, or (``module``) a module whose ``__main__`` works them out first — in the
background process too, so the run does not wait for them (`memarch.optimizers.evaluators.prefetch_job`).
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

BATCH = 256  # texts per embed call: one committed cache transaction, and the point where a prefetch left alone stops
GROUP = 8 * BATCH  # texts sorted by length together: the order given (soonest needed first) holds across groups
# Embedders fast enough that computing in the run costs less than the process that would prefetch.
FAST = ("hash", "all-MiniLM-L6-v2-static")
PARENT = "MEMARCH_PREFETCH_PARENT"  # the run's pid: the process stops when the run is gone (even by kill -9)


@dataclass
class Prefetch:
    """A running background embedding process (None-safe: `start` returns None when there is
    nothing to do)."""

    process: subprocess.Popen
    file: Path

    @classmethod
    def start(cls, job: dict, *, module: str = __name__, cache_dir: str | os.PathLike | None = None,
              threads: int = 1, nice: int = 5) -> "Prefetch | None":
        """Run ``job`` (``{"model", "texts"}``, or what ``module`` reads) in a new low-priority
        process with ``threads`` torch threads (``nice``: its niceness increment; a prefetch beside
        a run yields to it, `embed_ahead`'s workers are the run); None for a fast embedder or no text."""
        if job["model"] in FAST or ("texts" in job and not job["texts"]):
            return None
        fd, name = tempfile.mkstemp(prefix="memarch-prefetch-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(job, fh)
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
               "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", PARENT: str(os.getpid())}
        if cache_dir is not None:
            env["MEMARCH_CACHE_DIR"] = str(cache_dir)
        process = subprocess.Popen([sys.executable, "-m", module, name], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, preexec_fn=(lambda: os.nice(nice)) if nice else None)
        logger.info("prefetching embeddings (%s) in process %d", job["model"], process.pid)
        return cls(process, Path(name))

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to finish; its exit code (a failure is logged, never raised: the
        run embeds what is missing itself)."""
        try:
            code = self.process.wait(timeout=timeout)
        finally:
            self.file.unlink(missing_ok=True)
        if code != 0:
            err = (self.process.stderr.read() if self.process.stderr else "")[-500:]
            logger.warning("embedding prefetch exited %s: %s", code, err.strip().splitlines()[-1:] or "")
        return code

    def stop(self) -> None:
        """End the process if it still runs (what it embedded stays in the cache)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()
        self.file.unlink(missing_ok=True)


def embed_texts(model: str, texts: list[str]) -> int:
    """``texts`` in their order, group by group, each group in length-sorted batches (the cache
    skips those already there); the number embedded. Started by `Prefetch`, it stops between two
    batches once the run that started it is gone (each batch is one committed cache transaction)."""
    from memarch.pipeline.embed import Embedder

    embedder = Embedder(model)  # its forward passes are FORWARD_BATCH texts (benchmarks/bench_embed_batch.py)
    texts = list(dict.fromkeys(t for t in texts if t))
    for g in range(0, len(texts), GROUP):
        group = sorted(texts[g:g + GROUP], key=len)
        for i in range(0, len(group), BATCH):
            if orphaned():
                logger.info("prefetch: the run is gone, stopping")
                return embedder.computed
            embedder.embed(group[i:i + BATCH])
    return embedder.computed


def orphaned() -> bool:
    """True when this process was started by `Prefetch` and that run has ended (its parent changed)."""
    parent = os.environ.get(PARENT)
    return parent is not None and os.getppid() != int(parent)


def read_job(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


if __name__ == "__main__":  # torch (if the model runs on it) reads its thread count from OMP_NUM_THREADS
    job = read_job(sys.argv[1])
    embed_texts(job["model"], job["texts"])
