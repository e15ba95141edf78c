"""The registry's manifest (issue 20): the built-in modules' declarations as JSON data, equal to the
live registry, stale after any edit of a file they may depend on, ignored when unreadable."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil

import pytest

from memarch.modules.manifest import (FORMAT, PACKAGE_DIR, builtin_specs, read_manifest, source_key,
                                       write_manifest)
from memarch.pipeline.presets import preset_architectures
from memarch.pipeline.registry import FAMILIES, ROLES, ModuleSpec, Registry
from memarch.pipeline.space import ArchitectureSpace


def test_the_manifest_equals_the_live_registry(tmp_path):
    live = builtin_specs()
    assert {s.role for s in live} == set(ROLES) and len(live) > 20
    path = tmp_path / "manifest.json"
    write_manifest(path, "k", live)
    read = read_manifest(path, "k")
    assert read == live  # every declared field (ModuleSpec's equality leaves out only the class)
    assert all(r.cls is s.cls for r, s in zip(read, live))  # a declared spec imports its own class
    # Every field of ModuleSpec is written, so a field added later cannot be dropped unnoticed.
    fields = {f.name for f in dataclasses.fields(ModuleSpec) if f.compare}
    assert fields == set(live[0].declaration())

    declared = Registry()
    declared.declare(read)
    for family in FAMILIES:
        for lm in (True, False):
            a = ArchitectureSpace(family, lm_available=lm, registry=declared)
            b = ArchitectureSpace(family, lm_available=lm)
            assert a.to_dict() == b.to_dict()
            for arch in preset_architectures(family).values():
                assert a.violations(arch) == b.violations(arch)


def test_a_module_registered_after_the_declarations_takes_its_place_after_them():
    declared = Registry()
    declared.declare(builtin_specs())

    @declared.register("retriever", "late_one", description="registered after the declarations")
    class LateOne:
        pass

    assert declared.names("retriever")[-1] == "late_one"
    assert declared.get("retriever", "late_one").cls is LateOne


def _tree(root):
    for rel in ("modules/stores/vector.py", "pipeline/knobs.py", "optimizers/compile.py", "errors.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    return root


def test_an_edit_a_new_or_a_removed_file_makes_the_manifest_stale(tmp_path):
    root = _tree(tmp_path / "memarch")
    key = source_key(root)
    assert source_key(root) == key
    vector = root / "modules/stores/vector.py"
    vector.write_text("# modules/stores/vector.py, edited\n")
    assert source_key(root) != key
    key = source_key(root)
    st = vector.stat()
    os.utime(vector, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # same size, touched
    assert source_key(root) != key
    key = source_key(root)
    (root / "modules/stores/new_store.py").write_text("# a new module\n")
    assert source_key(root) != key
    key = source_key(root)
    (root / "pipeline/knobs.py").unlink()
    assert source_key(root) != key
    key = source_key(root)
    # A layer the modules may not import (import-linter) does not make the manifest stale.
    (root / "optimizers/compile.py").write_text("# edited by someone else\n")
    (root / "modules/__pycache__").mkdir()
    (root / "modules/__pycache__/x.py").write_text("")
    assert source_key(root) == key

    path = tmp_path / "manifest.json"
    write_manifest(path, key, builtin_specs())
    assert read_manifest(path, key) is not None
    vector.write_text("# edited again\n")
    assert read_manifest(path, source_key(root)) is None


def test_the_key_covers_the_real_module_files(tmp_path):
    copy = tmp_path / "memarch"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    key = source_key(copy)
    target = copy / "modules" / "retrievers" / "hybrid.py"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert source_key(copy) != key


@pytest.mark.parametrize("content", [
    b"", b"{not json", b"[]", b"\xff\xfe\x00", b'"a string"',
    json.dumps({"format": FORMAT}).encode(),
    json.dumps({"format": FORMAT, "key": "k"}).encode(),
    json.dumps({"format": FORMAT, "key": "k", "modules": [{"role": "store"}]}).encode(),
    json.dumps({"format": FORMAT, "key": "k", "modules": [None]}).encode(),
    json.dumps({"format": "memarch.registry-manifest/0", "key": "k", "modules": []}).encode(),
])
def test_an_unreadable_or_foreign_manifest_is_ignored(tmp_path, content):
    path = tmp_path / "manifest.json"
    path.write_bytes(content)
    assert read_manifest(path, "k") is None
    assert read_manifest(tmp_path / "missing.json", "k") is None


def test_a_manifest_with_a_bad_knob_is_ignored(tmp_path):
    path = tmp_path / "manifest.json"
    write_manifest(path, "k", builtin_specs())
    data = json.loads(path.read_text())
    knobbed = next(m for m in data["modules"] if m["knobs"])
    knobbed["knobs"][0]["low"], knobbed["knobs"][0]["high"] = 5, 1  # Knob refuses a reversed range
    path.write_text(json.dumps(data))
    assert read_manifest(path, "k") is None
