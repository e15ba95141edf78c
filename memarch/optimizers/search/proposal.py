"""`Proposal`: an architecture a strategy wants evaluated next, with who proposed it and why —
kept with the trial so the ledger, MLflow and the round artifacts can trace every edit."""
from __future__ import annotations

from dataclasses import dataclass

from memarch.pipeline.architecture import Architecture


@dataclass(frozen=True)
class Proposal:
    """One proposed architecture.

    Example::

        Proposal(Architecture(("turn",), "vector", "mmr", "lightweight"), role="exploit",
                 edit="retrieve: hybrid -> mmr", parent="turn|vector|hybrid|lightweight")
    """

    architecture: Architecture
    role: str  # warm_start / exploit / explore / lm / bruteforce
    edit: str = ""  # e.g. "retrieve: hybrid -> mmr"
    parent: str = ""  # key of the architecture the edit was applied to
    reason: str = ""

    def attrs(self) -> dict[str, str]:
        """What a trial keeps about its proposal (trial user attrs)."""
        return {"role": self.role, "edit": self.edit, "parent": self.parent, "reason": self.reason[:300]}
