"""Where a `Memory`'s embedder keeps vectors: in the memory's own database, one row per (user, text
hash), written in the transaction that writes the user's items and deleted with the user — never
in the shared disk cache (``~/.cache/memarch``), which outlives a user's deletion. Queries are not
kept at all: only the write path stores vectors (`Memory` puts its items' vectors)."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from memarch.pipeline.embed import DEFAULT_MODEL, FORWARD_BATCH, Embedder

MEMO_SIZE = 20_000  # vectors a served memory keeps in RAM (~32 MB of 384-d float32 with their keys)


class MemoryVectors:
    """The embedder's persistent cache over `MemoryDB`'s ``vectors`` table: while `loading` (a
    start, a catch-up with other processes' items), any user's stored vector of a text, so items are
    indexed without embedding them again; otherwise (a query, a text being written) nothing is
    looked up. `set_many` keeps nothing (`Memory` writes its items' vectors with their rows)."""

    def __init__(self, db: Any):
        self.db = db
        self._local = threading.local()

    @contextmanager
    def loading(self) -> Iterator[None]:
        """In this thread, lookups go to the database (items being loaded)."""
        self._local.loading = True
        try:
            yield
        finally:
            self._local.loading = False

    def get_many(self, keys: Any) -> dict[str, bytes]:
        if not getattr(self._local, "loading", False):
            return {}
        return self.db.get_vectors(list(dict.fromkeys(keys)))

    def set_many(self, items: dict[str, bytes]) -> None:
        """Nothing: `Memory` writes its items' vectors with their rows (`Memory._transaction`)."""


def private_embedder(embedder: Embedder | None, db: Any) -> Embedder:
    """An embedder of the same model as ``embedder`` (the default model for None) whose vectors live
    in ``db`` (`MemoryVectors`) and at most `MEMO_SIZE` of them in memory."""
    model = embedder.model if embedder is not None else DEFAULT_MODEL
    dim = embedder.dim if embedder is not None and model == "hash" else 384
    batch = embedder.batch_size if embedder is not None else FORWARD_BATCH
    return Embedder(model, cache=MemoryVectors(db), memo_size=MEMO_SIZE, dim=dim, batch_size=batch)


def item_vectors(embedder: Embedder | None, rows: list[tuple[str, str, dict]]) -> list[tuple[str, str, bytes]]:
    """(user, key, vector bytes) of the texts of the active items among ``rows`` ((user, id, item
    dict), as a write commits them): what a restart or another process needs to index them without
    the model (the embedder's memo has them: just embedded)."""
    active = [(ns, data["text"]) for ns, _, data in rows if data.get("status") == "active" and data.get("text")]
    if not active or embedder is None:
        return []
    vectors = embedder.embed([text for _, text in active])
    return [(ns, embedder.key(text), vec.astype("float32").tobytes()) for (ns, text), vec in zip(active, vectors)]
