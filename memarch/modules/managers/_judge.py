"""One LM judgement with the managers' error policy: an answer that does not parse (or fails the
caller's check) gets one corrective retry, then the caller's LM-free rule takes over, logged; an
unreachable endpoint raises :class:`LMUnavailableError` (the trial fails)."""
from __future__ import annotations

import logging
from typing import Any, Callable

import dspy

from memarch.lm.roles import raise_if_unavailable
from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)


class Judge:
    """Runs a ``dspy.Predict`` under the resources' LM context; ``None`` means "use the rule".

    Example::

        judge = Judge(dspy.Predict(ResolveConflict), resources, actor="manager:json_full")
        pred = judge(check=lambda p: p.decision in ("keep_new", "keep_old", "keep_both"),
                     existing_memory="...", new_memory="...")
        if pred is None: ...  # LM-free rule

    Args:
        predictor: the typed predictor to call.
        resources: carries the LM; without one every call returns ``None`` without trying.
        actor: who is asking (for the log lines).
    """

    def __init__(self, predictor: dspy.Predict, resources: Resources, actor: str):
        self.predictor = predictor
        self.resources = resources
        self.actor = actor
        self.calls = 0
        self.fallbacks = 0  # judgements that ended on the LM-free rule after a failed retry
        self.lm_requests = 0  # judgements asked for (``calls`` counts each attempt)

    @property
    def available(self) -> bool:
        return self.resources.lm is not None

    def __call__(self, *, check: Callable[[dspy.Prediction], bool] | None = None,
                 **inputs: Any) -> dspy.Prediction | None:
        if not self.available:
            return None
        problem = ""
        self.lm_requests += 1
        for _ in range(2):
            self.calls += 1
            # The retry tells the LM what was wrong (and, being a new input, misses the LM cache).
            feedback = (f"Your previous answer was rejected: {problem}. Answer again with a JSON object "
                        f"whose fields match the output schema exactly.") if problem else ""
            try:
                with self.resources.lm_context():
                    pred = self.predictor(**inputs, feedback=feedback)
            except Exception as exc:  # noqa: BLE001 - parse and validation errors; a dead endpoint is raised
                raise_if_unavailable(exc)
                text = str(getattr(exc, "message", "") or exc).strip()
                problem = (text.splitlines() or [type(exc).__name__])[0][:300]
                continue
            if check is None or check(pred):
                return pred
            problem = "the answer was inconsistent (see the field descriptions)"
        self.fallbacks += 1
        log.warning("%s: LM judgement unusable after one retry (%s); using the LM-free rule",
                    self.actor, problem)
        return None
