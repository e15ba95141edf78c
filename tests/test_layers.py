"""The layers of docs/architecture.md, as import-linter contracts in pyproject.toml: every import
points down, the concerns that must not know each other do not, and no package's children import
each other in a circle. There is no ignore list."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

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
    assert top["layers"][:4] == ["cli", "app", "optimizers", "benchmarks"]


def test_a_back_import_would_break_a_contract(tmp_path):
    """The contracts bite: a copy of the package with one arrow back up fails them."""
    shutil.copytree(ROOT / "memarch", tmp_path / "memarch", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bad = tmp_path / "memarch" / "pipeline" / "items.py"
    bad.write_text(bad.read_text() + "\nfrom memarch.optimizers.search import history  # noqa: E402,F401\n")
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    run = subprocess.run([exe, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0 and "memarch.pipeline is not allowed to import memarch.optimizers" in run.stdout, \
        run.stdout[-3000:]
