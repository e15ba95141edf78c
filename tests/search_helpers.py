"""Test doubles for the search tests (no tests here): a fake module registry with the AutoMem menu
and a deterministic synthetic objective with per-module failure attribution; worker processes that
share one study, and `wait_until` with the conditions the worker tests poll for (instead of fixed
sleeps). Worker subprocesses import this file too."""
from __future__ import annotations

import contextlib
import hashlib
import os
import select
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
# two-worker test): each runs `Search` on the synthetic metric in its own interpreter, and prints
# "opened" once it has opened the study. Its `gates` hold it until the test writes a line to its
# stdin (`release`): "open", once the space is built, before it opens the storage; "run", after
# "opened", before its first trial.
# `python -c` puts only the current directory on sys.path, so the script adds tests/ itself.
WORKER = r"""
import os, sys, optuna
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
gates = os.environ.get("SEARCH_WORKER_GATES", "").split(",")
with fake_registry():
    ss = ParamSpace(ArchitectureSpace("experience", lm_available=False))
    if "open" in gates:
        sys.stdin.readline()
    storage = make_storage(storage_url, heartbeat_interval={heartbeat_interval}, grace_period={grace_period})
    study = open_study("shared", storage, make_sampler(strategy, ss, seed=seed), space=ss.describe(), resume=True,
                       objectives=objectives)
    search = Search(SyntheticMetric(n_queries=20), ss, budget=budget, objectives=objectives)
    print("opened", flush=True)
    if "run" in gates:
        sys.stdin.readline()
    search.run(study)
"""
HEARTBEAT_INTERVAL, GRACE_PERIOD = 1, 2  # the workers' heartbeat: a killed worker's trial is stale after 2 s


def start_worker(url: str, strategy: str, seed: int, budget: int, delay: float,
                 objectives: str = "quality", gates: tuple[str, ...] = ()) -> subprocess.Popen:
    env = dict(os.environ, SEARCH_DOUBLE_DELAY=str(delay), SEARCH_WORKER_GATES=",".join(gates))
    script = WORKER.format(here=str(Path(__file__).resolve().parent), heartbeat_interval=HEARTBEAT_INTERVAL,
                           grace_period=GRACE_PERIOD)
    return subprocess.Popen([sys.executable, "-c", script, url, strategy, str(seed), str(budget), objectives],
                            env=env, stdin=subprocess.PIPE if gates else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def release(worker: subprocess.Popen) -> None:
    """Let a worker past the gate it waits at."""
    try:
        worker.stdin.write("go\n")
        worker.stdin.flush()  # not closed: `communicate` (wait_workers) closes it
    except BrokenPipeError:  # it died already: `wait_workers` reports its stderr
        pass


def wait_opened(worker: subprocess.Popen, timeout: float = 90) -> None:
    """Wait until a worker says it has opened the study."""
    def said_opened() -> bool:
        assert_alive(worker, "it opened the study")
        readable, _, _ = select.select([worker.stdout], [], [], 0)
        return bool(readable) and worker.stdout.readline() == "opened\n"
    wait_until(said_opened, timeout=timeout, interval=0.05, what="the worker to open the study")


def start_two_workers(url: str, strategy: str, budget: int, delay: float = 0.05) -> list[subprocess.Popen]:
    """Two workers (seeds 0 and 1) that run one study together, in a fixed order: the second opens the
    study once the first has (created the schema and the study, recorded its space and objectives);
    once both are ready, the first starts, and the second starts the moment the first has completed
    one trial. (Both starting at the same instant draw the same architectures at the same moment: the
    archive test counts those repeats.)"""
    first = start_worker(url, strategy, 0, budget, delay=delay, gates=("run",))
    second = start_worker(url, strategy, 1, budget, delay=delay, gates=("open", "run"))

    def first_trial_done() -> bool:
        assert_alive(first, "it completed a trial")
        return completed_trials(url) >= 1
    try:
        wait_opened(first)
        release(second)
        wait_opened(second)
        release(first)
        wait_until(first_trial_done, timeout=90, interval=0.05, what="the first worker's first complete trial")
    except BaseException:
        for p in (first, second):
            p.kill()
            p.wait()
        raise
    release(second)
    return [first, second]


def load_shared_study(url: str) -> optuna.Study:
    from memarch.optimizers.search.study import make_storage

    return optuna.load_study(study_name="shared", storage=make_storage(url))


def wait_workers(procs, timeout=120):
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err[-2000:]


def wait_until(predicate, *, timeout: float, interval: float = 0.1, what: str = "the condition"):
    """Poll ``predicate()`` every ``interval`` s until it returns something truthy, and return that;
    fail with ``what`` after ``timeout`` s. An exception from the predicate propagates at once (a
    predicate asserts that the worker it waits on is still alive)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def assert_alive(worker: subprocess.Popen, doing: str) -> None:
    """Fail at once, with the worker's stderr, when it exited before ``doing``."""
    if worker.poll() is not None:
        raise AssertionError(f"the worker exited ({worker.returncode}) before {doing}: "
                             f"{worker.stderr.read()[-2000:]}")


def study_exists(url: str, name: str = "shared") -> bool:
    """Whether the storage at ``url`` holds the study ``name``, read without creating anything: an
    `RDBStorage` (`load_shared_study`) creates the schema, racing the worker that is creating it."""
    import sqlalchemy

    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        if not path.exists():
            return False
        engine = sqlalchemy.create_engine(f"sqlite:///file:{path}?mode=ro&uri=true", connect_args={"timeout": 60})
    else:
        engine = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg2://", 1))
    try:
        with engine.connect() as conn:
            if not sqlalchemy.inspect(conn).has_table("studies"):
                return False
            row = conn.execute(sqlalchemy.text("SELECT 1 FROM studies WHERE study_name = :name"), {"name": name})
            return row.first() is not None
    finally:
        engine.dispose()


def completed_trials(url: str) -> int:
    """COMPLETE trials of the shared study (0 before it exists)."""
    from optuna.trial import TrialState

    if not study_exists(url):
        return 0
    return len(load_shared_study(url).get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))


def running_trials_stale(url: str) -> bool:
    """Every RUNNING trial of the shared study is one the next worker's first `fail_stale` fails: its
    heartbeat is older than the grace period (Optuna's own check, the one `fail_stale_trials` runs),
    or it has no heartbeat and started over three grace periods ago (memarch's `_fail_heartbeatless`)."""
    import datetime

    from optuna.trial import TrialState

    from memarch.optimizers.search import optuna_internals as internals
    from memarch.optimizers.search.study import make_storage

    study = optuna.load_study(study_name="shared", storage=make_storage(
        url, heartbeat_interval=HEARTBEAT_INTERVAL, grace_period=GRACE_PERIOD))
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    if not running:
        return True
    backend = internals.rdb_backend(study)
    stale = set(backend._get_stale_trial_ids(study._study_id))
    beating = internals.heartbeat_trial_ids(backend, [internals.trial_id(t) for t in running])
    now = datetime.datetime.now()
    return all(internals.trial_id(t) in stale
               or (internals.trial_id(t) not in beating
                   and (now - t.datetime_start).total_seconds() > 3 * GRACE_PERIOD)
               for t in running)
