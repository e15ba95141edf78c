"""`files` store: one Markdown note per key in a directory per namespace, written atomically and
searched with BM25 plus the embeddings every store uses; the memory an agent edits as a skill."""
from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from memarch.modules.stores.lexical import Terms, lexical_index
from memarch.modules.stores._notes import NOTE_SUFFIX, check_directory, parse, render, safe_name
from memarch.modules.stores.base import Store
from memarch.pipeline.files import atomic_write_text
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.knobs import Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

NOTE_KIND = "note"
# The memory scaffold is searched like any other hyperparameter: 0/1 switches of the store.
SCAFFOLD_KNOBS = (
    Knob("upsert", "int", 0, 1, default=1, description="action vocabulary: 1 upsert by key, 0 append-only"),
    Knob("kv_schema", "int", 0, 1, default=1, description="note schema: 1 `key: value` lines, 0 free text"),
    Knob("search_before_write", "int", 0, 1, default=1,
         description="1: the agent searches memory before each write and skips what is there"),
)


# Opt-in: outside the AutoMem menu; searched where the benchmark's agent takes note actions.
@register("store", "files", rank=6, families="experience", knobs=SCAFFOLD_KNOBS, opt_in=True,
          description="one Markdown note per key, a directory per namespace (BM25 + dense search)")
class FilesStore(Store):
    """Items as Markdown notes on disk (``<root>/<namespace>/<key>.md``), each written atomically,
    plus the key-addressed note actions an agent takes: read, search, upsert, append, delete.

    Example::

        store = FilesStore(Resources(embedder=Embedder("hash")), root="/tmp/notes")
        store.upsert_note("kitchen", "items: fridge, apple", namespace="ep1")
        store.append_note("kitchen", "exit north: corridor", namespace="ep1")
        store.read_note("kitchen", namespace="ep1")      # both lines
        store.search_notes("apple", namespace="ep1")     # [("kitchen", text, score)]

    Args:
        resources: the embedder for dense search.
        root: directory of the notes (default: a temporary directory removed with the store).
        upsert, kv_schema, search_before_write: the memory scaffold the agent's policy follows
            (see `memarch.benchmarks.agents.memory_skill`); the store itself only keeps them.
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        root = config.get("root")
        if root:
            self.root = Path(root)
        else:  # a fresh directory per store (per trial): nothing is left in the repo or the run dir
            self.root = Path(tempfile.mkdtemp(prefix="memarch-files-"))
            weakref.finalize(self, shutil.rmtree, str(self.root), True)
        self.root.mkdir(parents=True, exist_ok=True)
        self._rewriting: set[tuple[str, str]] = set()
        self.scaffold = {k.name: int(config.get(k.name, k.default)) for k in SCAFFOLD_KNOBS}
        found = check_directory(self.root)
        self.leftovers_removed = len(found["leftovers"])  # temp files of a write that was killed
        for path in found["leftovers"]:
            Path(path).unlink(missing_ok=True)

    # -- files ------------------------------------------------------------------------------------
    def directory(self, namespace: str) -> Path:
        return self.root / safe_name(namespace)

    def note_path(self, key: str, namespace: str = "default") -> Path:
        return self.directory(namespace) / (safe_name(key) + NOTE_SUFFIX)

    def add(self, items, vectors: np.ndarray | None = None) -> list[str]:
        items = list(items)
        # A replaced note is overwritten by the atomic rename, never removed first: a kill between
        # a removal and the write would lose the note.
        self._rewriting = {(it.namespace, it.id) for it in items if it.active}
        try:
            return super().add(items, vectors)
        finally:
            self._rewriting = set()

    def update(self, item: MemoryItem) -> None:
        self._rewriting = {(item.namespace, item.id)} if item.active else set()
        try:
            super().update(item)
        finally:
            self._rewriting = set()

    def _index_add(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray | None) -> None:
        for it in items:
            meta = {"id": it.id, "kind": it.kind, "namespace": namespace, "outcome": it.outcome}
            atomic_write_text(self.note_path(it.id, namespace), render(it.id, it.text, meta))

    def _index_remove(self, namespace: str, item_ids: list[str]) -> None:
        for iid in item_ids:
            if (namespace, iid) not in self._rewriting:
                self.note_path(iid, namespace).unlink(missing_ok=True)

    # -- note actions -----------------------------------------------------------------------------
    def read_note(self, key: str, namespace: str = "default") -> str | None:
        """The note's text from its file, or None when there is no note ``key``."""
        path = self.note_path(key, namespace)
        if not path.exists() or self.get(key, namespace) is None:
            return None
        return parse(path.read_text(encoding="utf-8"), str(path))[1]

    def upsert_note(self, key: str, text: str, namespace: str = "default") -> None:
        """Create or replace note ``key``."""
        self.add([MemoryItem(text=text, kind=NOTE_KIND, id=key, key=key, namespace=namespace)])

    def append_note(self, key: str, text: str, namespace: str = "default") -> None:
        """Add ``text`` as new lines at the end of note ``key`` (created when missing)."""
        old = self.read_note(key, namespace)
        self.upsert_note(key, text if not old else f"{old}\n{text}", namespace)

    def delete_note(self, key: str, namespace: str = "default") -> bool:
        """Remove note ``key``; False when there was none."""
        if self.get(key, namespace) is None:
            return False
        self.delete(key, namespace, reason="note deleted", actor="agent")
        return True

    def search_notes(self, query: str, namespace: str = "default", k: int = 3) -> list[tuple[str, str, float]]:
        """Best ``k`` notes for ``query``: a note whose key is the query first (a file name hit),
        then BM25 and dense ranks fused (reciprocal rank, 60). Dense only re-ranks notes sharing a
        word with the query, so a query about nothing stored returns nothing (an empty search)."""
        if not self.count(namespace) or not query.strip():
            return []
        fused: dict[str, float] = {}
        if self.get(query.strip(), namespace) is not None:
            fused[query.strip()] = 1.0
        terms_of = Terms.of(self.resources.texts).terms  # this store's memo of them
        terms = set(terms_of(query))
        index = lexical_index(self, namespace)
        # Every note sharing a term with the query (its key counts), in BM25 order: BM25 alone
        # scores a term found in every note of a small namespace as nothing.
        bm25 = index.bm25.scores(list(terms))
        sharing = [j for j, it in enumerate(index.items) if terms & set(terms_of(f"{it.id} {it.text}"))]
        for rank, j in enumerate(sorted(sharing, key=lambda j: -bm25[j])[: k * 2]):
            fused[index.ids[j]] = fused.get(index.ids[j], 0.0) + 1.0 / (60 + rank)
        if fused:  # dense alone would always answer something: it only re-ranks lexical hits
            vector = self.resources.embedder.embed([query])[0]
            for rank, (it, _) in enumerate(self.search(vector, k * 2, namespace)):
                if it.id in fused:
                    fused[it.id] += 1.0 / (60 + rank)
        best = sorted(fused.items(), key=lambda kv: -kv[1])[:k]
        return [(iid, self.get(iid, namespace).text, score) for iid, score in best]

    def check(self) -> dict[str, list[str]]:
        """Every file under the root sorted into whole notes, torn notes and leftover temp files."""
        return check_directory(self.root)
