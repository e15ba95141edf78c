"""The module registry's manifest: every built-in module's declaration (`ModuleSpec`) as JSON data
in the cache dir, so that commands that read only declarations (``memarch space``, ``presets``,
``validate``) answer without importing the modules and DSPy, numpy, faiss with them (seconds).

The decorated classes stay the one source: the manifest is written from the live registry after
an import of the modules, and keyed by the (path, size, mtime_ns) of every source file they may
depend on, so any edit makes it stale and the next such command imports the modules and writes it
again. It is data, never executed; a missing, stale or unreadable manifest is rebuilt (logged at
debug level only).

Example::

    declare_builtin_modules()            # from the manifest when current, else by importing
    ArchitectureSpace("experience").to_dict()   # the same answer either way
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Iterable

from memarch.errors import MemarchError
from memarch.pipeline.registry import REGISTRY, ROLES, ModuleSpec

logger = logging.getLogger(__name__)

FORMAT = "memarch.registry-manifest/1"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
BUILTIN_PACKAGE = "memarch.modules"  # this package
# What a declaration can depend on: the modules and the layers below them, which are all they may
# import (the import-linter contract in pyproject.toml); an edit elsewhere (optimizers, cli) keeps
# the manifest. ``__init__.py`` is the package's own, imported before any of them.
SOURCES = ("modules", "lm", "pipeline", "errors.py", "_version.py", "__init__.py")


def source_key(root: str | os.PathLike = PACKAGE_DIR, parts: Iterable[str] = SOURCES) -> str:
    """A hash of (path, size, mtime_ns) of every ``.py`` file of ``parts`` (folders and files under
    ``root``): an edit, a new file or a removed one changes it."""
    rows = []
    for part in parts:
        top = os.path.join(root, part)
        if not os.path.exists(top):  # a removed file: its row is missing, which changes the key
            continue
        walk = os.walk(top) if os.path.isdir(top) else [(os.path.dirname(top), [], [os.path.basename(top)])]
        for dirpath, dirnames, filenames in walk:
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    st = os.stat(path)
                    rows.append(f"{os.path.relpath(path, root)}\t{st.st_size}\t{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(rows)).encode("utf-8")).hexdigest()


def manifest_path(cache_dir: str | os.PathLike | None = None, root: str | os.PathLike = PACKAGE_DIR) -> Path:
    """The manifest of the package at ``root``: one file per copy (two checkouts keep their own)."""
    from memarch.pipeline.cache import default_cache_dir

    copy = hashlib.sha256(str(Path(root).resolve()).encode("utf-8")).hexdigest()[:16]
    return Path(cache_dir or default_cache_dir()) / "registry" / f"manifest-{copy}.json"


def write_manifest(path: str | os.PathLike, key: str, specs: Iterable[ModuleSpec]) -> None:
    from memarch.pipeline.files import atomic_write_json

    atomic_write_json(path, {"format": FORMAT, "key": key, "modules": [s.declaration() for s in specs]})


def read_manifest(path: str | os.PathLike, key: str) -> list[ModuleSpec] | None:
    """The specs of the manifest at ``path`` if it was written for ``key``; None when it is missing,
    stale or unreadable (then it is rebuilt)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data["format"] != FORMAT or data["key"] != key:
            logger.debug("registry manifest %s is stale; rebuilding it", path)
            return None
        return [ModuleSpec.from_declaration(d) for d in data["modules"]]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        logger.debug("registry manifest %s is unreadable (%s: %s); rebuilding it", path, type(exc).__name__, exc)
        return None


def builtin_specs() -> list[ModuleSpec]:
    """The live specs of the built-in modules, role by role in menu order (importing them first)."""
    REGISTRY.load()
    return [s for role in ROLES for s in REGISTRY.specs(role)
            if s.source.split(":")[0].startswith(BUILTIN_PACKAGE + ".")]


def declare_builtin_modules(cache_dir: str | os.PathLike | None = None) -> bool:
    """Give the registry the built-in modules' declarations: from a current manifest (True), else by
    importing the modules and writing the manifest for the next command (False). Nothing changes
    when the modules are imported already."""
    if REGISTRY.loaded or REGISTRY.declared:
        return REGISTRY.declared
    path = manifest_path(cache_dir)
    try:
        key = source_key()
    except OSError as exc:  # a file removed while listing: import instead
        logger.debug("cannot list the package's files (%s); importing the modules", exc)
        REGISTRY.load()
        return False
    specs = read_manifest(path, key)
    if specs is not None:
        REGISTRY.declare(specs)
        return True
    REGISTRY.load()
    try:
        if source_key() == key:  # not edited while the modules were imported
            write_manifest(path, key, builtin_specs())
    except (OSError, MemarchError) as exc:  # a read-only or odd cache dir: the next run imports again
        logger.debug("cannot write the registry manifest %s (%s)", path, exc)
    return False
