"""Issue 20: `memarch space`, `presets` and `validate` need only the modules' declarations; with a
current registry manifest they answer without importing DSPy, and exactly as the live registry."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memarch.modules.manifest import manifest_path, read_manifest, source_key

# Runs memarch commands in one fresh interpreter; prints each one's exit code, stdout and stderr,
# then which heavy libraries were imported.
RUN = """
import contextlib, io, json, sys
from memarch.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        rc = main(argv)
    out.append([rc, o.getvalue(), e.getvalue()])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"dspy", "numpy", "faiss", "networkx", "optuna", "torch"})
print(json.dumps({"outputs": out, "heavy": heavy}))
"""


def run(cache_dir, commands, code=RUN) -> dict:
    env = {**os.environ, "MEMARCH_CACHE_DIR": str(cache_dir)}
    p = subprocess.run([sys.executable, "-c", code, json.dumps(commands)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("archs")
    arch = {"schema_version": "1", "encode": ["insight", "tip"], "store": "vector", "retrieve": "hyde",
            "manage": "lightweight", "params": {"retrieve.top_k": 8}}
    bad = {**arch, "retrieve": "graph", "params": {"retrieve.top_k": 999}}
    program = {"format": "memarch.program/1", "architecture": arch}
    out = {}
    for name, data in (("arch", arch), ("bad", bad), ("program", program)):
        out[name] = str(d / f"{name}.json")
        (d / f"{name}.json").write_text(json.dumps(data))
    return out


@pytest.fixture(scope="module")
def commands(files):
    return [["space", "--json"], ["space"], ["space", "--family", "conversation"], ["space", "--markdown"],
            ["presets"], ["presets", "--json", "--family", "experience"],
            ["validate", files["arch"]], ["validate", files["arch"], "--no-lm"], ["validate", files["bad"]],
            ["validate", files["program"]]]


@pytest.fixture(scope="module")
def cold(tmp_path_factory, commands):
    """The first run: it imports the modules (the live registry) and writes the manifest."""
    cache = tmp_path_factory.mktemp("cache")
    result = run(cache, commands)
    assert "dspy" in result["heavy"]  # these outputs are the live registry's
    return cache, result["outputs"]


def test_a_warm_manifest_answers_without_dspy_and_as_the_live_registry(cold, commands):
    cache, live = cold
    assert read_manifest(manifest_path(cache), source_key()) is not None
    warm = run(cache, commands)
    assert warm["heavy"] == []
    assert warm["outputs"] == live
    assert [rc for rc, _, _ in live] == [0] * 7 + [2] * 3  # the error paths are compared too
    assert json.loads(live[0][1])["total"] == 3720


@pytest.mark.parametrize("damage", ["corrupt", "stale"])
def test_a_corrupt_or_stale_manifest_is_rebuilt(tmp_path, cold, commands, damage):
    live = cold[1]
    path = manifest_path(tmp_path)
    path.parent.mkdir(parents=True)
    if damage == "corrupt":
        path.write_text('{"format": "memarch.registry-manifest/1", "key": ')
    else:  # written for other sources: a description that no module has now must not be shown
        data = json.loads(manifest_path(cold[0]).read_text())
        data["key"] = "0" * 64
        for m in data["modules"]:
            m["description"] = "STALE"
        path.write_text(json.dumps(data))
    first = run(tmp_path, commands[:1])
    assert "dspy" in first["heavy"] and first["outputs"] == live[:1]
    assert read_manifest(path, source_key()) is not None  # rewritten, valid
    again = run(tmp_path, commands)
    assert again["heavy"] == [] and again["outputs"] == live


LAZY = """
import json, sys
from memarch.modules.manifest import declare_builtin_modules
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.space import ArchitectureSpace
assert declare_builtin_modules() and "dspy" not in sys.modules
before = ArchitectureSpace("experience").to_dict()
declared = REGISTRY.get("store", "vector")
cls = declared.cls  # imports the module file, whose decorator registers the live spec
live = REGISTRY.get("store", "vector")
ok = [cls.__name__ == "VectorStore", live is cls.spec, live == declared, "dspy" in sys.modules,
      ArchitectureSpace("experience").to_dict() == before]
print(json.dumps({"outputs": ok, "heavy": []}))
"""


def test_a_declared_spec_imports_its_class_when_asked(cold):
    assert run(cold[0], [], code=LAZY)["outputs"] == [True] * 5
