"""LongMemEval_S rankings, like for like with the published tables: for each question the whole
haystack is ranked (no read, no context budget) at session level and at the official turn level,
and scored with the official metrics (`memarch.benchmarks.metrics.longmemeval_official`).

Session level (every haystack session a candidate):
- ``bm25``: memarch's BM25 (`BM25Index`, memarch's tokenizer) over each session's text, both roles
  as ``role: content`` lines (the vendors' documents);
- ``dense max``: cosine of the question to each turn's item (the `turn` encoder's text, the given
  embedder), a session at its best turn (both roles, or user turns only);
- ``zscore(bm25, dense max)``: alpha x z(bm25) + (1 - alpha) x z(dense) per question, alpha chosen on
  the **search split** (by vendor recall_any@5, then ndcg_any@10) over 0, 0.05, ..., 1 and applied
  unchanged to the others;
- ``session`` retriever: the registered module's `rank_sessions` over a vector store holding the
  dialogue's turn items (its defaults; and with ``stem`` 1).
Scored two ways: the **vendor rule** (gold ``answer_session_ids``, every question, abstention
included: the rule of agentmemory's and MemPalace's tables) and the **official** one (gold: the
sessions holding a user ``has_answer`` turn; the strict average, n = 418 of the 498).

Turn level (the official corpus: user turns only; strict average): BM25, dense and their z-score
fusion over the user turns (alpha chosen on the search split as above, by turn recall_any@5).

Every row prints the split the numbers are on: all questions and the test split (the fusion weights
are chosen on search; the test split is the held-out number). 95% intervals: bootstrap over
questions. The vectors come from the embedder's disk cache when an evaluate filled it (memp writes
the same turn items), else are computed.

    python benchmarks/bench_lme_rankings.py --data ../shared/data/longmemeval --embedder all-MiniLM-L6-v2-128
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

ALPHAS = tuple(round(0.05 * i, 2) for i in range(21))
PUBLISHED = [  # LongMemEval_S, session level, the vendor rule (answer_session_ids, 500 questions)
    ("agentmemory BM25 + vector (all-MiniLM-L6-v2)", "0.952", "0.986", "0.879", "0.882"),
    ("agentmemory BM25 only (Porter stems, synonyms)", "0.862", "0.946", "-", "-"),
    ("MemPalace raw, vector only (all-MiniLM-L6-v2; a vendor's claim)", "0.966", "-", "-", "-"),
]
SESSION_COLUMNS = ("vendor R_any@5", "vendor R_any@10", "vendor NDCG@10", "vendor MRR",
                   "strict R_any@5", "strict R_all@5", "strict NDCG@10")
TURN_COLUMNS = ("R_any@5", "R_any@10", "R_all@10", "NDCG@10", "turn2session R_any@5")


def session_scores(ranked: list[str], vendor: list[str], official: list[str], corpus: list[str]) -> dict[str, float]:
    from memarch.benchmarks.metrics.longmemeval_official import evaluate_retrieval

    gold = set(vendor)
    first = next((r for r, s in enumerate(ranked, 1) if s in gold), None)
    v5, _, _ = evaluate_retrieval(ranked, vendor, corpus, 5)
    v10, _, vn10 = evaluate_retrieval(ranked, vendor, corpus, 10)
    o5, oa5, _ = evaluate_retrieval(ranked, official, corpus, 5)
    _, _, on10 = evaluate_retrieval(ranked, official, corpus, 10)
    return dict(zip(SESSION_COLUMNS, (v5, v10, vn10, 1.0 / first if first else 0.0, o5, oa5, on10)))


def turn_scores(ranked: list[str], gold: list[str], corpus: list[str]) -> dict[str, float]:
    from memarch.benchmarks.metrics.longmemeval_official import _turn2session, _turn2session_id, evaluate_retrieval

    a5, _, _ = evaluate_retrieval(ranked, gold, corpus, 5)
    a10, all10, n10 = evaluate_retrieval(ranked, gold, corpus, 10)
    gold_set = set(gold)
    labels = list({_turn2session_id(gold_set, d) for d in gold})
    t2s, _, _ = _turn2session([_turn2session_id(gold_set, d) for d in ranked], labels, len(corpus),
                              sum(1 for d in corpus if d in gold_set), 5)
    return dict(zip(TURN_COLUMNS, (a5, a10, all10, n10, t2s)))


def order(ids: list[str], scores: np.ndarray) -> list[str]:
    """Ids by score, ties in haystack order (a session published twice in a haystack ranked twice,
    as run_retrieval.py ranks its corpus)."""
    return [ids[i] for i in np.argsort(-scores, kind="stable")]


def per_question(dialogue, embedder, retrievers) -> dict:
    """Every ranking's scores for one dialogue (one question)."""
    from memarch.benchmarks.metrics.longmemeval_official import Corpus, _known
    from memarch.modules.encoders.turn import TurnEncoder
    from memarch.modules.retrievers._fusion import zscores
    from memarch.modules.stores.bm25 import BM25Index
    from memarch.modules.stores.lexical import tokenize
    from memarch.modules.stores.vector import VectorStore
    from memarch.pipeline.episodes import Query

    q = dialogue.questions[0]
    corpus = Corpus.of(dialogue)
    meta = q.metadata
    vendor = _known(meta.get("answer_sessions", []), corpus.session_id)
    official = _known(meta.get("official_session_gold", []), corpus.session_id)
    turn_gold = _known(meta.get("official_turn_gold", []), corpus.turn_id)
    sessions = [corpus.session_id[s.id] for s in dialogue.sessions]
    encoder = TurnEncoder(None)
    items = [it for s in dialogue.sessions for it in encoder.encode_free(s)]
    vecs = embedder.embed([it.text for it in items])
    qv = embedder.embed_one(q.text)
    cos = vecs @ qv
    episode_at = {s.id: j for j, s in enumerate(dialogue.sessions)}
    item_session = np.array([episode_at[it.episode_id] for it in items])
    user = np.array([it.fields.get("speaker") == "user" for it in items])
    terms = tokenize(q.text)

    def best(mask: np.ndarray) -> np.ndarray:
        out = np.full(len(sessions), -1.0)
        np.maximum.at(out, item_session[mask], cos[mask])
        return out

    docs = ["\n".join(f"{t.speaker}: {t.text}" for t in s.turns) for s in dialogue.sessions]
    bm25 = np.asarray(BM25Index([tokenize(d) for d in docs]).scores(terms), dtype=float)
    dense, dense_user = best(np.ones(len(items), bool)), best(user)
    row = {"id": q.id, "type": q.category, "strict": bool(meta.get("official_scored")), "session": {}, "turn": {}}
    score = lambda s: session_scores(order(sessions, s), vendor, official, sessions)  # noqa: E731
    row["session"]["bm25"] = score(bm25)
    row["session"]["dense max"] = score(dense)
    row["session"]["dense max, user turns"] = score(dense_user)
    zb, zd = zscores(bm25), zscores(dense)
    for a in ALPHAS:
        row["session"][f"zscore {a}"] = score(a * zb + (1 - a) * zd)
    if retrievers:
        resources = retrievers[0][1].resources
        store = VectorStore(resources)
        store.add(items)
        for name, retriever in retrievers:
            ranked = retriever.rank_sessions(Query(q.text, namespace="default"), store)
            got = [corpus.session_id[s] for s in ranked.sessions] if ranked else []
            row["session"][name] = session_scores(got, vendor, official, sessions)
    # the official turn corpus: user turns
    turn_ids = [corpus.turn_id[it.source_ids[0]] for it in items]
    u = np.flatnonzero(user)
    uids = [turn_ids[i] for i in u]
    ubm25 = np.asarray(BM25Index([tokenize(items[i].fields.get("turn_text", items[i].text)) for i in u]).scores(terms),
                       dtype=float)
    ucos = cos[u]
    tscore = lambda s: turn_scores(order(uids, s), turn_gold, list(corpus.user_turns))  # noqa: E731
    row["turn"]["bm25"] = tscore(ubm25)
    row["turn"]["dense"] = tscore(ucos)
    zb, zd = zscores(ubm25), zscores(ucos)
    for a in ALPHAS:
        row["turn"][f"zscore {a}"] = tscore(a * zb + (1 - a) * zd)
    return row


def mean_ci(values: list[float], boots: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    x = np.asarray(values, dtype=float)
    if not len(x):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), (boots, len(x)))].mean(axis=1)
    return float(x.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/longmemeval")
    ap.add_argument("--embedder", default="all-MiniLM-L6-v2")
    ap.add_argument("--instances", type=int, default=None, help="only the first N instances")
    ap.add_argument("--no-session-retriever", action="store_true")
    ap.add_argument("--json", default=None, help="also write every question's scores here")
    args = ap.parse_args(argv)

    from memarch.benchmarks.longmemeval import LongMemEval
    from memarch.modules.retrievers.session import SessionRetriever
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    bench = LongMemEval(args.data, variant="s", instances=args.instances)
    split_of = {d.namespace: name for name in ("search", "validation", "test") for d in bench.split(name).dialogues}
    embedder = Embedder(args.embedder)
    resources = Resources(embedder=embedder)
    retrievers = [] if args.no_session_retriever else [
        ("session retriever (defaults)", SessionRetriever(resources)),
        ("session retriever, stem 1", SessionRetriever(resources, stem=1))]
    rows = []
    for i, dialogue in enumerate(bench.dialogues, 1):
        row = per_question(dialogue, embedder, retrievers)
        row["split"] = split_of.get(dialogue.namespace, "?")
        rows.append(row)
        if i % 50 == 0:
            print(f"  {i} / {len(bench.dialogues)} questions, {time.perf_counter() - t0:.0f} s "
                  f"({embedder.computed} vectors computed, the rest cached)", file=sys.stderr, flush=True)

    def choose(level: str, metric: str, tie: str) -> float:
        search = [r for r in rows if r["split"] == "search" and (level == "session" or r["strict"])]
        return max(ALPHAS, key=lambda a: (np.mean([r[level][f"zscore {a}"][metric] for r in search]),
                                          np.mean([r[level][f"zscore {a}"][tie] for r in search]), -abs(a - 0.5)))

    a_session = choose("session", "vendor R_any@5", "vendor NDCG@10")
    a_turn = choose("turn", "R_any@5", "NDCG@10")
    print(f"LongMemEval_S, {len(rows)} questions (strict {sum(r['strict'] for r in rows)}), embedder "
          f"{args.embedder}, {time.perf_counter() - t0:.0f} s, {embedder.computed} vectors computed; load "
          f"{load:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"alpha (BM25 share) chosen on the search split: session {a_session}, turn {a_turn}")
    session_rows = ["bm25", "dense max", "dense max, user turns", f"zscore {a_session}"] + [n for n, _ in retrievers]
    for split in ("all", "test"):
        chosen = [r for r in rows if split == "all" or r["split"] == split]
        strict = [r for r in chosen if r["strict"]]
        print(f"\nsession level, {split} ({len(chosen)} questions; strict {len(strict)}); 95% CI on vendor R_any@5")
        print("| ranking | " + " | ".join(SESSION_COLUMNS) + " |")
        print("|---|" + "---|" * len(SESSION_COLUMNS))
        for name in session_rows:
            cells = []
            for col in SESSION_COLUMNS:
                pool = strict if col.startswith("strict") else chosen
                m, lo, hi = mean_ci([r["session"][name][col] for r in pool])
                cells.append(f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if col == "vendor R_any@5" else f"{m:.3f}")
            label = f"zscore(bm25, dense max), alpha {a_session}" if name.startswith("zscore") else name
            print(f"| {label} | " + " | ".join(cells) + " |")
        if split == "all":
            for name, *vals in PUBLISHED:
                print(f"| published: {name} | " + " | ".join(vals) + " | - | - | - |")
        print(f"\nturn level, official user-turn corpus, {split}, strict ({len(strict)} questions)")
        print("| ranking | " + " | ".join(TURN_COLUMNS) + " |")
        print("|---|" + "---|" * len(TURN_COLUMNS))
        for name in ("bm25", "dense", f"zscore {a_turn}"):
            label = f"zscore(bm25, dense), alpha {a_turn}" if name.startswith("zscore") else name
            print(f"| {label} | " + " | ".join(f"{np.mean([r['turn'][name][c] for r in strict]):.3f}"
                                               for c in TURN_COLUMNS) + " |")
    best = f"zscore {a_session}"
    print(f"\nper type, session level, vendor R_any@5, all questions: bm25 / dense max / zscore {a_session}")
    for t in sorted({r["type"] for r in rows}):
        sub = [r for r in rows if r["type"] == t]
        print(f"  {t:<28} n={len(sub):>3} " + " ".join(
            f"{np.mean([r['session'][n]['vendor R_any@5'] for r in sub]):.3f}" for n in ("bm25", "dense max", best)))
    if args.json:
        from memarch.pipeline.files import atomic_write_json

        atomic_write_json(args.json, {"alpha_session": a_session, "alpha_turn": a_turn, "rows": rows}, indent=None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
