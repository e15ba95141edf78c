"""`BM25Index`: rank-bm25's BM25Okapi over documents added and removed one at a time — per-term
postings a write appends to (a removal masks its slot), weights computed at query time, so a read
after a write costs the new document's postings instead of a rebuild."""
from __future__ import annotations

import math
from collections import Counter
from itertools import chain
from typing import Mapping, Sequence

import numpy as np

from memarch.pipeline.selection import nth_largest


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
        self._len = np.zeros(0, np.float64)  # per slot: document length (terms)
        self._key = np.zeros(0, np.int64)  # per slot: tie-break rank (the caller's order)
        self._alive = np.zeros(0, bool)
        self._terms: list[np.ndarray | None] = []  # per slot: its term ids, to undo a removal
        self.size = 0  # live documents
        self._total = 0  # terms in live documents (an integer: order-free, so exact)
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
        # Every document's terms at once: term ids in order of first occurrence (a new term takes
        # the next id), then (document, term) pairs counted by one sort instead of a Counter each.
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=n)
        words = list(chain.from_iterable(docs))
        # New terms in order of first occurrence, then every word's id: C-level passes (a Python
        # `setdefault` per word was a tenth of a warm LongMemEval_S evaluate).
        new = [w for w in dict.fromkeys(words) if w not in vocab]
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
        flat = np.fromiter(map(vocab.__getitem__, words), dtype=np.int64, count=len(words))
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

    def add(self, terms: Sequence[str]) -> int:
        """Append one document; its slot."""
        return self.add_many([terms])[0]

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

    def scores(self, query_terms: "Sequence[str] | Mapping[str, float]") -> np.ndarray:
        """BM25 score per slot (0 for retired ones); a repeated query term counts once per occurrence,
        a mapping gives each term its weight."""
        out = np.zeros(self.slots)
        if isinstance(query_terms, Mapping):  # term -> weight (an expanded query)
            counts = {t: w for t, w in query_terms.items() if t in self.vocab and w > 0}
        else:
            counts = Counter(t for t in query_terms if t in self.vocab)
        if not counts or self.size == 0 or self._total == 0:
            return out
        vocab, df = self.vocab, self._df
        for term, mult in counts.items():
            t = vocab[term]
            if not df[t]:
                continue
            docs, weight = self.term_weights(t)  # 0 on retired slots
            dense = self._dense_weights(t, docs, weight)
            if dense is not None:  # a word most documents hold: one contiguous add, not a scatter
                out += dense if mult == 1 else dense * float(mult)
            else:
                out[docs] += weight if mult == 1 else weight * float(mult)
        return out

    def _dense_weights(self, t: int, docs: np.ndarray, weight: np.ndarray) -> np.ndarray | None:
        """Term ``t``'s weights (`term_weights`: ``docs``, ``weight``) laid over every slot (0 where
        it is absent) when it is in at least half of them, remembered with them: adding it is a
        contiguous add over the slots, several times faster than scattering the same values
        (x + 0.0 is x: the same scores)."""
        memo = self._weights[2]
        key = ("dense", t)
        if key not in memo:
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

    def top(self, query_terms: "Sequence[str] | Mapping[str, float]", n: int) -> list[tuple[int, float]]:
        """Up to ``n`` (slot, score) pairs with a positive score, best first, ties by key."""
        s = self.scores(query_terms)
        # every hit scoring at least the n-th best (so ties at the cut are all in), or every
        # positive one when fewer than n score
        cut = nth_largest(s, n) if len(s) > n else 0.0
        hits = np.flatnonzero(s >= cut) if cut > 0 else np.flatnonzero(s > 0)
        hits = hits[np.lexsort((self._key[hits], -s[hits]))][:n]
        return list(zip(hits.tolist(), s[hits].tolist()))
