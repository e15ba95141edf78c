"""BM25 lexical index over a store namespace: rank-bm25's BM25Okapi formula over per-term postings
that a write appends to (and a delete masks), weighted at query time, so a read after a write costs
the new item's postings instead of a rebuild."""
from __future__ import annotations

import functools
import math
import re
import weakref
from collections import Counter
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from memarch.modules.stores.activity import ActiveIn
from memarch.pipeline.selection import nth_largest

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
    """Lowercase alphanumeric runs minus stopwords (a new list: the caller may change it)."""
    return list(_tokens(text))


@functools.lru_cache(maxsize=1 << 17)
def _tokens(text: str) -> tuple[str, ...]:
    # The same texts are tokenised by every trial of a search (items, their sentences, questions):
    # once per process, up to 131,072 distinct texts (~40 MB on LoCoMo-sized texts).
    return tuple(w for w in _WORD.findall(text.lower()) if w not in STOPWORDS)


def stem_tokenize(text: str) -> list[str]:
    """`tokenize`, each token reduced to its English Snowball (Porter 2) stem: "paintings" and
    "painted" both "paint". Stopwords go before stemming, as in `tokenize`."""
    return list(_stemmed(text))


@functools.lru_cache(maxsize=1 << 17)
def _stemmed(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in _tokens(text))


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    return _STEMMER().stemWord(word)


@functools.lru_cache(maxsize=1)
def _STEMMER():
    import snowballstemmer  # pure Python; only an index that stems imports it

    return snowballstemmer.stemmer("english")


def stem_only_terms(query: str, text: str) -> list[str]:
    """The query's words that match ``text`` only as stems: its token is not one of ``text``'s, its
    Snowball stem is ("paintings" against "she painted"). What a BM25 over stems would find that
    one over `tokenize`'s tokens does not; sorted, each once."""
    words, stems = set(_tokens(text)), set(_stemmed(text))
    return sorted({w for w in _tokens(query) if w not in words and _stem(w) in stems})


def analyzer(stem: bool = False):
    """The tokenizer of an index: `stem_tokenize` when ``stem``, else `tokenize`."""
    return stem_tokenize if stem else tokenize


class BM25Index:
    """BM25Okapi (rank-bm25's k1, b, epsilon and idf floor) over documents added and removed one
    at a time.

    Postings keep raw term frequencies; weights are computed at query time from the current
    document count, lengths and document frequencies, so a write touches only its own postings
    and scores equal those of an index built from scratch over the same live documents.

    Example::

        index = BM25Index([["red", "apple"], ["green", "pear"]])
        index.scores(["apple"])  # == rank_bm25.BM25Okapi(corpus).get_scores(["apple"])
        slot = index.add(["red", "pear"]); index.remove(slot)

    Args:
        corpus: tokenised documents (slots 0..n-1).
        k1, b, epsilon: BM25Okapi parameters; ``epsilon`` floors negative idfs at
            ``epsilon * mean(idf)`` as rank-bm25 does.
    """

    def __init__(self, corpus: Sequence[Sequence[str]] | None = None, *, k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25):
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.vocab: dict[str, int] = {}
        # Per term: the slots holding it and its frequency in each, in arrays with room to grow
        # (doubled when full), their first ``_count[t]`` entries in use: a write appends in place,
        # a read takes views (before, lists made into arrays again after every write: ~50 us for
        # a word in 12,500 documents, on the first read after each add).
        self._post: list[np.ndarray] = []  # int64 slots, ascending
        self._ptf: list[np.ndarray] = []  # float64 frequencies
        self._count: list[int] = []
        self._df = np.zeros(0, np.int64)  # per term: live documents holding it
        self._len = np.zeros(0, np.float64)  # per slot: document length (tokens)
        self._key = np.zeros(0, np.int64)  # per slot: tie-break rank (the caller's order)
        self._alive = np.zeros(0, bool)
        self._terms: list[np.ndarray | None] = []  # per slot: its term ids, to undo a removal
        self.size = 0  # live documents
        self._total = 0  # tokens in live documents (an integer: order-free, so exact)
        self._floor: tuple[int, float] | None = None  # (change count, idf floor)
        self._changes = 0
        self._idf_memo: tuple[int, dict[int, float]] = (-1, {})
        # Until the next change: each slot's length norm, and each scored term's weight per posting
        # (reads between two writes share them: a read point's questions, a deeper read).
        self._weights: tuple[int, np.ndarray | None, dict] = (-1, None, {})
        self.add_many([list(doc) for doc in corpus or []])

    @property
    def slots(self) -> int:
        return len(self._terms)

    def _grow(self, slots: int) -> None:
        n_terms = len(self.vocab)
        if n_terms > len(self._df):
            self._df = np.concatenate([self._df, np.zeros(max(n_terms, 2 * len(self._df)) - len(self._df), np.int64)])
        if slots > len(self._len):
            extra = max(slots, 2 * len(self._len)) - len(self._len)
            self._len = np.concatenate([self._len, np.zeros(extra)])
            self._key = np.concatenate([self._key, np.zeros(extra, np.int64)])
            self._alive = np.concatenate([self._alive, np.zeros(extra, bool)])

    def add_many(self, docs: Sequence[Sequence[str]], keys: Sequence[int] | None = None) -> list[int]:
        """Append documents; their slots. ``keys``: their tie-break ranks (default: the slots),
        so equal scores rank in the caller's order rather than in order of arrival."""
        if not docs:
            return []
        first, n, vocab = self.slots, len(docs), self.vocab
        # Every document's tokens at once: term ids in order of first occurrence (a new term takes
        # the next id), then (document, term) pairs counted by one sort instead of a Counter each.
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=n)
        flat = np.fromiter((vocab.setdefault(w, len(vocab)) for doc in docs for w in doc), dtype=np.int64,
                           count=int(lengths.sum()))
        self._grow(first + n)
        width = max(len(vocab), 1)
        pairs, counts = np.unique(np.repeat(np.arange(n, dtype=np.int64), lengths) * width + flat,
                                  return_counts=True)  # sorted by document, then term
        doc, term, tf = pairs // width, pairs % width, counts.astype(np.float64)
        per_doc = np.split(term, np.searchsorted(doc, np.arange(1, n)))  # each document's distinct terms
        if len(term):
            slot = doc + first
            order = np.argsort(term, kind="stable")  # slots stay ascending within a term
            term_s, tf_s, slot_s = term[order], tf[order], slot[order]
            starts = np.r_[0, np.flatnonzero(np.diff(term_s)) + 1]
            ends = np.r_[starts[1:], len(term_s)]
            post, ptf, count = self._post, self._ptf, self._count
            for t, a, z in zip(term_s[starts].tolist(), starts.tolist(), ends.tolist()):
                if t == len(count):  # a new term (ids come in order): these are its postings
                    post.append(slot_s[a:z].copy())
                    ptf.append(tf_s[a:z].copy())
                    count.append(z - a)
                    continue
                c = count[t]
                m = c + z - a
                if m > len(post[t]):  # full: twice the room (or what this batch needs)
                    room = max(m, 2 * len(post[t]))
                    grown, grown_tf = np.empty(room, np.int64), np.empty(room, np.float64)
                    grown[:c], grown_tf[:c] = post[t][:c], ptf[t][:c]
                    post[t], ptf[t] = grown, grown_tf
                if m == c + 1:
                    post[t][c], ptf[t][c] = slot_s[a], tf_s[a]
                else:
                    post[t][c:m], ptf[t][c:m] = slot_s[a:z], tf_s[a:z]
                count[t] = m
            if n > 64:
                self._df[:len(vocab)] += np.bincount(term, minlength=len(vocab))
            else:  # a few documents: touch their terms only, not the whole vocabulary
                np.add.at(self._df, term, 1)
        doc_len = lengths.astype(np.float64)
        self._len[first:first + n] = doc_len
        self._alive[first:first + n] = True
        self._key[first:first + n] = np.arange(first, first + n) if keys is None else keys
        self._terms.extend(per_doc)
        self.size += n
        self._total += int(lengths.sum())
        self._changes += 1
        return list(range(first, first + n))

    def _postings(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ``t``'s slots and frequencies as arrays (slots ascending)."""
        c = self._count[t]
        return self._post[t][:c], self._ptf[t][:c]

    def add(self, tokens: Sequence[str]) -> int:
        """Append one document; its slot."""
        return self.add_many([tokens])[0]

    def remove(self, slot: int) -> None:
        """Retire a document: it stops counting and scoring (its postings stay, masked)."""
        if not self._alive[slot]:
            return
        self._alive[slot] = False
        self._df[self._terms[slot]] -= 1
        self._terms[slot] = None
        self.size -= 1
        self._total -= int(self._len[slot])
        self._changes += 1

    def _idf_of(self, df: int) -> float:
        return math.log(self.size - df + 0.5) - math.log(df + 0.5)

    def _idf_floor(self) -> float:
        """``epsilon`` x the mean idf of the terms some live document holds, summed exactly per
        distinct document frequency: the same bits however the documents arrived."""
        if self._floor is None or self._floor[0] != self._changes:
            per_df = np.bincount(self._df[:len(self.vocab)])
            held = np.flatnonzero(per_df)
            total = math.fsum(int(per_df[d]) * self._idf_of(int(d)) for d in held.tolist() if d)
            present = int(per_df[1:].sum())
            self._floor = (self._changes, self.epsilon * total / present if present else 0.0)
        return self._floor[1]

    def _idf(self, term: int) -> float:
        idf = self._idf_of(int(self._df[term]))
        return self._idf_floor() if idf < 0 else idf

    def term_idf(self, term: int) -> float:
        """`_idf`, remembered until the next change of the documents."""
        if self._idf_memo[0] != self._changes:
            self._idf_memo = (self._changes, {})
        memo = self._idf_memo[1]
        got = memo.get(term)
        if got is None:
            got = memo[term] = self._idf(term)
        return got

    @property
    def idf(self) -> np.ndarray:
        """Idf per term id (terms no live document holds included)."""
        return np.array([self._idf(t) for t in range(len(self.vocab))])

    def scores(self, query_tokens: "Sequence[str] | Mapping[str, float]") -> np.ndarray:
        """BM25 score per slot (0 for retired ones); a repeated query term counts once per occurrence,
        a mapping gives each term its weight."""
        out = np.zeros(self.slots)
        if isinstance(query_tokens, Mapping):  # term -> weight (an expanded query)
            counts = {t: w for t, w in query_tokens.items() if t in self.vocab and w > 0}
        else:
            counts = Counter(t for t in query_tokens if t in self.vocab)
        if not counts or self.size == 0 or self._total == 0:
            return out
        vocab, df = self.vocab, self._df
        for token, mult in counts.items():
            t = vocab[token]
            if not df[t]:
                continue
            docs, weight = self.term_weights(t)  # 0 on retired slots
            dense = self._dense_weights(t)
            if dense is not None:  # a word most documents hold: one contiguous add, not a scatter
                out += dense if mult == 1 else dense * float(mult)
            else:
                out[docs] += weight if mult == 1 else weight * float(mult)
        return out

    def _dense_weights(self, t: int) -> np.ndarray | None:
        """Term ``t``'s weights laid over every slot (0 where it is absent) when it is in at least
        half of them, remembered with `term_weights`: adding it is a contiguous add over the slots,
        several times faster than scattering the same values (x + 0.0 is x: the same scores)."""
        changes, _, memo = self._weights
        key = ("dense", t)
        if key not in memo:
            docs, weight = memo[t]
            dense = None
            if 2 * len(docs) >= self.slots:
                dense = np.zeros(self.slots)
                dense[docs] = weight
            memo[key] = dense
        return memo[key]

    def term_weights(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ``t``'s slots and its BM25 weight in each, ``idf x tf x (k1 + 1) / (tf + norm)``
        (0 on a retired slot, so a score needs no mask), remembered until the next change of the
        documents."""
        changes, norm, memo = self._weights
        if changes != self._changes:
            k1, b, avgdl = self.k1, self.b, self._total / self.size
            slots = self.slots
            # the same elementwise operations, in the same order, as a norm computed per term
            norm = k1 * (1 - b + b * self._len[:slots] / avgdl)
            memo = {}
            self._weights = (self._changes, norm, memo)
        got = memo.get(t)
        if got is None:
            docs, tf = self._postings(t)
            weight = self.term_idf(t) * tf * (self.k1 + 1) / (tf + norm[docs])
            if self.size < self.slots:  # some slot retired: its postings stay, weighing nothing
                weight *= self._alive[docs]
            got = memo[t] = (docs, weight)
        return got

    def top(self, query_tokens: "Sequence[str] | Mapping[str, float]", n: int) -> list[tuple[int, float]]:
        """Up to ``n`` (slot, score) pairs with a positive score, best first, ties by key."""
        s = self.scores(query_tokens)
        # every hit scoring at least the n-th best (so ties at the cut are all in), or every
        # positive one when fewer than n score
        cut = nth_largest(s, n) if len(s) > n else 0.0
        hits = np.flatnonzero(s >= cut) if cut > 0 else np.flatnonzero(s > 0)
        hits = hits[np.lexsort((self._key[hits], -s[hits]))][:n]
        return list(zip(hits.tolist(), s[hits].tolist()))


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
        stem: index (and read queries as) stemmed tokens (`stem_tokenize`) instead of `tokenize`'s.
        bm25: `BM25Index` parameters (k1, b, epsilon).
    """

    def __init__(self, store: "Store", namespace: str, *, stem: bool = False, **bm25):
        items = store.list(namespace)
        self.stem = bool(stem)
        self.tokenize = analyzer(self.stem)
        self._words = _stemmed if self.stem else _tokens
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
            words = self._words(self.texts[slot])
            got = self._counts[slot] = (tuple(Counter(words).items()), max(len(words), 1))
        return got

    def scores_of(self, tokens: Sequence[str], ids: Sequence[str]) -> np.ndarray:
        """BM25 of each item of ``ids`` for ``tokens`` (0 for one the index does not hold): one
        vectorised pass over the postings, no ranking."""
        per_slot = np.asarray(self.bm25.scores(tokens), dtype=np.float64)
        return np.array([per_slot[self.slot_of[i]] if i in self.slot_of else 0.0 for i in ids], dtype=np.float64)

    @property
    def items(self) -> list["MemoryItem"]:
        """The indexed items, in insertion order."""
        store = self._store()
        slots = sorted(self.slot_of.values(), key=lambda j: self.bm25._key[j])
        found = [] if store is None else [store.get(self.ids[j], self.namespace) for j in slots]
        return [it for it in found if it is not None]

    def expand(self, tokens: Sequence[str], *, docs: int, terms: int, weight: float,
               hits: list[tuple[int, float]] | None = None) -> dict[str, float]:
        """Pseudo-relevance feedback (RM3-style): the query's terms (weight 1 each occurrence) plus the
        ``terms`` best terms of its ``docs`` best BM25 hits (or of ``hits``, (slot, score) pairs) — each term's frequency in a hit, weighted by
        the hit's share of the hits' scores and the term's idf — at ``weight`` relative to the query.

        Example::

            index.expand(tokenize("where does Ann work"), docs=3, terms=10, weight=0.3)
            # {"ann": 1.0, "work": 1.0, "lisbon": 0.3, "bakery": 0.21, ...}
        """
        query = dict(Counter(tokens))
        hits = self.bm25.top(tokens, docs) if hits is None else hits[:docs]  # (slot, score), best first
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
        tokens = self.tokenize(text)
        if prf is not None and prf[1] > 0:  # feedback only from items the caller may read
            first = [(self.slot_of[it.id], score) for it, score in self.search(text, prf[0], keep)]
            tokens = self.expand(tokens, docs=prf[0], terms=prf[1], weight=prf[2], hits=first)
        if isinstance(keep, ActiveIn) and keep.spares(self.namespace):
            keep = None  # the index holds the namespace's active items only (`sync`): all pass
        slack = 0 if keep is None else 8  # so that a few excluded items rarely force a second pass
        want = n
        while True:
            hits = self.bm25.top(tokens, want + slack)
            ids = self.ids
            found = zip(hits, store.get_many([ids[slot] for slot, _ in hits], self.namespace))
            if keep is None:
                out = [(item, score) for (_, score), item in found if item is not None]
            else:
                out = [(item, score) for (_, score), item in found if item is not None and keep(item)]
            if len(out) >= n or len(hits) < want + slack:
                return out[:n]
            want *= 4


# Per store object: {namespace: LexicalIndex}; dies with the store.
_INDEXES: "weakref.WeakKeyDictionary[Store, dict]" = weakref.WeakKeyDictionary()


def lexical_index(store: "Store", namespace: str, *, stem: bool = False) -> LexicalIndex:
    """The index of ``store``'s active items in ``namespace``, brought up to date with the writes
    since it was last read (rebuilt only when the store's journal cannot say what changed);
    ``stem``: the index over stemmed tokens (`stem_tokenize`), kept beside the plain one."""
    per_store = _INDEXES.setdefault(store, {})
    key = (namespace, "stem") if stem else namespace
    index = per_store.get(key)
    if index is None or not index.sync(store, namespace):
        index = per_store[key] = LexicalIndex(store, namespace, stem=stem)
    return index


def overlap(query_tokens: Sequence[str], text: str) -> float:
    """Share of distinct query terms that occur in ``text`` (0..1)."""
    q = set(query_tokens)
    if not q:
        return 0.0
    return len(q & set(tokenize(text))) / len(q)

