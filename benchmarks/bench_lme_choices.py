"""What a faster path through the model costs on LongMemEval, measured side by side: one architecture
(memp by default) evaluated with each embedder on the oracle file's search split and on a fixed
subset of LongMemEval_S's search split (its first N instances), cold (a fresh embedding cache per
embedder, so each row pays its own embedding), with paired 95% bootstrap CIs of each embedder's
difference from the first one on the per-question scores (span_or_evidence, session hit@5) and the
official strict session recall_any@5 beside them. Nothing here is tuned: the rows are choices of
what goes through the model, reported, and the search split only.

Usage::

    python benchmarks/bench_lme_choices.py --data ../shared/data/longmemeval --instances 40 \\
        --embedders all-MiniLM-L6-v2,all-MiniLM-L6-v2-128,all-MiniLM-L6-v2-onnx-int8
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MEMP = {"schema_version": "1", "encode": ["turn", "event"], "store": "vector", "retrieve": "hybrid",
        "manage": "json_full"}
PAIRED = ("span_or_evidence", "session_hit@5", "evidence_recall")


def paired_ci(a: list[float], b: list[float], seed: int = 0, draws: int = 4000) -> tuple[float, float, float]:
    """Mean of b - a and its 95% percentile bootstrap interval over questions."""
    import numpy as np

    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(draws, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def run(arch: dict, bench, split: str, limit: int | None, embedder_name: str) -> dict:
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    with tempfile.TemporaryDirectory() as cache:
        resources = Resources(embedder=Embedder(embedder_name, cache_dir=cache), cache_dir=cache)
        t = time.perf_counter()
        result = evaluate(arch, bench, split=split, limit=limit, resources=resources)
        wall = time.perf_counter() - t
    if result.failed:
        raise SystemExit(f"{embedder_name}: trial failed: {result.error}")
    per_q = {o.query_id: o.evidence for o in result.outcomes}
    strict = result.metadata.get("official", {}).get("strict", {})
    return {"embedder": embedder_name, "wall_s": wall, "embed_ahead_s": result.cost.get("embed_ahead_s", 0.0),
            "texts": result.cost.get("embed_ahead_computed", 0.0) + result.cost.get("embeddings_computed", 0.0),
            "score": result.score, "scores": {m: result.scores.get(m) for m in PAIRED},
            "official_session_recall_any@5": strict.get("session", {}).get("recall_any@5"),
            "official_user_turn_recall_any@5": strict.get("user_turn", {}).get("recall_any@5"),
            "official_n": strict.get("n"), "per_question": per_q}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/longmemeval")
    ap.add_argument("--instances", type=int, default=40, help="first N instances of _S's search split")
    ap.add_argument("--embedders", default="all-MiniLM-L6-v2,all-MiniLM-L6-v2-128,all-MiniLM-L6-v2-onnx-int8")
    ap.add_argument("--architecture", default=None, help="an architecture JSON file (default: memp)")
    ap.add_argument("--variants", default="oracle,s")
    ap.add_argument("--json", default=None, help="write every row here")
    args = ap.parse_args()
    from memarch.benchmarks import get_benchmark

    arch = json.loads(Path(args.architecture).read_text()) if args.architecture else MEMP
    embedders = args.embedders.split(",")
    out = {}
    print(f"load average before {os.getloadavg()[0]:.2f}", flush=True)
    for variant in args.variants.split(","):
        bench = get_benchmark("longmemeval", data=args.data, variant=variant)
        limit = None if variant == "oracle" else args.instances
        rows = [run(arch, bench, "search", limit, e) for e in embedders]
        out[variant] = rows
        base = rows[0]
        print(f"\nLongMemEval {variant}, search split{'' if limit is None else f', first {limit} instances'} "
              f"({len(base['per_question'])} questions), cold, one row per embedder:")
        print(f"  {'embedder':<28} {'texts':>7} {'embed s':>8} {'wall s':>8} {'span_or_ev':>10} {'sess hit@5':>10} "
              f"{'off. sess R_any@5':>17} {'off. user-turn R_any@5':>22}")
        for r in rows:
            print(f"  {r['embedder']:<28} {r['texts']:>7.0f} {r['embed_ahead_s']:>8.1f} {r['wall_s']:>8.1f} "
                  f"{r['scores']['span_or_evidence']:>10.4f} {r['scores']['session_hit@5']:>10.4f} "
                  f"{r['official_session_recall_any@5'] or 0:>17.4f} {r['official_user_turn_recall_any@5'] or 0:>22.4f}")
        for r in rows[1:]:
            qs = [q for q in base["per_question"] if q in r["per_question"]]
            cells = []
            for m in PAIRED:
                pairs = [(base["per_question"][q].get(m), r["per_question"][q].get(m)) for q in qs]
                pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
                mean, lo, hi = paired_ci([a for a, _ in pairs], [b for _, b in pairs])
                cells.append(f"{m} {mean:+.4f} [{lo:+.4f}, {hi:+.4f}] (n={len(pairs)})")
            print(f"  {r['embedder']} - {base['embedder']}: " + "; ".join(cells) +
                  f"; wall {r['wall_s'] / base['wall_s']:.2f}x")
    print(f"\nload average after {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({v: [{k: x for k, x in r.items() if k != "per_question"} for r in rows]
                                               for v, rows in out.items()}, indent=1))


if __name__ == "__main__":
    main()
