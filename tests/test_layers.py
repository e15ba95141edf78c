"""The layers of docs/architecture.md, as import-linter contracts in pyproject.toml: every import
points down, the concerns that must not know each other do not, and no package's children import
each other in a circle. There is no ignore list."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is a dev dependency (pip install -e '.[dev]')"
    return subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_every_contract_is_kept():
    run = _lint_imports()
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_the_contracts_ignore_nothing_and_see_type_only_imports():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert config["exclude_type_checking_imports"] is False
    contracts = config["contracts"]
    assert {c["type"] for c in contracts} >= {"layers", "acyclic_siblings"}
    assert not any("ignore_imports" in c or "unmatched_ignore_imports_alerting" in c for c in contracts)
    top = next(c for c in contracts if c.get("containers") == ["memarch"])
    assert top["layers"][:3] == ["cli", "app | optimizers", "benchmarks"]  # app and optimizers: siblings
    forbidden = next(c for c in contracts if c["type"] == "forbidden")
    assert forbidden["source_modules"] == ["memarch.app"] and set(forbidden["forbidden_modules"]) == {"optuna", "mlflow"}


def _lint_a_copy_with(tmp_path, path: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the package whose ``path`` gained ``line``."""
    shutil.copytree(ROOT / "memarch", tmp_path / "memarch", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bad = tmp_path / "memarch" / path
    bad.write_text(bad.read_text() + f"\n{line}  # noqa: E402,F401\n")
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    return subprocess.run([exe, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("path, line, broken", [
    ("pipeline/items.py", "from memarch.optimizers.search import history",  # one arrow back up
     "memarch.pipeline is not allowed to import memarch.optimizers"),
    ("app/records.py", "from memarch.optimizers.search import history",  # siblings do not know each other
     "memarch.app is not allowed to import memarch.optimizers"),
    ("app/records.py", "import optuna",  # the app serves a program; the search's tools stay out
     "memarch.app is not allowed to import optuna"),
    ("optimizers/pruners/names.py", "from memarch.optimizers.search import history",  # inside optimizers
     "memarch.optimizers.pruners is not allowed to import memarch.optimizers.search"),
    ("benchmarks/evaluation/stream.py", "from memarch.benchmarks import locomo",  # a named benchmark
     "memarch.benchmarks.evaluation is not allowed to import memarch.benchmarks.locomo"),
])
def test_a_forbidden_import_breaks_a_contract(tmp_path, path, line, broken):
    """The contracts bite: a copy of the package with one forbidden import fails them."""
    run = _lint_a_copy_with(tmp_path, path, line)
    assert run.returncode != 0 and broken in " ".join(run.stdout.split()), run.stdout[-3000:]  # lines wrap


def unused_orderings(contracts: list[dict], graph) -> list[str]:
    """The adjacent layer pairs of ``layers`` contracts that no import of the upper layer uses."""
    def imports(a: str, b: str) -> bool:
        return any(graph.find_matching_direct_imports(import_expression=f"{x} -> {y}")
                   for x in (a, f"{a}.**") for y in (b, f"{b}.**"))

    unused = []
    for contract in (c for c in contracts if c["type"] == "layers"):
        (container,) = contract["containers"]
        layers = [[f"{container}.{name.strip()}" for name in layer.split("|")] for layer in contract["layers"]]
        for upper, lower in zip(layers, layers[1:]):
            if not any(imports(a, b) for a in upper for b in lower):
                unused.append(f"{' | '.join(upper)} > {' | '.join(lower)}")
    return unused


def test_every_ordering_of_the_layers_is_used_by_a_real_import():
    """Each layer of a `layers` contract imports from the next one down: an order no import uses
    would be a claim, where the two are in fact independent (``a | b`` says so)."""
    import grimp

    graph = grimp.build_graph("memarch", exclude_type_checking_imports=False)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert not unused_orderings(config["contracts"], graph)
    # the check bites: app imports nothing from lm directly, so "app > lm" is an unused order
    made_up = {"type": "layers", "containers": ["memarch"], "layers": ["app", "lm"]}
    assert unused_orderings([made_up], graph) == ["memarch.app > memarch.lm"]


def test_no_package_imports_another_packages_private_modules_or_names():
    """A private module (``_name.py``) or name is its package's own: another package imports what the
    owner exports (its ``__init__.py``), never ``owner._helper`` or ``owner.module._function``."""
    import re

    found = []
    for path in (ROOT / "memarch").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        here = ".".join(rel.parts[:-1]) if rel.name != "__init__" else ".".join(rel.parts[:-1])
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = re.match(r"\s*from (memarch[\w.]*) import (.+)", line.split("#")[0])
            if not m:
                continue
            module, names = m.group(1), [x.strip().split(" as ")[0] for x in m.group(2).strip("()").split(",")]
            parts = module.split(".")
            private = next((i for i, p in enumerate(parts) if p.startswith("_") and p not in ("__init__",)), None)
            if private is not None and parts[private] != "_version":
                owner = ".".join(parts[:private])
                if not (here + ".").startswith(owner + "."):
                    found.append(f"{rel}.py:{n}: {module}")
            for name in names:
                if name.startswith("_") and not name.startswith("__") and not (here + ".").startswith(module + "."):
                    found.append(f"{rel}.py:{n}: {module}.{name}")
    assert not found, found
