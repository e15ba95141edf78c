"""The lexical side of memarch's stores: the tokenizers (text -> terms, plain and Snowball-stemmed) and
`LexicalIndex`, a `BM25Index` (bm25.py) over one store namespace's active items, caught up in place
from the store's journal after writes."""
from __future__ import annotations

import functools
import re
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from memarch.modules.stores.activity import ActiveIn
from memarch.modules.stores.bm25 import BM25Index
from memarch.pipeline.text_caches import TextCaches, TextMemos

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
    """The terms of ``text``: lowercase alphanumeric runs minus stopwords (a new list: the caller may
    change it)."""
    return list(_terms(text))


def _terms(text: str) -> tuple[str, ...]:
    return tuple(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def stem_tokenize(text: str) -> list[str]:
    """`tokenize`, each term reduced to its English Snowball (Porter 2) stem: "paintings" and
    "painted" both "paint". Stopwords go before stemming, as in `tokenize`."""
    return [_STEMMER().stemWord(w) for w in _terms(text)]


@functools.lru_cache(maxsize=1)
def _STEMMER():
    import snowballstemmer  # pure Python; only an index that stems imports it

    return snowballstemmer.stemmer("english")


class Terms(TextMemos):
    """The tokenizers' memos, as one owner (`Resources.texts`) keeps them: the same texts are
    tokenised by every read and every trial of a search (items, their sentences, questions).

    Example::

        terms = Terms.of(resources.texts)
        terms.terms("She painted the fence")     # ("painted", "fence"), as `tokenize`
        terms.stemmed("She painted the fence")   # ("paint", "fenc"), as `stem_tokenize`
    """

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        # Up to 131,072 distinct texts each (~40 MB on LoCoMo-sized texts).
        self.terms = terms = self.memo(_terms, 1 << 17, "terms")
        self.stem = stem = self.memo(lambda word: _STEMMER().stemWord(word), 1 << 16, "stem")

        def stemmed(text: str) -> tuple[str, ...]:
            return tuple(stem(w) for w in terms(text))

        self.stemmed = self.memo(stemmed, 1 << 17)

    def tokenize(self, text: str) -> list[str]:
        """`tokenize` through the memo."""
        return list(self.terms(text))

    def stem_tokenize(self, text: str) -> list[str]:
        """`stem_tokenize` through the memo."""
        return list(self.stemmed(text))

    def analyzer(self, stem: bool = False) -> Callable[[str], list[str]]:
        """`analyzer` through the memos."""
        return self.stem_tokenize if stem else self.tokenize


def stem_only_terms(query: str, text: str, texts: TextCaches | None = None) -> list[str]:
    """The query's terms that match ``text`` only as stems: the term is not one of ``text``'s, its
    Snowball stem is ("paintings" against "she painted"). What a BM25 over stems would find that
    one over `tokenize`'s terms does not; sorted, each once."""
    memo = Terms.of(texts)
    terms, stems = set(memo.terms(text)), set(memo.stemmed(text))
    return sorted({w for w in memo.terms(query) if w not in terms and memo.stem(w) in stems})


def analyzer(stem: bool = False):
    """The tokenizer of an index: `stem_tokenize` when ``stem``, else `tokenize`."""
    return stem_tokenize if stem else tokenize


class LexicalIndex:
    """A `BM25Index` over the active items of one store namespace, kept up to date in place.

    `sync` replays the store's journal: a touched item whose text changed (or that left) retires
    its slot, a new or changed one takes a fresh slot; an update that keeps the text (usage,
    lineage) costs nothing. Ties rank in the store's insertion order, so results equal a rebuild's.

    Example::

        index = LexicalIndex(store, "alice")
        store.add([item]); index.sync(store, "alice")   # False: rebuild instead
        index.search("where does Caroline work", 10, keep=lambda it: it.kind == "fact")

    Args:
        store, namespace: whose active items are indexed.
        stem: index (and read queries as) stemmed terms (`stem_tokenize`) instead of `tokenize`'s.
        bm25: `BM25Index` parameters (k1, b, epsilon).
    """

    def __init__(self, store: "Store", namespace: str, *, stem: bool = False, **bm25):
        items = store.list(namespace)
        self.stem = bool(stem)
        memo = Terms.of(store.resources.texts)
        self.tokenize = memo.analyzer(self.stem)
        self._terms = memo.stemmed if self.stem else memo.terms
        self.bm25 = BM25Index(**bm25)
        self.ids: list[str] = []  # per slot
        self.texts: list[str] = []  # per slot
        self.slot_of: dict[str, int] = {}
        self._counts: dict[int, tuple] = {}  # per slot: `_slot_counts`
        self.version = store.version(namespace)
        self._store = weakref.ref(store)
        self.namespace = namespace
        self._add(store, namespace, items)

    def _add(self, store: "Store", namespace: str, items: list["MemoryItem"]) -> None:
        if not items:
            return
        # Ties rank in the store's insertion order, which replacing or reviving an item keeps.
        slots = self.bm25.add_many([self.tokenize(it.text) for it in items],
                                   keys=[store.position(it.id, namespace) for it in items])
        self.ids.extend(it.id for it in items)
        self.texts.extend(it.text for it in items)
        for it, slot in zip(items, slots):
            self.slot_of[it.id] = slot

    def sync(self, store: "Store", namespace: str) -> bool:
        """Catch up with the writes since the last sync; False when a rebuild is due instead."""
        version = store.version(namespace)
        if version == self.version:
            return True
        touched = store.changes_since(namespace, self.version)
        retired = self.bm25.slots - self.bm25.size
        if touched is None or retired + len(touched) > max(4096, self.bm25.size):
            return False
        fresh = []
        for iid in touched:
            item, slot = store.get(iid, namespace), self.slot_of.get(iid)
            if slot is not None:
                if item is not None and self.texts[slot] == item.text:
                    continue
                self.bm25.remove(slot)
                del self.slot_of[iid]
            if item is not None:
                fresh.append(item)
        self._add(store, namespace, fresh)
        self.version = version
        return True

    def _slot_counts(self, slot: int) -> tuple[tuple[tuple[str, int], ...], int]:
        """(term, frequency) pairs of a slot's text in first-occurrence order, and its length (at
        least 1); a slot's text never changes, so once per slot."""
        got = self._counts.get(slot)
        if got is None:
            terms = self._terms(self.texts[slot])
            got = self._counts[slot] = (tuple(Counter(terms).items()), max(len(terms), 1))
        return got

    def scores_of(self, terms: Sequence[str], ids: Sequence[str]) -> np.ndarray:
        """BM25 of each item of ``ids`` for the query ``terms`` (0 for one the index does not hold):
        one vectorised pass over the postings, no ranking."""
        per_slot = np.asarray(self.bm25.scores(terms), dtype=np.float64)
        return np.array([per_slot[self.slot_of[i]] if i in self.slot_of else 0.0 for i in ids], dtype=np.float64)

    @property
    def items(self) -> list["MemoryItem"]:
        """The indexed items, in insertion order."""
        store = self._store()
        slots = sorted(self.slot_of.values(), key=lambda j: self.bm25._key[j])
        found = [] if store is None else [store.get(self.ids[j], self.namespace) for j in slots]
        return [it for it in found if it is not None]

    def expand(self, query_terms: Sequence[str], *, docs: int, terms: int, weight: float,
               hits: list[tuple[int, float]] | None = None) -> dict[str, float]:
        """Pseudo-relevance feedback (RM3-style): the query's terms (weight 1 each occurrence) plus the
        ``terms`` best terms of its ``docs`` best BM25 hits (or of ``hits``, (slot, score) pairs) — each term's frequency in a hit, weighted by
        the hit's share of the hits' scores and the term's idf — at ``weight`` relative to the query.

        Example::

            index.expand(tokenize("where does Ann work"), docs=3, terms=10, weight=0.3)
            # {"ann": 1.0, "work": 1.0, "lisbon": 0.3, "bakery": 0.21, ...}
        """
        query = dict(Counter(query_terms))
        hits = self.bm25.top(query_terms, docs) if hits is None else hits[:docs]  # (slot, score), best first
        total = sum(score for _, score in hits)
        if not hits or total <= 0 or terms <= 0 or weight <= 0:
            return {t: float(w) for t, w in query.items()}
        mass: Counter = Counter()
        vocab, idf = self.bm25.vocab, self.bm25.term_idf
        for slot, score in hits:
            counts, length = self._slot_counts(slot)
            share = score / total
            for term, tf in counts:
                if term not in query:
                    t = vocab.get(term)
                    if t is not None:
                        mass[term] += share * tf / length * idf(t)
        best = mass.most_common(terms)
        top = best[0][1] if best else 1.0
        out = {t: float(w) for t, w in query.items()}
        out.update({term: weight * m / top for term, m in best})
        return out

    def search(self, text: str, n: int, keep=None, *, prf: tuple[int, int, float] | None = None
               ) -> list[tuple["MemoryItem", float]]:
        """Best ``n`` items for ``text`` among those ``keep`` accepts (all if None); ``prf`` =
        (docs, terms, weight) expands the query by pseudo-relevance feedback first (`expand`)."""
        store = self._store()
        if store is None:
            return []
        query = self.tokenize(text)
        if prf is not None and prf[1] > 0:  # feedback only from items the caller may read
            first = [(self.slot_of[it.id], score) for it, score in self.search(text, prf[0], keep)]
            query = self.expand(query, docs=prf[0], terms=prf[1], weight=prf[2], hits=first)
        if isinstance(keep, ActiveIn) and keep.spares(self.namespace):
            keep = None  # the index holds the namespace's active items only (`sync`): all pass
        slack = 0 if keep is None else 8  # so that a few excluded items rarely force a second pass
        want = n
        while True:
            hits = self.bm25.top(query, want + slack)
            ids = self.ids
            found = zip(hits, store.get_many([ids[slot] for slot, _ in hits], self.namespace))
            if keep is None:
                out = [(item, score) for (_, score), item in found if item is not None]
            else:
                out = [(item, score) for (_, score), item in found if item is not None and keep(item)]
            if len(out) >= n or len(hits) < want + slack:
                return out[:n]
            want *= 4


def lexical_index(store: "Store", namespace: str, *, stem: bool = False) -> LexicalIndex:
    """The index of ``store``'s active items in ``namespace``, brought up to date with the writes
    since it was last read (rebuilt only when the store's journal cannot say what changed);
    ``stem``: the index over stemmed terms (`stem_tokenize`), kept beside the plain one."""
    per_store = store.caches.part(__name__)  # {namespace or (namespace, "stem"): LexicalIndex}
    key = (namespace, "stem") if stem else namespace
    index = per_store.get(key)
    if index is None or not index.sync(store, namespace):
        index = per_store[key] = LexicalIndex(store, namespace, stem=stem)
    return index


def overlap(query_terms: Sequence[str], text: str, texts: TextCaches | None = None) -> float:
    """Share of distinct query terms that occur in ``text`` (0..1); ``texts``: whose memo keeps
    the text's terms (a retriever's `Resources.texts`)."""
    q = set(query_terms)
    if not q:
        return 0.0
    return len(q & set((_terms if texts is None else texts[Terms].terms)(text))) / len(q)

