"""The vendors' LongMemEval_S session-level BM25 rows reproduced outside memarch, to say how their
protocol differs from the official one and from memarch's: every haystack session one document,
ranked by BM25 against the question, session recall_any@k with gold = ``answer_session_ids`` over
every question (the rule of rohitg00/agentmemory's benchmark/LONGMEMEVAL.md: BM25 R@5 0.862, and of
MemPalace's raw mode), beside the official keys (user turns only, joined with a space, split on
spaces: run_retrieval.py's flat-bm25).

Documents and tokenizers, each a row:
- official: user turns joined with ' ', ``split(" ")``, rank_bm25 BM25Okapi (k1 1.5, b 0.75);
- both roles ``"role: content"`` joined with newlines (agentmemory's documents), split on spaces;
- the same documents, lowercased words ``[a-z0-9]+``;
- the same documents with agentmemory's own `SearchIndex` as published at 8b21ae2 (its earliest
  readable version: lowercase, ``[^\\w\\s/.\\-_]`` to spaces, terms of 2+ characters, k1 1.2,
  b 0.75, and every index term the query term prefixes scored at half its IDF); the benchmark-era
  tokenizer ("Porter stemming and synonym expansion") is not published, so this row is the closest
  readable one, not theirs;
- that tokenizer with Porter stems (memarch's Porter stemmer), without and with the prefix rule;
- the official keys (user turns), lowercased words.

Usage::

    python benchmarks/bench_lme_vendor_bm25.py --data ../shared/data/longmemeval
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

KS = (5, 10)


class AgentmemoryIndex:
    """agentmemory's `SearchIndex` (src/state/search-index.ts at 8b21ae2), ported: BM25 with k1 1.2,
    b 0.75, idf log((N - df + .5) / (df + .5) + 1), and each index term the query term is a strict
    prefix of adding its BM25 at half its IDF."""

    def __init__(self, docs: list[list[str]], prefix: bool = True):
        self.tf = [Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = sum(self.len) / max(len(docs), 1)
        self.postings: dict[str, list[int]] = {}
        for i, c in enumerate(self.tf):
            for t in c:
                self.postings.setdefault(t, []).append(i)
        self.prefix = prefix

    def _add(self, scores: list[float], term: str, weight: float) -> None:
        docs = self.postings.get(term, ())
        n, df = len(self.tf), len(docs)
        idf = math.log((n - df + 0.5) / (df + 0.5) + 1) * weight
        for i in docs:
            tf = self.tf[i][term]
            scores[i] += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * self.len[i] / self.avg))

    def scores(self, query: list[str]) -> list[float]:
        scores = [0.0] * len(self.tf)
        for term in query:
            self._add(scores, term, 1.0)
            if self.prefix:
                for other in self.postings:
                    if other != term and other.startswith(term):
                        self._add(scores, other, 0.5)
        return scores


def agentmemory_terms(text: str) -> list[str]:
    return [t for t in re.split(r"\s+", re.sub(r"[^\w\s/.\-_]", " ", text.lower())) if len(t) > 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/longmemeval")
    args = ap.parse_args()
    from rank_bm25 import BM25Okapi

    from memarch.benchmarks.longmemeval import resolve_path
    from memarch.benchmarks.metrics.porter import stem
    from memarch.pipeline.json_list import read_json_list

    words = re.compile(r"[a-z0-9]+")
    rows: dict[str, list[float]] = {}

    def record(name: str, ranked: list[str], gold: set[str]) -> None:
        for k in KS:
            rows.setdefault(f"{name}|{k}", []).append(float(any(s in gold for s in ranked[:k])))

    n = 0
    for inst in read_json_list(resolve_path(args.data, "s")[0]):
        n += 1
        ids = [str(s) for s in inst["haystack_session_ids"]]
        sessions = inst["haystack_sessions"]
        gold = {str(s) for s in inst["answer_session_ids"]}
        q = inst["question"]
        user = [" ".join(t["content"] for t in s if t["role"] == "user") for s in sessions]
        both = ["\n".join(f"{t['role']}: {t['content']}" for t in s) for s in sessions]

        def rank(scores: list[float]) -> list[str]:
            order = sorted(range(len(ids)), key=lambda i: -scores[i])  # stable: ties in haystack order
            return list(dict.fromkeys(ids[i] for i in order))

        record("official keys (user turns, split on ' ')",
               rank(list(BM25Okapi([d.split(" ") for d in user]).get_scores(q.split(" ")))), gold)
        record("user turns, lowercased words",
               rank(list(BM25Okapi([words.findall(d.lower()) for d in user]).get_scores(words.findall(q.lower())))), gold)
        record("both roles, split on ' '", rank(list(BM25Okapi([d.split(" ") for d in both]).get_scores(q.split(" ")))), gold)
        record("both roles, lowercased words",
               rank(list(BM25Okapi([words.findall(d.lower()) for d in both]).get_scores(words.findall(q.lower())))), gold)
        docs = [agentmemory_terms(d) for d in both]
        record("both roles, agentmemory SearchIndex (8b21ae2)", rank(AgentmemoryIndex(docs).scores(agentmemory_terms(q))), gold)
        stemmed = [[stem(t) for t in d] for d in docs]
        record("both roles, its tokenizer + Porter stems, no prefix",
               rank(AgentmemoryIndex(stemmed, prefix=False).scores([stem(t) for t in agentmemory_terms(q)])), gold)
        record("both roles, its tokenizer + Porter stems + prefix",
               rank(AgentmemoryIndex(stemmed).scores([stem(t) for t in agentmemory_terms(q)])), gold)
    print(f"LongMemEval_S, {n} questions, session recall_any@k, gold answer_session_ids (the vendors' rule), "
          "every haystack session one BM25 document")
    print(f"  {'documents, tokenizer, scorer':<56} " + " ".join(f"{'R@' + str(k):>7}" for k in KS))
    names = list(dict.fromkeys(key.split("|")[0] for key in rows))
    for name in names:
        print(f"  {name:<56} " + " ".join(f"{sum(rows[f'{name}|{k}']) / n:>7.3f}" for k in KS))
    print("published: agentmemory BM25-only R@5 0.862, R@10 0.946 (500 questions; their tokenizer with Porter "
          "stems and synonyms, unpublished)")


if __name__ == "__main__":
    main()
