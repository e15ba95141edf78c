"""Agents that act in an environment with memory: an LM-free memory-guided agent (ranks the
admissible actions by how well they continue the retrieved workflows, trajectories and shortcuts,
plus an exploration term) and a DSPy agent (ReAct-style, memory context in its prompt)."""
from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from memarch.pipeline.retrieval import Retrieval

log = logging.getLogger(__name__)
_WORD = re.compile(r"[a-z0-9]+")
_PLACEHOLDER = re.compile(r"<[A-Z_0-9]+>")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(_PLACEHOLDER.sub(" __slot__ ", text.lower()).replace("__slot__", "SLOT").lower())


def step_similarity(action: str, step: str) -> float:
    """Token overlap where a ``<PLACEHOLDER>`` slot in ``step`` matches any one word of ``action``.

    1.0 for the same words in any order; the verb (first word) must agree for a high score.
    """
    a, s = _tokens(action), _tokens(step)
    if not a or not s:
        return 0.0
    slots = s.count("slot")
    fixed = [w for w in s if w != "slot"]
    rest = list(a)
    hit = 0
    for w in fixed:
        if w in rest:
            rest.remove(w)
            hit += 1
    hit += min(slots, len(rest))
    score = 2 * hit / (len(a) + len(s))
    return score if a[0] == s[0] else 0.5 * score


@dataclass
class Guide:
    """An action sequence from one retrieved item, with the item's retrieval score."""

    steps: list[str]
    weight: float
    item_id: str
    kind: str


def guides_from(retrieval: Retrieval | None) -> list[Guide]:
    """Action sequences from retrieved workflows, trajectories and shortcuts (``fields["steps"]``)."""
    out: list[Guide] = []
    if retrieval is None:
        return out
    for s in retrieval.items:
        steps = s.item.fields.get("steps")
        if isinstance(steps, list) and steps:
            # Trajectory steps read "action -> observation"; only the action guides the next move.
            flat = [(st if isinstance(st, str) else str(st.get("action", st))).split(" -> ", 1)[0].strip()
                    for st in steps]
            out.append(Guide(flat, max(float(s.score), 1e-3), s.item.id, s.item.kind))
    return out


@dataclass
class MemoryGuidedAgent:
    """LM-free agent: score(a) = guidance(a) + explore * novelty(a) + noise.

    guidance(a): for each retrieved sequence, find how far the agent's history has followed it
    (the last of its steps matched by an action already taken) and compare ``a`` with the next
    step; weight by the item's retrieval rank. novelty(a) rewards actions not yet taken, so the
    agent without memory still explores instead of looping. Ties are broken by a seeded RNG.

    Example::

        agent = MemoryGuidedAgent(seed=0)
        agent.act(["open fridge", "look around"], history=[], guides=guides_from(retrieval))
    """

    explore: float = 0.35
    repeat_penalty: float = 0.6
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def reset(self, seed: int | None = None) -> None:
        self._rng = random.Random(self.seed if seed is None else seed)

    def guidance(self, action: str, history: Sequence[str], guides: Sequence[Guide]) -> tuple[float, str | None]:
        best, why = 0.0, None
        for rank, g in enumerate(guides):
            pos = 0
            for i, step in enumerate(g.steps):
                if any(step_similarity(h, step) >= 0.99 for h in history):
                    pos = i + 1
            if pos >= len(g.steps):
                continue
            nxt = g.steps[pos]
            sim = step_similarity(action, nxt)
            # Later steps of the same guide count a little: the history may have skipped one.
            if pos + 1 < len(g.steps):
                sim = max(sim, 0.6 * step_similarity(action, g.steps[pos + 1]))
            score = sim / (1.0 + 0.3 * rank)
            if score > best:
                best, why = score, f"{g.kind}:{g.item_id} step {pos + 1}/{len(g.steps)} '{nxt}'"
        return best, why

    def act(self, admissible: Sequence[str], history: Sequence[str], guides: Sequence[Guide]) -> tuple[str, dict[str, Any]]:
        if not admissible:
            raise ValueError("no admissible action")
        scored = []
        for a in admissible:
            g, why = self.guidance(a, history, guides)
            times = sum(1 for h in history if h == a)
            novelty = 1.0 if times == 0 else -self.repeat_penalty * times
            if a in ("inventory", "look around") and times > 0:
                novelty -= 1.0  # information actions rarely help twice
            scored.append((g + self.explore * novelty + 1e-3 * self._rng.random(), a, g, why))
        scored.sort(key=lambda t: -t[0])
        total, action, g, why = scored[0]
        return action, {"score": total, "guidance": g, "why": why}


class DSPyAgent:
    """ReAct-style agent through a typed Signature: task, memory context, observation and the
    admissible actions in; one of the admissible actions out. An answer outside the admissible
    set is retried once, then the LM-free agent's choice is used (logged)."""

    def __init__(self, lm: Any, *, fallback: MemoryGuidedAgent | None = None):
        import dspy

        from memarch.modules.signatures.agents import ChooseAction

        self.lm = lm
        self.fallback = fallback or MemoryGuidedAgent()
        self.choose = dspy.Predict(ChooseAction)
        self.fallbacks = 0

    def act(self, task: str, observation: str, admissible: Sequence[str], history: Sequence[str],
            memory: str, guides: Sequence[Guide]) -> tuple[str, dict[str, Any]]:
        import dspy

        for attempt in range(2):
            try:
                with dspy.context(lm=self.lm, adapter=dspy.JSONAdapter()):
                    out = self.choose(task=task, memory=memory or "(no memory)", observation=observation[-1500:],
                                      history=list(history)[-8:], admissible_actions=list(admissible))
                choice = str(out.action).strip()
                if choice in admissible:
                    return choice, {"reasoning": getattr(out, "reasoning", ""), "lm": True}
            except Exception as exc:  # an unparsable answer or a dead endpoint
                log.warning("agent LM call failed (%s)", exc.__class__.__name__)
        self.fallbacks += 1
        log.warning("agent: LM answer not admissible twice; using the memory-guided choice")
        action, info = self.fallback.act(admissible, history, guides)
        return action, {**info, "lm": False}
