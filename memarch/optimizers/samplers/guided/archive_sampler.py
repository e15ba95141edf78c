"""`ArchiveSampler`: ALMA's open-ended archive search as an Optuna sampler. Each round draws up to K
parents from the study's archive (`Archive`: score and visits) and mutates each with the guided
machinery — that parent's diagnosis -> textual gradient -> one edit — recording parent -> child."""
from __future__ import annotations

from memarch.optimizers.search.optuna_internals import whole_study

import logging
import uuid
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from memarch.optimizers.search import optuna_internals
from memarch.optimizers.samplers.guided.archive import (NO_MEMORY_ATTR, TEMPERATURE, Archive, record_round,
                                               sample_parents, set_no_memory)
from memarch.optimizers.samplers.guided.edits import describe
from memarch.optimizers.search.pareto import pareto_front
from memarch.optimizers.samplers.guided.sampler import GuidedSampler
from memarch.optimizers.search.proposal import Proposal
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.samplers import BaseSampler
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from memarch.optimizers.search.history import History, TrialRecord
    from memarch.optimizers.search.param_space import ParamSpace
    from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)

ROLE = "archive"


class ArchiveSampler(GuidedSampler):
    """ALMA's archive search over whole architectures, for any memarch or plain Optuna study.

    Every evaluated architecture stays in the archive. A round draws ``k`` parents (repeats dropped)
    with probability softmax(T=0.5) of sigmoid(score - no-memory score) - 0.5 * log1p(visits),
    visits being how often an architecture was already drawn as a parent and given a child by any
    worker; each parent is diagnosed, its failures turned into a textual gradient (diagnoser LM with
    ``meta_lm``, else the rules) and edited once by the guided proposer (LM or attribution rules). The child trial
    keeps its lineage as user attrs (``parent``, ``parent_trial``, ``edit``, ``role="archive"``);
    each round's parents and children are study user attrs (``archive_round:*``) — the visits —
    and its full decision is in ``rounds`` (logged to MLflow as round artifacts).

    Example::

        import optuna
        from memarch.optimizers.samplers.guided.archive_sampler import ArchiveSampler

        sampler = ArchiveSampler(space, k=3, seed=0, no_memory=0.0)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(trial_function, n_trials=30)   # it stores results with record_result

    Args:
        space: a `ParamSpace`, an `ArchitectureSpace` or a family name.
        k: parents per round (each gives at most one child).
        meta_lm: the diagnoser and proposer LM (None: the LM-free rules).
        seed: seed of the parent draws and of the default independent sampler.
        no_memory: the no-memory score on the search data — a number, or a callable returning a
            number or a `TrialResult` (evaluated once, at the first round, then kept in the study).
            A study that already holds one (``no_memory_objective``) keeps it; without either, 0.
        temperature: softmax temperature (0.5 in ALMA).
        min_history, independent_sampler, objectives: as in `GuidedSampler`.
    """

    def __init__(self, space: "ParamSpace | ArchitectureSpace | str", *, k: int = 3, meta_lm: Any = None,
                 seed: int | None = None, no_memory: "float | Callable[[], Any] | None" = None,
                 temperature: float = TEMPERATURE, min_history: int | None = None,
                 independent_sampler: "BaseSampler | None" = None, objectives: tuple[str, ...] | None = None):
        super().__init__(space, k=k, meta_lm=meta_lm, seed=seed, min_history=min_history,
                         independent_sampler=independent_sampler, objectives=objectives)
        self.no_memory = no_memory
        self.temperature = float(temperature)
        self.tag = uuid.uuid4().hex[:8]  # this worker's round keys in the study
        self._rng = np.random.default_rng(seed)
        self._study: "Study | None" = None
        self._parent_trial: dict[str, int] = {}  # queued child key -> its parent's trial number
        self._empty_at: tuple | None = None  # (archive size, held keys) of the last round with no child
        self.parents_drawn = 0
        self.exhausted_parents = 0  # parents with no untried edit left
        self.no_memory_evaluations = 0
        self.no_memory_fallbacks = 0  # the no-memory score could not be had: 0 was used

    def sample_relative(self, study: "Study", trial: "FrozenTrial",
                        search_space: dict[str, "BaseDistribution"]) -> dict[str, Any]:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        self._study = study  # `_plan` reads and writes the archive kept in the study
        return super().sample_relative(study, trial, search_space)

    # -- rounds ---------------------------------------------------------------------------------------
    def _plan(self, history: "History", held: set[str], objectives: tuple[str, ...]) -> None:
        study = self._study
        assert study is not None
        state = (len(history), frozenset(held))
        if state == self._empty_at:
            return  # nothing reachable was left and nothing changed since: the independent sampler goes on
        self._ensure_no_memory(study)
        archive = Archive.from_study(study, history=history)
        probs = archive.probabilities(self.temperature)
        drawn = sample_parents(self._rng, probs, self.k)
        self.parents_drawn += len(drawn)
        space = self.space.space
        round_state = self.planner.round_state(history, space)  # the guided round's steps, per parent
        ledger, champion = round_state.ledger, round_state.champion
        front = pareto_front(history.records)
        taken = set(held)
        fell_back = self.planner.fallback_counts()  # used fallbacks, not retries that succeeded
        proposals, decisions = [], []
        for i in drawn:
            parent = archive.records[i]
            diagnosis, gradient = self.planner.gradient_for(parent, space, round_state, history.tried() | taken)
            made = self.planner.proposals_for(parent, history, space, round_state, front, diagnosis, gradient,
                                              k=1, taken=taken)
            self.dropped.extend(self.planner.proposer.dropped)
            decision = {"architecture": parent.architecture.key(), "trial": parent.number,
                        "score": parent.score, "visits": archive.visits.get(parent.architecture.key(), 0),
                        "p": float(probs[i]), "diagnosis": diagnosis.to_dict(),
                        "gradient": gradient.model_dump(), "child": None}
            if not made:
                # The proposer restarts from every archive member when the parent has no untried
                # edit, so nothing untried is one edit away from the archive: the others get none either.
                self.exhausted_parents += 1
                logger.info("archive: no untried architecture is one edit away from the archive (parent %s)",
                            parent.architecture.key())
                decisions.append(decision)
                break
            else:
                child = made[0].architecture
                p = Proposal(child, role=ROLE, edit=describe(parent.architecture, child),
                             parent=parent.architecture.key(), reason=f"{made[0].role}: {made[0].reason}")
                proposals.append((p, parent.number))
                taken.add(child.key())
                decision.update(child=child.key(), edit=p.edit, proposer_role=made[0].role)
            decisions.append(decision)
        index = len(self.rounds)
        if not proposals:
            self._empty_at = state
        else:  # a visit is a parent drawn and given a child: what the archive keeps in the study
            record_round(study, self.tag, index, {
                "parents": [p.parent for p, _ in proposals],
                "children": [{"parent": p.parent, "child": p.architecture.key(), "edit": p.edit} for p, _ in proposals],
                "after_trials": len(history)})
        self.rounds.append({
            "round": index, "strategy": ROLE, "after_trials": len(history),
            "no_memory": archive.no_memory, "no_memory_source": archive.no_memory_source,
            "temperature": self.temperature, "parents": decisions,
            "archive": [{"architecture": r.architecture.key(), "score": r.score, "visits": v, "p": float(q)}
                        for r, v, q in zip(archive.records, archive.visit_counts(), probs)],
            "gradient": decisions[0]["gradient"] if decisions else None,
            "proposals": [{"architecture": p.architecture.key(), "role": p.role, "edit": p.edit, "parent": p.parent,
                           "parent_trial": n} for p, n in proposals],
            "ledger": ledger.to_dict(), "champion": champion.architecture.key() if champion else None,
            "objectives": list(objectives),
            "lm_fallbacks": self.planner.fallbacks_since(fell_back)})
        self._queue = [p for p, _ in proposals]
        self._parent_trial = {p.architecture.key(): n for p, n in proposals}

    def _ensure_no_memory(self, study: "Study") -> None:
        """The no-memory score, once per study: what the study holds, else ``no_memory``."""
        if NO_MEMORY_ATTR in study.user_attrs or self.no_memory is None:
            return
        value, source = self.no_memory, "given"
        if callable(value):
            self.no_memory_evaluations += 1
            try:
                value, source = value(), "the no-memory agent on the search data"
            except Exception as exc:  # noqa: BLE001 — shown and counted, the search goes on at 0
                logger.warning("archive: the no-memory baseline failed (%s: %s); gains are measured from 0",
                               type(exc).__name__, exc)
                self.no_memory_fallbacks += 1
                return
        if isinstance(value, TrialResult):  # what the no-memory agent's evaluation returns
            if value.failed:
                logger.warning("archive: the no-memory baseline failed (%s); gains are measured from 0", value.error)
                self.no_memory_fallbacks += 1
                return
            value = value.score
        set_no_memory(study, float(value), source)

    def _annotate(self, study: "Study", trial: "FrozenTrial", p: Proposal) -> None:
        super()._annotate(study, trial, p)
        storage, tid = optuna_internals.storage_of(study), optuna_internals.trial_id(trial)
        lineage = {"role": p.role, "edit": p.edit, "parent": p.parent,
                   "parent_trial": self._parent_trial.get(p.architecture.key())}
        for name, value in lineage.items():
            storage.set_trial_user_attr(tid, name, value)

    def stats(self) -> dict[str, int]:
        return {**super().stats(), "parents_drawn": self.parents_drawn, "exhausted_parents": self.exhausted_parents,
                "no_memory_evaluations": self.no_memory_evaluations, "no_memory_fallbacks": self.no_memory_fallbacks}
