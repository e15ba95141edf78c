"""The diagnoser LM (FGMD's last step): the failure histogram and examples -> a `TextualGradient`
through the `DiagnoseFailures` Signature; unusable answers fall back to the rule gradient."""
from __future__ import annotations

import logging
from typing import Any

import dspy

from memarch.benchmarks.evaluation.diagnosis import Diagnosis
from memarch.optimizers.samplers.guided.gradient import TextualGradient, rule_gradient

logger = logging.getLogger(__name__)


class Diagnoser(dspy.Module):
    """The diagnoser LM: a diagnosis in, a `TextualGradient` out.

    An unusable answer is retried once with a note saying why (a new prompt, so DSPy's cache
    cannot replay it), then the rule gradient is used (counted in ``fallbacks``).

    Example::

        gradient = Diagnoser(lm).forward(diagnosis, {"retrieve": "retrieve: hybrid -> mmr"})
    """

    def __init__(self, lm: Any = None):
        super().__init__()
        from memarch.optimizers.samplers.guided.signatures import DiagnoseFailures

        self.lm = lm
        self.predict = dspy.Predict(DiagnoseFailures)
        self.last_error: str | None = None
        self.fallbacks = 0
        self.lm_requests = 0

    def forward(self, diagnosis: Diagnosis, actions: dict[str, str]) -> TextualGradient:
        fallback = rule_gradient(diagnosis, actions)
        if self.lm is None:
            return fallback
        from memarch.lm.structured import with_correction

        self.last_error = None
        self.lm_requests += 1
        for attempt in range(2):  # one corrective retry
            predict = with_correction(self.predict, self.last_error) if self.last_error else self.predict
            try:
                with dspy.context(lm=self.lm, adapter=dspy.JSONAdapter()):
                    pred = predict(architecture=diagnosis.architecture, failure_histogram=diagnosis.histogram,
                                   example_failures=diagnosis.examples, allowed_edits=sorted(actions.values()))
                g = pred.gradient
                if not isinstance(g, TextualGradient):
                    g = TextualGradient.model_validate(g)
                if g.recommended_action not in actions.values():
                    # Keep the LM's reading of the failures, but only an edit that can be run.
                    g = g.model_copy(update={"recommended_action": actions.get(g.primary_signal, fallback.recommended_action)})
                return g
            except Exception as exc:  # noqa: BLE001
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                logger.warning("diagnoser LM answer unusable (attempt %d): %s", attempt + 1, self.last_error)
        self.fallbacks += 1
        logger.warning("diagnoser LM failed twice; using the rule gradient")
        return fallback
