"""One LM call for a retriever: typed prediction under the resources' LM context, one corrective
retry when the answer does not parse or validate, then ``None`` so the caller takes its LM-free path."""
from __future__ import annotations

import logging
from typing import Any, Callable, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)
T = TypeVar("T")


def ask(predictor: dspy.Predict, resources: Resources, check: Callable[[dspy.Prediction], T],
        *, what: str, **inputs: Any) -> T | None:
    """``check(predictor(**inputs))``, retried once with the reason fed back in ``feedback``.

    ``check`` returns the usable value or raises ValueError saying what is wrong. The retry's
    input differs from the first call's, so a cached bad answer is not simply replayed.

    Example::

        scores = ask(self.rerank, self.resources, parse_scores, what="cbr_rerank",
                     query=q, candidates=texts)
    """
    feedback = ""
    for attempt in (1, 2):
        try:
            with resources.lm_context():
                prediction = predictor(**inputs, feedback=feedback)
            return check(prediction)
        except (AdapterParseError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            log.warning("%s: unusable LM answer (attempt %d of 2): %s", what, attempt, reason)
            feedback = f"Your previous answer was rejected: {reason}. Answer again in the required format."
    log.warning("%s: falling back to the LM-free path", what)
    return None
