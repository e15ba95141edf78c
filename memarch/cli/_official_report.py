"""The lines `memarch evaluate` prints for a benchmark with an official report
(``Benchmark.official_report``, e.g. LongMemEval): the per-category table as the official scripts
print it (abstention inside its base type, then task-averaged, overall and abstention apart) and
the official retrieval metrics, beside memarch's own."""
from __future__ import annotations

from typing import Any

# The columns printed (the paper's tables: @5 and @10; every k is in ``--json``, metadata.official).
COLUMNS = ("recall_any@5", "recall_all@5", "ndcg_any@5", "recall_any@10", "recall_all@10", "ndcg_any@10")
SHORT = {"recall_any": "R_any", "recall_all": "R_all", "ndcg_any": "NDCG"}
ROWS = {"strict": ("session", "turn", "turn2session", "user_turn", "user_turn2session"),
        "non_abs": ("session", "turn", "turn2session", "user_turn", "user_turn2session"),
        "vendor": ("vendor_session",)}
AVERAGE = {"strict": "strict (official: no _abs, a user gold turn)", "non_abs": "non-abstention",
           "vendor": "vendor rule (gold answer_session_ids, every question)"}


def print_categories(report: dict[str, Any]) -> None:
    """Per type (n), task-averaged, overall, abstention (or how many an LM-free run skipped)."""
    print("  per type (abstention inside its base type, as the official print_qa_metrics.py):")
    for cat, row in report["per_type"].items():
        print(f"    {cat:<28} {row['score']:.4f}  (n={row['n']})")
    print(f"    {'task-averaged':<28} {report['task_averaged']:.4f}")
    print(f"    {'overall':<28} {report['overall']:.4f}  (n={report['n']})")
    ab = report["abstention"]
    score = f"{ab['score']:.4f}" if ab["score"] is not None else "-"
    skipped = f"; {ab['skipped']} skipped: no gold answer, scored only with an LM reader" if ab["skipped"] else ""
    print(f"    {'abstention':<28} {score:<6}  (n={ab['n']}{skipped})")


def print_official(official: dict[str, Any], top_k: Any, context_budget: Any) -> None:
    """The official retrieval metrics per average and level, @5 and @10."""
    read = f"{top_k} items" + (f" cut at {context_budget} words" if context_budget else "")
    print(f"  official retrieval metrics (LongMemEval eval_utils.py; the run: the turns the read's items cover, "
          f"{read}: @k needs a read that deep; user_*: the run's user turns only, as the official keys):")
    head = [f"{SHORT[m.split('@')[0]]}@{m.split('@')[1]}" for m in COLUMNS]
    print(f"    {'':<20} {'n':>4} " + " ".join(f"{h:>9}" for h in head))
    for average, levels in ROWS.items():
        block = official.get(average, {})
        print(f"    {AVERAGE[average]}")
        for level in levels:
            values = block.get(level)
            if values is None:
                continue
            print(f"    {level:<20} {block['n']:>4} " + " ".join(f"{values[m]:>9.4f}" for m in COLUMNS))
