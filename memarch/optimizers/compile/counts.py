"""The run's counts in words a user can read: what each count is, and the pruner's line (its name,
how many trials it stopped, even 0, and what they cost in full evaluations)."""
from __future__ import annotations

# What each count of a run counts (``CompileReport.counts``: the search's, the run's, the sampler's).
COUNT_WORDS = {
    "invalid": "invalid draws (pruned before any evaluation)",
    "repeats": "repeated draws of an evaluated architecture (not evaluated again)",
    "repeats_in_study": "repeated draws in the whole study, every worker's",
    "failed": "failed evaluations",
    "unstaged": "trials the pruner could not stop (the evaluator scores whole splits only)",
    "test_failed": "failed test evaluations of the pick",
    "validation_failed": "finalists whose validation evaluation failed",
    "dropped_proposals": "proposals dropped (invalid, or evaluated already)",
    "repaired": "proposals repaired into valid architectures",
    "repair_failures": "proposals that could not be repaired",
    "lm_proposals_repaired": "LM proposals repaired into valid architectures",
    "lm_repair_failures": "LM proposals that could not be repaired",
    "lm_fallbacks": "LM calls that fell back to the LM-free rule",
    "diagnoser_lm_fallbacks": "diagnoses that fell back to the rule-based diagnoser",
    "proposer_lm_fallbacks": "proposals that fell back to the rule-based proposer",
    "unrecorded_trials": "trials without a recorded result (a sampler could not read them)",
    "fallback_trials": "trials drawn by the sampler's random fallback",
    "gp_fallback": "GP draws replaced by random draws (the GP repeated a proposal)",
    "gp_proposals": "GP proposals",
    "overrides": "trials the hybrid's guided diagnosis took over from its classical sampler",
    "override_moves": "hybrid overrides that were trace-backed knob or module moves",
    "override_edits": "hybrid overrides that edited the module the failures were attributed to",
    "overrides_declined": "hybrid moves declined by its bound on overrides",
    "classical_trials": "hybrid trials its classical sampler drew",
    "snapped": "draws snapped to the nearest architecture of the landscape",
    "parents_drawn": "archive parents drawn",
    "exhausted_parents": "archive parents with no new child left",
    "no_memory_evaluations": "evaluations of the no-memory agent",
    "no_memory_fallbacks": "no-memory scores that fell back to 0",
    "prompts_skipped": "prompt optimisations skipped (no LM predictor to optimise)",
    "prompts_kept_original": "prompt optimisations whose prompts were not kept (validation dropped or it failed)",
}
# Counted for the report and MLflow, said elsewhere or by the pruner's line.
NOT_LISTED = ("evaluated", "rounds", "pruned", "pruned_in_study", "pruned_cost_pct")
NOTHING_COUNTED = "no invalid draws, repeats or failures"


def count_phrase(name: str, value: int) -> str:
    """``"2 invalid draws (pruned before any evaluation)"``; an unknown count by its name."""
    return f"{value} {COUNT_WORDS.get(name, name.replace('_', ' '))}"


def pruner_phrase(pruner: str | None, counts: dict[str, int]) -> str | None:
    """The pruner's line: its name, the trials it stopped (0 too), and what they cost; None with no pruner."""
    if not pruner or pruner == "none":
        return None
    stopped = int(counts.get("pruned_in_study", counts.get("pruned", 0)) or 0)
    line = f"pruner {pruner}: {stopped} trial{'s' if stopped != 1 else ''} stopped early"
    if stopped:
        cost = counts.get("pruned_cost_pct", 0) / 100
        line += f", which cost {cost:.2f} full evaluations in all (the budget counts full evaluations)"
    return line


def describe_counts(counts: dict[str, int], *, pruner: str | None = None) -> str:
    """Every non-zero count in words, then the pruner's line; ``"no invalid draws, repeats or
    failures"`` when there is nothing to say."""
    parts = [count_phrase(k, v) for k, v in sorted(counts.items()) if v and k not in NOT_LISTED]
    pruned = pruner_phrase(pruner, counts)
    if pruned:
        parts.append(pruned)
    return "; ".join(parts) or NOTHING_COUNTED
