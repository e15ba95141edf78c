"""Shared fixtures. Caches go to a per-session temp dir so tests never touch ~/.cache."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
_SESSION_CACHE = tempfile.mkdtemp(prefix="memarch-test-cache-")
os.environ["MEMARCH_CACHE_DIR"] = _SESSION_CACHE

ROOT = Path(__file__).resolve().parents[1]
# The shared helpers (lm_helpers, store_helpers, ...) live here; the tests, in folders that follow
# the package's layout (tests/pipeline, tests/modules, ..., tests/optimizers/search), import them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA_DIR = Path(os.environ.get("MEMARCH_TEST_DATA", ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.exists():
        pytest.fail(f"shared data not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture
def hash_resources(tmp_path):
    """Resources with the fast feature-hashing embedder and a private cache dir, no LM."""
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    return Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)


@pytest.fixture(scope="session")
def real_embedder():
    """The bundled all-MiniLM-L6-v2 (loaded once per session)."""
    from memarch.pipeline.embed import Embedder

    return Embedder(cache_dir=_SESSION_CACHE)


@pytest.fixture
def resources(real_embedder, tmp_path):
    from memarch.pipeline.resources import Resources

    return Resources(embedder=real_embedder, cache_dir=tmp_path)


@pytest.fixture(scope="module")
def hash_res(tmp_path_factory):
    """`hash_resources` shared by a module's tests (its caches make later builds cheap)."""
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    cache = tmp_path_factory.mktemp("cache")
    return Resources(embedder=Embedder("hash", cache_dir=cache), cache_dir=cache)


@pytest.fixture
def space():
    """The experience `ArchitectureSpace` (no LM) of the fake AutoMem registry (search_helpers), which
    stays installed for the whole test: the search, sampler, archive and protocol tests run on it."""
    from search_helpers import fake_registry

    from memarch.pipeline.space import ArchitectureSpace

    with fake_registry():
        yield ArchitectureSpace("experience", lm_available=False)


@pytest.fixture(scope="session")
def small_landscape(tmp_path_factory):
    """A landscape of 80 sampled architectures (plus the presets) of the two-conversation generated
    benchmark, built once per session for the replay, sampler and compare tests (read-only)."""
    from memarch.benchmarks import get_benchmark
    from memarch.optimizers.landscapes.build import build, plan_build
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    cache = tmp_path_factory.mktemp("land-cache")
    res = Resources(embedder=Embedder("hash", cache_dir=cache), cache_dir=cache)
    bench = get_benchmark("generated", conversations=2, sessions=3)
    plan = plan_build(bench, resources=res, sample=80, seed=0)
    return build(plan, tmp_path_factory.mktemp("land") / "small.npz", progress=False)


@pytest.fixture(scope="module")
def small_generated():
    """A two-conversation generated benchmark: enough for landscapes and replays in seconds."""
    from memarch.benchmarks import get_benchmark

    return get_benchmark("generated", conversations=2, sessions=3)


@pytest.fixture
def block_import(monkeypatch):
    """``block_import("pkg")``: importing ``pkg`` (or a submodule) raises ImportError, as when it is not installed."""
    import builtins

    real_import = builtins.__import__

    def block(package: str) -> None:
        def fake(name, *args, **kwargs):
            if name == package or name.startswith(package + "."):
                raise ImportError(f"No module named '{package}'")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", fake)

    return block
