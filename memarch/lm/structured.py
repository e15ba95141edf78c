"""Typed LM calls with the project's parse policy: JSONAdapter, one corrective retry on an answer
that does not parse (or is a template placeholder), then :class:`LMOutputError` for the caller's
LM-free path; endpoint failures become :class:`LMUnavailableError`."""
from __future__ import annotations

import logging
import re
from typing import Any

import dspy

from memarch.lm.errors import LMOutputError
from memarch.lm.roles import raise_if_unavailable

log = logging.getLogger(__name__)

_PLACEHOLDER = re.compile(r"^\s*[\{\[<]+\s*[A-Za-z_ #]+\s*[\}\]>]+\s*$")
CORRECTION = ("Your previous answer could not be used ({error}). Answer again with one JSON object "
              "that has exactly the output fields, each with a real value of the stated type.")


def call_typed(module: dspy.Module, lm: Any = None, *, retries: int = 1, **inputs: Any) -> dspy.Prediction:
    """Run a typed DSPy module (a ``Predict`` or any module of predictors) under the JSON adapter.

    Example::

        class Choose(dspy.Signature):
            \"\"\"Pick the retriever to try next.\"\"\"
            gradient: str = dspy.InputField()
            retriever: Literal["hybrid", "mmr", "graph"] = dspy.OutputField()

        try:
            choice = call_typed(dspy.Predict(Choose), lm, gradient="too much noise").retriever
        except LMOutputError:
            choice = deterministic_choice()  # the LM-free path

    A failed parse is retried ``retries`` times with a corrective instruction added (a new prompt,
    so DSPy's cache does not replay the bad answer); then :class:`LMOutputError` (a ValueError) is
    raised and logged. String outputs that are template placeholders such as ``{answer}`` count as
    failed parses. An unreachable endpoint raises :class:`LMUnavailableError` at once.

    Args:
        module: the module to call; it is not modified (retries run on a copy).
        lm: the LM (default: the one in the current ``dspy.context``).
        retries: corrective retries after the first failure.
    """
    error: Exception | None = None
    current = module
    for attempt in range(retries + 1):
        if attempt:
            current = with_correction(module, error)
        try:
            with dspy.context(lm=lm or dspy.settings.lm, adapter=dspy.JSONAdapter()):
                prediction = current(**inputs)
            _reject_placeholders(prediction, module)
            return prediction
        except Exception as exc:
            raise_if_unavailable(exc)
            if not _is_parse_failure(exc):
                raise
            error = exc
            log.info("LM answer unusable (attempt %d of %d): %s", attempt + 1, retries + 1, _short(exc))
    log.warning("LM answer unusable after %d corrective retr%s: %s", retries, "y" if retries == 1 else "ies",
                _short(error))
    raise LMOutputError(_short(error)) from error


def is_placeholder(value: Any) -> bool:
    """True for template echoes such as ``{answer}`` or ``[[ ## answer ## ]]`` (the tiny model's habit)."""
    return isinstance(value, str) and bool(_PLACEHOLDER.match(value))


def _reject_placeholders(prediction: dspy.Prediction, module: dspy.Module) -> None:
    for name, value in prediction.items():
        if is_placeholder(value) or (isinstance(value, list) and value and all(is_placeholder(v) for v in value)):
            raise LMOutputError(f"output field {name!r} is a template placeholder: {value!r}")


def _is_parse_failure(exc: Exception) -> bool:
    from dspy.utils.exceptions import AdapterParseError

    return isinstance(exc, (AdapterParseError, ValueError))


def with_correction(module: dspy.Module, error: Exception | str | None) -> dspy.Module:
    """A copy of ``module`` whose instructions add why the previous answer could not be used.

    The retry's prompt differs from the first, so DSPy's cache cannot replay the bad answer, and
    the model sees why it failed (bypassing the cache alone, e.g. with ``rollout_id``, would ask a
    temperature-0 model the same question and get the same answer).

    Example::

        retry = with_correction(self.predict, "the action 'fly' is not admissible")
    """
    corrected = module.deepcopy()
    note = CORRECTION.format(error=_short(error))
    for _, predictor in corrected.named_predictors():
        sig = predictor.signature
        predictor.signature = sig.with_instructions(f"{sig.instructions}\n\n{note}")
    return corrected


def _short(exc: Exception | str | None) -> str:
    text = " ".join(str(exc).split()) if exc else "no answer"
    return text[:200]
