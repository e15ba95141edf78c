"""The LM call of a conversation encoder: a typed predictor over the session, validated, with one
corrective retry. A second unusable answer raises ValueError and `Encoder.encode` falls back to
the LM-free path.

Example::

    facts = ask_session(self.extract, self.resources, episode, check=self._check_facts).facts
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import dspy
from dspy.utils.exceptions import AdapterParseError

from memarch.pipeline.dates import format_date
from memarch.modules.encoders._conversation_text import render_dialogue, session_anchor
from memarch.pipeline.episodes import Episode
from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)


def ask_session(predictor: dspy.Predict, resources: Resources, episode: Episode,
                check: Callable[[dspy.Prediction], None], *, iso_date: bool = False,
                **inputs: Any) -> dspy.Prediction:
    """Call ``predictor`` on ``episode``; ``check`` raises ValueError on an answer that parses but is
    unusable (unknown turn ids, bad dates). One retry tells the LM what was wrong."""
    session = session_inputs(episode, iso_date=iso_date)
    feedback = ""
    for attempt in (1, 2):
        try:
            with resources.lm_context():
                pred = predictor(**session, feedback=feedback, **inputs)
            check(pred)
            return pred
        except (AdapterParseError, ValueError) as exc:
            reason = _short(exc)
            if attempt == 2:
                raise ValueError(f"{predictor.signature.__name__}: unusable answer twice ({reason})") from exc
            log.info("%s: unusable answer for episode %s (%s); retrying once",
                     predictor.signature.__name__, episode.id, reason)
            feedback = (f"Your previous answer was rejected: {reason}. Answer again, following the "
                        "output format exactly and citing only turn ids that appear in the dialogue.")
    raise AssertionError("unreachable")


def session_inputs(episode: Episode, *, iso_date: bool = False) -> dict[str, str]:
    """What every conversation signature reads of a session: its date and its rendered dialogue
    (fine-tuning export builds the same prompt from it)."""
    anchor = session_anchor(episode)
    date = (anchor.isoformat() if iso_date else format_date(anchor)) if anchor else "unknown"
    return {"session_date": date, "dialogue": render_dialogue(episode)}


def known_turn_ids(episode: Episode, cited: list[str], what: str) -> list[str]:
    """The cited ids, checked against the session (an id the LM made up breaks evidence recall)."""
    valid = {t.id for t in episode.turns}
    ids = [i.strip().strip("[]") for i in cited]
    unknown = [i for i in ids if i not in valid]
    if unknown:
        raise ValueError(f"{what} cites unknown turn ids {unknown[:3]}")
    if not ids:
        raise ValueError(f"{what} cites no turn id")
    return list(dict.fromkeys(ids))


def _short(exc: BaseException, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."
