"""Issue 33, in a memory: the `session` retriever (and its `stem` knob) read by memp on LoCoMo's dialogue
splits, LM-free, answer_span at 200 words, MiniLM. The same write pass for every row (memp's encoders,
store and manager); only the reader differs. Each row against the row it changes, paired bootstrap 95%
CI over the questions; evidence recall in the 200-word context and session / turn Hit@1 beside it.

    .venv/bin/python benchmarks/bench_session_memory.py --data ../shared/data
    .venv/bin/python benchmarks/bench_session_memory.py --data ../shared/data --splits search,validation

Nothing is tuned here: the session retriever's weights and its `stem` setting were chosen for session
Hit@1 on other data (benchmarks/bench_session_retrieval.py: the search-split conversations and
leave-one-conversation-out); pass `--splits search,validation` to look before reading test once.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_full_space import paired  # noqa: E402  (a sibling script)

MEMP = (("turn", "event"), "vector", "hybrid", "json_full")
LEVERS = {"retrieve.pack": 1, "retrieve.pack_compact": 1, "retrieve.time_weight": 1.0, "retrieve.recency_weight": 0.5}
# (name, retriever, params, the row it is compared with)
ROWS = [
    ("memp", "hybrid", {}, None),
    ("memp, session retriever (defaults)", "session", {}, "memp"),
    ("memp, session retriever, stem 1", "session", {"retrieve.stem": 1}, "memp, session retriever (defaults)"),
    ("memp + levers", "hybrid", LEVERS, None),
    ("memp + levers, session retriever (defaults)", "session", LEVERS, "memp + levers"),
    ("memp + levers, session retriever, stem 1", "session", {**LEVERS, "retrieve.stem": 1},
     "memp + levers, session retriever (defaults)"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data", help="shared data directory (locomo/ inside)")
    ap.add_argument("--splits", default="search,validation,test")
    args = ap.parse_args()
    locomo = Path(args.data) / "locomo" / "locomo10.json"
    if not locomo.exists():
        print(f"no LoCoMo at {locomo}; skipped")
        return 0
    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.pipeline.architecture import Architecture

    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    answers = BenchmarkEvaluator("locomo", data_path=str(locomo), context_budget=200,
                                 knobs={"split_by": "dialogue"}, metric="answer_span")
    evidence = BenchmarkEvaluator("locomo", data_path=str(locomo), context_budget=200,
                                  knobs={"split_by": "dialogue"}, metric="evidence_recall")
    load0, t0 = os.getloadavg()[0], time.time()
    got: dict[tuple[str, str], tuple[dict, float, float, dict]] = {}
    for name, retriever, params, _ in ROWS:
        arch = Architecture(MEMP[0], MEMP[1], retriever, MEMP[3], params=params)
        for split in splits:
            r = answers(arch, split)
            e = evidence(arch, split)
            if r.failed or e.failed:
                sys.exit(f"{arch.key()} on {split} failed: {r.error or e.error}")
            got[name, split] = ({o.query_id: o.score for o in r.outcomes}, r.score, e.score, r.scores)
            print(f"  {name} @ {split}: answer_span {r.score:.4f}, evidence recall {e.score:.4f}", flush=True)
    print(f"\n{time.time() - t0:.0f} s, load {load0:.2f} -> {os.getloadavg()[0]:.2f}\n")
    head = " | ".join(f"{s} answer_span [paired 95% CI against the row it changes]" for s in splits)
    print(f"| architecture | {head} | " + " | ".join(f"{s} evidence recall" for s in splits)
          + f" | {splits[-1]} session Hit@1 / turn Hit@1 |")
    print("|---" * (2 + 2 * len(splits)) + "|")
    for name, _, _, base in ROWS:
        cells = []
        for split in splits:
            per, score, _, _ = got[name, split]
            cell = f"{score:.4f}"
            if base:
                d, lo, hi = paired(per, got[base, split][0])
                cell += f" ({d:+.4f} [{lo:+.4f}, {hi:+.4f}])"
            cells.append(cell)
        scores = got[name, splits[-1]][3]
        print(f"| {name} | " + " | ".join(cells) + " | "
              + " | ".join(f"{got[name, s][2]:.3f}" for s in splits)
              + f" | {scores.get('session_hit@1', float('nan')):.3f} / {scores.get('hit@1', float('nan')):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
