"""BM25 lexical index over a store namespace: rank-bm25's BM25Okapi formula, scored with a sparse
term-by-document weight matrix so a query costs a few sparse rows instead of a Python loop per item."""
from __future__ import annotations

import math
import re
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np
from scipy import sparse

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store
    from memarch.pipeline.items import MemoryItem

_WORD = re.compile(r"[a-z0-9]+")
# Light on purpose: function words only, so short entity-bearing queries keep their terms.
STOPWORDS = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i in is it its "
    "me my of on or our she so than that the their them then there these they this to was we were what "
    "when where which who whom why will with would you your".split())


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric runs minus stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


class Vocabulary:
    """Term -> id, shared by successive indexes of a namespace so tokenised items can be reused."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def counts(self, tokens: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, term frequencies) of one document."""
        c = Counter(tokens)
        ids = np.fromiter((self.ids.setdefault(w, len(self.ids)) for w in c), dtype=np.int64, count=len(c))
        return ids, np.fromiter(c.values(), dtype=np.float64, count=len(c))


class BM25Index:
    """BM25Okapi over a fixed corpus (same k1, b, epsilon and idf floor as ``rank_bm25``).

    Example::

        index = BM25Index([["red", "apple"], ["green", "pear"]])
        index.scores(["apple"])  # == rank_bm25.BM25Okapi(corpus).get_scores(["apple"])

    Args:
        corpus: tokenised documents.
        k1, b, epsilon: BM25Okapi parameters; ``epsilon`` floors negative idfs at
            ``epsilon * mean(idf)`` as rank-bm25 does.
        vocabulary, doc_counts: instead of ``corpus``: each document's (term ids, frequencies)
            under ``vocabulary`` (see `Vocabulary.counts`), e.g. cached from a previous build.
    """

    def __init__(self, corpus: Sequence[Sequence[str]] | None = None, *, k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25, vocabulary: Vocabulary | None = None,
                 doc_counts: Sequence[tuple[np.ndarray, np.ndarray]] | None = None):
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.vocabulary = vocabulary or Vocabulary()
        if doc_counts is None:
            doc_counts = [self.vocabulary.counts(doc) for doc in corpus or []]
        self.vocab = self.vocabulary.ids
        self.size = len(doc_counts)
        n_terms = len(self.vocab)
        lengths = np.fromiter((len(t) for t, _ in doc_counts), dtype=np.int64, count=self.size)
        term = np.concatenate([t for t, _ in doc_counts]) if self.size else np.zeros(0, np.int64)
        tf = np.concatenate([f for _, f in doc_counts]) if self.size else np.zeros(0)
        doc = np.repeat(np.arange(self.size), lengths)
        doc_len = np.bincount(doc, weights=tf, minlength=self.size)
        df = np.bincount(term, minlength=n_terms).astype(np.float64)
        self.idf = self._idf(df)
        avgdl = float(doc_len.mean()) if self.size else 0.0
        if avgdl > 0:
            norm = self.k1 * (1 - self.b + self.b * doc_len[doc] / avgdl)
            weight = self.idf[term] * tf * (self.k1 + 1) / (tf + norm)
            # Rows are terms, so a query reads only the rows of its own terms.
            self.matrix = sparse.csr_matrix((weight, (term, doc)), shape=(n_terms, self.size))
        else:  # no document has a term: nothing can match
            self.matrix = sparse.csr_matrix((n_terms, self.size))

    def _idf(self, df: np.ndarray) -> np.ndarray:
        idf = np.log(self.size - df + 0.5) - np.log(df + 0.5)
        present = df > 0  # a shared vocabulary may hold terms of items since removed
        if not present.any():
            return np.zeros_like(df)
        # fsum: the exact sum, independent of term order, so an index rebuilt incrementally (its
        # vocabulary in another order) scores bit for bit like a fresh one over the same items.
        floor = self.epsilon * math.fsum(idf[present].tolist()) / int(present.sum())
        return np.where(idf < 0, floor, idf)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document; a repeated query term counts once per occurrence."""
        # The vocabulary is shared with newer indexes: ids past this matrix are terms added since.
        rows = self.matrix.shape[0]
        counts = Counter(t for t in query_tokens if self.vocab.get(t, rows) < rows)
        if not counts or self.size == 0:
            return np.zeros(self.size)
        ids = np.fromiter((self.vocab[t] for t in counts), dtype=np.int64, count=len(counts))
        mult = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        return np.asarray(self.matrix[ids].T @ mult).ravel()

    def top(self, query_tokens: Sequence[str], n: int) -> list[tuple[int, float]]:
        """Up to ``n`` (document index, score) pairs with a positive score, best first."""
        s = self.scores(query_tokens)
        hits = np.flatnonzero(s > 0)
        if len(hits) > n:
            hits = hits[np.argpartition(-s[hits], n - 1)[:n]]
        hits = hits[np.argsort(-s[hits], kind="stable")]
        return [(int(i), float(s[i])) for i in hits]


class LexicalIndex:
    """A `BM25Index` over the active items of one store namespace, with the items it was built from.

    ``previous`` (the index of an older version of the namespace) lends its vocabulary and the
    term counts of items whose text did not change, so a rebuild after a write tokenises only
    the new items; when no text changed at all (a manager updated usage stats) its matrix is
    kept as is.
    """

    def __init__(self, items: list["MemoryItem"], *, previous: "LexicalIndex | None" = None, **bm25):
        self.items = items
        self.ids = [it.id for it in items]
        self.texts = [it.text for it in items]
        if previous is not None and not bm25 and previous.ids == self.ids and previous.texts == self.texts:
            # Only usage stats or lineage changed: list comparisons in C, no per-item Python work.
            self.vocabulary, self.doc_counts, self.bm25 = previous.vocabulary, previous.doc_counts, previous.bm25
            self.live_terms = previous.live_terms
            return
        reuse = previous is not None and len(previous.vocabulary.ids) <= 2 * previous.live_terms + 1000
        self.vocabulary = previous.vocabulary if reuse else Vocabulary()
        old = previous.doc_counts if reuse else {}
        self.doc_counts: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
        for it in items:
            hit = old.get(it.id)
            if hit is None or hit[0] != it.text:
                hit = (it.text, *self.vocabulary.counts(tokenize(it.text)))
            self.doc_counts[it.id] = hit
        self.bm25 = BM25Index(vocabulary=self.vocabulary,
                              doc_counts=[self.doc_counts[it.id][1:] for it in items], **bm25)
        self.live_terms = int(np.count_nonzero(np.diff(self.bm25.matrix.indptr)))

    def search(self, text: str, n: int, keep=None) -> list[tuple["MemoryItem", float]]:
        """Best ``n`` items for ``text`` among those ``keep`` accepts (all if None)."""
        tokens = tokenize(text)
        slack = 0 if keep is None else 8  # so that a few excluded items rarely force a second pass
        want = n
        while True:
            hits = self.bm25.top(tokens, want + slack)
            out = [(self.items[i], s) for i, s in hits if keep is None or keep(self.items[i])]
            if len(out) >= n or len(hits) < want + slack:
                return out[:n]
            want *= 4


# Per store object: {namespace: (version, LexicalIndex)}; dies with the store.
_INDEXES: "weakref.WeakKeyDictionary[Store, dict]" = weakref.WeakKeyDictionary()


def lexical_index(store: "Store", namespace: str) -> LexicalIndex:
    """The cached index of ``store``'s active items in ``namespace``, rebuilt (incrementally)
    when ``store.version(namespace)`` moves."""
    per_store = _INDEXES.setdefault(store, {})
    version = store.version(namespace)
    hit = per_store.get(namespace)
    if hit is not None and hit[0] == version:
        return hit[1]
    index = LexicalIndex(store.list(namespace), previous=hit[1] if hit else None)
    per_store[namespace] = (version, index)
    return index


def overlap(query_tokens: Sequence[str], text: str) -> float:
    """Share of distinct query terms that occur in ``text`` (0..1)."""
    q = set(query_tokens)
    if not q:
        return 0.0
    return len(q & set(tokenize(text))) / len(q)

