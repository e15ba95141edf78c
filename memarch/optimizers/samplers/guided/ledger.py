"""The experience ledger: every coordinate edit the guided search tried — condition (the parent
architecture), edit, evidence, status active / pending / refuted — and the dead ends it must never
propose again. Rebuilt from the study's history, so it survives resume and is shared by workers."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from memarch.optimizers.search.champion import ALPHA, sign_test
from memarch.optimizers.search.history import History

ACTIVE, PENDING, REFUTED, INERT = "active", "pending", "refuted", "inert"
FIELDS = ("encode", "store", "retrieve", "manage")


@dataclass
class LedgerEntry:
    condition: str  # the parent architecture's key
    edit: str  # "retrieve: hybrid -> mmr" (full from/to values: the dead-end key)
    evidence: dict = field(default_factory=dict)  # trial numbers, scores, delta, p-value
    status: str = PENDING  # active (significant win) / pending / refuted / inert (same outcomes)


class Ledger:
    """Edits and what they did.

    Example::

        ledger = Ledger.from_history(history)
        ledger.is_dead_end("retrieve: hybrid -> mmr")
    """

    def __init__(self, entries: list[LedgerEntry] | None = None):
        self.entries = list(entries or [])

    @classmethod
    def from_history(cls, history: History, alpha: float = ALPHA) -> "Ledger":
        by_key = {}
        for r in history.records:
            by_key.setdefault(r.architecture.key(), r)
        entries = []
        for r in sorted(history.records + history.partial, key=lambda r: r.number):
            if not r.edit or not r.parent:
                continue
            parent = by_key.get(r.parent)
            if parent is not None and r.fidelity < 1:
                entries.append(_pruned_entry(r, parent))
                continue
            if parent is None:
                entries.append(LedgerEntry(r.parent, r.edit, {"trial": r.number, "score": r.score}))
                continue
            delta = r.score - parent.score
            p = sign_test(r, parent, history)
            wins, losses, shared = history.paired(r, parent)
            if shared and wins == losses == 0 and delta == 0:
                status = INERT  # the same outcome on every query: the edit changed nothing measured
            elif delta > 0 and (p is None or p < alpha):
                status = ACTIVE
            elif delta > 0:
                status = PENDING  # better on average, not yet significant
            else:
                status = REFUTED
            entries.append(LedgerEntry(r.parent, r.edit, {
                "trial": r.number, "parent_trial": parent.number, "score": round(r.score, 4),
                "parent_score": round(parent.score, 4), "delta": round(delta, 4),
                "p_value": None if p is None else round(p, 4)}, status))
        return cls(entries)

    def dead_ends(self) -> set[str]:
        """Edits never to propose again: refuted ones, and inert ones (they changed nothing)."""
        cached = self.__dict__.get("_dead")
        if cached is None or cached[0] != len(self.entries):
            cached = (len(self.entries), {e.edit for e in self.entries if e.status in (REFUTED, INERT)})
            self.__dict__["_dead"] = cached
        return cached[1]

    def _measured_one_module_edits(self) -> list[tuple[str, str]]:
        """(module, status) of every one-module edit measured against its parent (a knob move,
        ``retrieve.top_k: 4 -> 8``, is not a module edit: an inert knob says nothing of its module)."""
        out = []
        for e in self.entries:
            field = e.edit.split(":", 1)[0]
            knob = "." in e.edit.split(" ", 1)[0]
            if ";" not in e.edit and "parent_trial" in e.evidence and field in FIELDS and not knob:
                out.append((field, e.status))
        return out

    def moved_fields(self) -> set[str]:
        """Modules at least one one-module edit of which changed an outcome."""
        return {f for f, status in self._measured_one_module_edits() if status != INERT}

    def inert_fields(self, min_evidence: int = 2) -> set[str]:
        """Modules whose one-module edits have all changed nothing measured (at least
        ``min_evidence`` of them, none that changed an outcome): trials spent there are wasted, so
        the proposer never edits them again."""
        counts: dict[str, int] = {}
        for f, status in self._measured_one_module_edits():
            if status == INERT:
                counts[f] = counts.get(f, 0) + 1
        return {f for f, n in counts.items() if n >= min_evidence} - self.moved_fields()

    def inert_knobs(self) -> set[str]:
        """Knobs (``retrieve.top_k``) whose measured moves all changed nothing, none that did."""
        moves: dict[str, set[bool]] = {}
        for e in self.entries:
            head = e.edit.split(": ", 1)[0]
            if "." in head and ";" not in e.edit and "parent_trial" in e.evidence:
                moves.setdefault(head, set()).add(e.status == INERT)
        return {k for k, inert in moves.items() if inert == {True}}

    def is_dead_end(self, edit: str) -> bool:
        return edit in self.dead_ends()

    def to_dict(self) -> list[dict]:
        return [asdict(e) for e in self.entries]

    def summary(self, last: int = 12) -> str:
        """Text for the LM proposer: the most recent edits with their status."""
        lines = [f"[{e.status}] {e.edit} (from {e.condition}; delta {e.evidence.get('delta', '?')})"
                 for e in self.entries[-last:]]
        return "\n".join(lines) or "(empty)"


def _pruned_entry(child, parent) -> LedgerEntry:
    """A child the pruner stopped: its edit compared with the parent on the questions it saw
    (refuted unless it was ahead there)."""
    mine, theirs = child.scores_by_query(), parent.scores_by_query()
    shared = [q for q in mine if q in theirs]
    delta = (sum(mine[q] - theirs[q] for q in shared) / len(shared)) if shared else 0.0
    return LedgerEntry(child.parent, child.edit, {
        "trial": child.number, "parent_trial": parent.number, "score": round(child.score, 4),
        "parent_score": round(parent.score, 4), "delta": round(delta, 4), "p_value": None,
        "partial": round(child.fidelity, 4), "shared_questions": len(shared)}, REFUTED if delta <= 0 else PENDING)
