"""The sentence packer's memos of texts (`Sentences`): an item's sentences, their terms, their
vectors, its dated lead — kept per owner (`Resources.texts`), since the same candidates are
packed read after read and trial after trial (`memarch.modules.retrievers._packing`)."""
from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from memarch.modules.stores.lexical import Terms
from memarch.pipeline.retrieval import LEAD, SENTENCE_BREAK, ContextLines
from memarch.pipeline.text_caches import TextCaches, TextMemos

# Items whose sentence vectors an owner keeps per embedder, dropped whole past it (~0.3 GB of
# LoCoMo-sized items at 384-d).
ROWS_MAX = 1 << 15


def split_sentences(text: str) -> list[str]:
    """``text``'s sentences (split after . ! ?), stripped, none empty: the packer's units."""
    return list(_sentences(text))


def _sentences(text: str) -> tuple[str, ...]:
    return tuple(s for s in (p.strip() for p in SENTENCE_BREAK.split(text)) if s)


def _lead(text: str) -> str:
    m = LEAD.match(text)
    return m.group(0) if m else ""


class Sentences(TextMemos):
    """What the sentence packer works out of texts, as one owner keeps it.

    Example::

        memo = Sentences.of(resources.texts)
        memo.sentences("Ann moved. She likes it.")    # ("Ann moved.", "She likes it.")
        memo.term_set("She likes it.")                # frozenset({"likes"})
        memo.lead("Ann (2 May 2023): I moved.")       # "Ann (2 May 2023): "
    """

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.lines = ContextLines.of(texts)  # words and headers of the lines
        self.terms = terms = Terms.of(texts).terms
        self.sentences = self.memo(_sentences, 1 << 16, "sentences")
        self.term_set = self.memo(lambda text: frozenset(terms(text)), 1 << 17, "term_set")
        self.body = self.memo(lambda sentence: " ".join(terms(sentence)), 1 << 16, "body")
        self.lead = self.memo(_lead, 1 << 16, "lead")
        # Per embedder: item text -> (its sentences' float64 vectors, their norms).
        self._rows: "weakref.WeakKeyDictionary[Any, dict[str, tuple[np.ndarray, np.ndarray]]]" = \
            weakref.WeakKeyDictionary()

    def sentence_rows(self, items: list[str], embedder: Any) -> tuple[np.ndarray, np.ndarray]:
        """The vectors (float64 rows) of the sentences of ``items`` (texts), item by item, and their
        norms; each item's rows made once per embedder."""
        rows = self._rows.get(embedder)
        if rows is None or len(rows) > ROWS_MAX:
            rows = self._rows[embedder] = {}
        missing = [t for t in dict.fromkeys(items) if t not in rows]
        if missing:  # one embedder call for all their sentences, as for the whole pack before
            sentences = [self.sentences(t) for t in missing]
            flat = [x for group in sentences for x in group]
            vectors = np.asarray(embedder.embed(flat), dtype=float) if flat else np.zeros((0, embedder.dim))
            norms = np.linalg.norm(vectors, axis=1)
            at = 0
            for t, group in zip(missing, sentences):
                rows[t] = (vectors[at:at + len(group)], norms[at:at + len(group)])
                at += len(group)
        got = [rows[t] for t in items]
        return np.concatenate([v for v, _ in got]), np.concatenate([n for _, n in got])

    def forget(self) -> None:
        super().forget()
        self._rows.clear()

    def sizes(self) -> dict[str, int]:
        return {**super().sizes(), "rows": sum(len(rows) for rows in list(self._rows.values()))}
