"""The progress bar of `compile` and `compare` over a study's trials."""
from __future__ import annotations


class Progress:
    """A tqdm bar over evaluated trials (stderr), as an ``on_trial`` callback: advances by full
    evaluations (a pruned trial by its share of dialogues, so the ETA holds with a pruner) and shows
    the best complete score, the trials pruned, the embeddings computed (cache misses) and the
    embedding cache's hit rate over the study (texts found in memory or on disk / texts asked for)."""

    def __init__(self, total: int, desc: str):
        from tqdm import tqdm

        # Full evaluations with one decimal: pruned shares add up to floats (3.0000000000000004 otherwise).
        self.bar = tqdm(total=total, desc=desc, unit="trial", leave=False,
                        bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")
        self.best = float("-inf")
        self.pruned = 0
        self.computed = 0
        self.requested = 0

    def __call__(self, number, arch, result) -> None:
        seen = result.metadata.get("instances") or {}
        share = seen["done"] / seen["total"] if seen.get("total") else 1.0
        if share >= 1:
            self.best = max(self.best, result.score)
        else:
            self.pruned += 1
        self.computed += int(result.cost.get("embeddings_computed", 0) or 0)
        self.requested += int(result.cost.get("embeddings_requested", 0) or 0)
        self.bar.set_postfix_str(self.postfix())
        self.bar.update(round(share, 4))

    def postfix(self) -> str:
        best = f"{self.best:.3f}" if self.best > float("-inf") else "none complete"
        hits = f" ({1 - self.computed / self.requested:.0%} cached)" if self.requested else ""
        return (f"best {best}" + (f", pruned {self.pruned}" if self.pruned else "")
                + f", new embeddings {self.computed}{hits}")

    def close(self) -> None:
        self.bar.close()
