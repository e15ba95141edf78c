"""Test doubles for the search tests (no tests here): a fake module registry with the AutoMem menu
and a deterministic synthetic objective with per-module failure attribution. Worker subprocesses
import this file too."""
from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna

from memarch.modules.encoders.base import Encoder
from memarch.modules.managers.base import Manager
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.registry import REGISTRY, ensure_modules_loaded
from memarch.pipeline.trial import QueryOutcome, TrialResult

ENCODERS = {"tip": 0.35, "insight": 0.2, "trajectory": 0.45, "workflow": 0.5, "shortcut": 0.15}
STORES = {"json": 0.7, "vector": 0.8, "hybrid": 0.9, "graph": 0.85, "llm_graph": 0.95}
RETRIEVERS = {"hybrid": 0.7, "contrastive": 0.8, "cbr_rerank": 0.75, "graph": 0.6, "hyde": 0.65, "mmr": 0.72}
MANAGERS = {"lightweight": 0.85, "json_full": 0.9, "tool_manager": 0.8, "graph_consolidate": 0.95}
SPLIT_SEED = {"search": 1, "validation": 2, "test": 3}


def _register_fakes() -> None:
    for i, e in enumerate(ENCODERS):
        REGISTRY.register("encoder", e, families="experience", rank=i)(type(f"Fake_{e}", (Encoder,), {}))
    for i, s in enumerate(STORES):
        REGISTRY.register("store", s, needs_lm=s == "llm_graph", rank=i,
                          provides=("graph",) if "graph" in s else ())(type(f"FakeStore_{s}", (Store,), {}))
    for i, r in enumerate(RETRIEVERS):
        REGISTRY.register("retriever", r, needs_lm=r == "hyde", rank=i,
                          requires_store=("graph",) if r == "graph" else ())(type(f"FakeRetr_{r}", (Retriever,), {}))
    for i, m in enumerate(MANAGERS):
        gc = m == "graph_consolidate"
        REGISTRY.register("manager", m, rank=i, requires_store=("graph",) if gc else (),
                          requires_retriever=("graph",) if gc else ())(type(f"FakeMgr_{m}", (Manager,), {}))


@contextlib.contextmanager
def fake_registry():
    """The AutoMem experience menu (3720 tuples, 2573 valid) made of do-nothing module classes."""
    ensure_modules_loaded()
    with REGISTRY.temporarily():
        REGISTRY._specs = {}
        _register_fakes()
        yield REGISTRY


def _u(*parts) -> float:
    h = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


def qualities(arch: Architecture) -> dict[str, float]:
    miss = 1.0
    for e in arch.encode:
        miss *= 1 - ENCODERS[e]
    encode = (1 - miss) - 0.05 * max(0, len(arch.encode) - 2)
    retrieve = RETRIEVERS[arch.retrieve] + (0.3 if arch.retrieve == "graph" and "graph" in arch.store else 0)
    return {"encode": encode, "store": STORES[arch.store], "manage": MANAGERS[arch.manage],
            "retrieve": min(retrieve, 0.98)}


class SyntheticMetric:
    """``metric(architecture, split) -> TrialResult``: query i succeeds when every module's quality
    beats its hashed threshold; a failure is attributed to the first module (pipeline order) that
    lost it. Deterministic; ``calls`` counts evaluations; ``delay`` slows it for the kill test."""

    def __init__(self, n_queries: int = 120, delay: float | None = None):
        self.n = n_queries
        self.delay = float(os.environ.get("SEARCH_DOUBLE_DELAY", 0)) if delay is None else delay
        self.calls: list[str] = []

    def __call__(self, arch: Architecture | None, data="search") -> TrialResult:
        self.calls.append(arch.key() if arch else "none")
        if self.delay:
            time.sleep(self.delay)
        seed = SPLIT_SEED.get(data, 9)
        outcomes = []
        q = qualities(arch) if arch else None
        for i in range(self.n):
            qid = f"{data}-{i}"
            lost = "encode" if q is None else next(
                (m for m in ("encode", "store", "manage", "retrieve") if q[m] < _u(seed, i, m)), None)
            ok = lost is None
            outcomes.append(QueryOutcome(qid, 1.0 if ok else 0.0, ok, category=str(i % 3), attribution=lost,
                                         evidence={"gold": [f"e{i}"]}))
        attr: dict[str, int] = {}
        for o in outcomes:
            if o.attribution:
                attr[o.attribution] = attr.get(o.attribution, 0) + 1
        obj = sum(o.score for o in outcomes) / self.n
        tokens = 100.0 * len(arch.encode) if arch else 0.0
        return TrialResult(arch, "synthetic", str(data), obj, scores={"accuracy": obj},
                           per_category={c: sum(o.score for o in outcomes if o.category == c) / (self.n / 3)
                                         for c in "012"},
                           cost={"tokens": tokens, **synthetic_costs(arch)}, outcomes=outcomes, attribution=attr)


# Costs that trade against quality: the better encoders, stores and managers keep more memory.
ENCODER_TOKENS = {"tip": 300, "insight": 200, "trajectory": 900, "workflow": 600, "shortcut": 100}
STORE_MS = {"json": 1.0, "vector": 3.0, "hybrid": 6.0, "graph": 8.0, "llm_graph": 20.0}
MANAGER_KEEP = {"lightweight": 0.6, "json_full": 0.8, "tool_manager": 0.5, "graph_consolidate": 1.0}


def synthetic_costs(arch: Architecture | None) -> dict[str, float]:
    """Deterministic memory_words, read_p95_ms and write_s of an architecture (0 without memory)."""
    if arch is None:
        return {"memory_words": 0.0, "read_p95_ms": 0.0, "write_s": 0.0, "lm_tokens": 0.0}
    tokens = sum(ENCODER_TOKENS[e] for e in arch.encode) * MANAGER_KEEP[arch.manage]
    return {"memory_words": round(tokens, 1), "read_p95_ms": STORE_MS[arch.store] + 0.5 * RETRIEVERS[arch.retrieve],
            "write_s": 0.01 * len(arch.encode), "lm_tokens": 0.0}


# Worker processes sharing one study (tests/optimizers/search/test_search_workers.py, the archive's
# two-worker test): each runs `Search` on the synthetic metric in its own interpreter.
WORKER = r"""
import sys, optuna
sys.path.insert(0, {here!r})
optuna.logging.set_verbosity(optuna.logging.WARNING)
from search_helpers import SyntheticMetric, fake_registry
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.space import ArchitectureSpace
storage_url, strategy, seed, budget = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
objectives = tuple(sys.argv[5].split(","))
with fake_registry():
    ss = ParamSpace(ArchitectureSpace("experience", lm_available=False))
    storage = make_storage(storage_url, heartbeat_interval=1, grace_period=2)
    study = open_study("shared", storage, make_sampler(strategy, ss, seed=seed), space=ss.describe(), resume=True,
                       objectives=objectives)
    Search(SyntheticMetric(n_queries=20), ss, budget=budget, objectives=objectives).run(study)
"""


def start_worker(url: str, strategy: str, seed: int, budget: int, delay: float,
            objectives: str = "quality") -> subprocess.Popen:
    env = dict(os.environ, SEARCH_DOUBLE_DELAY=str(delay))
    return subprocess.Popen([sys.executable, "-c", WORKER.format(here=str(Path(__file__).resolve().parent)), url, strategy, str(seed), str(budget),
                             objectives], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def load_shared_study(url: str) -> optuna.Study:
    from memarch.optimizers.search.study import make_storage

    return optuna.load_study(study_name="shared", storage=make_storage(url))


def wait_workers(procs, timeout=120):
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err[-2000:]
