"""`SessionIndex`: BM25 over whole sessions (one document per session: its items' terms in write
order), kept per store namespace and brought up to date at each read by re-indexing only the sessions
whose items changed — the questions of every read point share it, and a write of one session costs
that session's document, not a rebuild of all of them. Scores equal a fresh `BM25Index` over the
same documents (BM25Index computes its weights at query time from the live documents)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from memarch.modules.stores.base import Store
from memarch.modules.stores.lexical import BM25Index, Terms
from memarch.pipeline.text_caches import TextCaches


class SessionIndex:
    """Per namespace: session -> (slot, the texts its document was made from).

    Example::

        index = session_index(store, "conv-26")
        index.scores(groups, items, store, ["caroline", "work"])   # one BM25 per session of groups
    """

    def __init__(self, namespace: str, stem: bool = False, texts: TextCaches | None = None) -> None:
        self.namespace = namespace
        self.stem = bool(stem)
        self._tokenize = Terms.of(texts).analyzer(self.stem)  # through the store's memos (`session_index`)
        self.bm25 = BM25Index()
        self.slot: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._synced: tuple | None = None  # what the last sync saw: the store version and the groups' sizes

    def scores(self, groups: Mapping[str, Sequence[str]], items: Mapping[str, Any], store: Store,
               terms: Sequence[str]) -> np.ndarray:
        """BM25 of each session of ``groups`` (session -> its item ids), in ``groups``' order, over
        exactly the sessions of ``groups`` (a session left out is no document)."""
        self._sync(groups, items, store)
        per_slot = np.asarray(self.bm25.scores(terms), dtype=np.float64)
        return np.array([per_slot[self.slot[g][0]] for g in groups])

    def _sync(self, groups: Mapping[str, Sequence[str]], items: Mapping[str, Any], store: Store) -> None:
        ns = self.namespace
        seen = (store.version(ns), tuple(sorted((g, len(ids)) for g, ids in groups.items())))
        if seen == self._synced:  # the same store state and eligible sessions: nothing to do
            return
        for gone in [g for g in self.slot if g not in groups]:
            self.bm25.remove(self.slot.pop(gone)[0])
        fresh: list[tuple[str, tuple[str, ...]]] = []
        for g in sorted(groups):  # the order a rebuild gives its slots
            texts = tuple(items[i].text for i in sorted(groups[g], key=lambda i: store.position(i, ns)))
            held = self.slot.get(g)
            if held is not None and held[1] == texts:
                continue
            if held is not None:
                self.bm25.remove(held[0])
            fresh.append((g, texts))
        if fresh:
            slots = self.bm25.add_many([[t for text in texts for t in self._tokenize(text)] for _, texts in fresh])
            for (g, texts), slot in zip(fresh, slots):
                self.slot[g] = (slot, texts)
        if self.bm25.slots > 4 * max(self.bm25.size, 16):  # mostly retired slots: start over
            self.bm25, self.slot = BM25Index(), {}
            self._synced = None
            self._sync(groups, items, store)
            return
        self._synced = seen


def session_index(store: Store, namespace: str, *, stem: bool = False) -> SessionIndex:
    """The namespace's session index (``stem``: over stemmed terms, kept beside the plain one)."""
    per_store = store.caches.part(__name__)  # {namespace or (namespace, "stem"): SessionIndex}
    key = (namespace, "stem") if stem else namespace
    index = per_store.get(key)
    if index is None:
        index = per_store[key] = SessionIndex(namespace, stem, store.resources.texts)
    return index
