"""`NoteToolAgent`: the DSPy agent with the note actions of a `files` store as `dspy.ReAct` tools;
an answer outside the admissible actions falls back to the LM-free agent (counted); an unreachable
endpoint raises :class:`LMUnavailableError` (the trial fails)."""
from __future__ import annotations

import logging
from typing import Any, Sequence

from memarch.benchmarks.agents.memory_guided import Guide, MemoryGuidedAgent
from memarch.benchmarks.agents.memory_skill import NoteSession

log = logging.getLogger(__name__)


class NoteToolAgent:
    """A `dspy.ReAct` over `ChooseActionWithNotes` whose tools are the session's memory actions
    (append-only memory offers no ``upsert``); what the LM does with them is counted by the session.

    Example::

        agent = NoteToolAgent(lm, NoteSession(store, "textworld/ep1"))
        action, info = agent.act(task, observation, admissible, history, memory="", guides=[])

    Args:
        lm: the ``dspy.LM`` (a DummyLM in tests).
        session: the note actions of this episode.
        fallback: the LM-free agent used when the answer is not admissible.
        max_iters: tool calls per step before the agent must answer.
    """

    def __init__(self, lm: Any, session: NoteSession, *, fallback: MemoryGuidedAgent | None = None,
                 max_iters: int = 4):
        import dspy

        from memarch.modules.signatures.agents import ChooseActionWithNotes

        self.lm = lm
        self.session = session
        self.fallback = fallback or MemoryGuidedAgent()
        self.react = dspy.ReAct(ChooseActionWithNotes, tools=session.tools(), max_iters=max_iters)
        self.fallbacks = 0
        self.lm_requests = 0

    def act(self, task: str, observation: str, admissible: Sequence[str], history: Sequence[str],
            memory: str, guides: Sequence[Guide]) -> tuple[str, dict[str, Any]]:
        import dspy

        from memarch.lm.roles import raise_if_unavailable

        self.lm_requests += 1
        try:
            with dspy.context(lm=self.lm):
                pred = self.react(task=task, memory=memory, observation=observation, history=list(history),
                                  admissible_actions=list(admissible))
            action = str(pred.action).strip()
            if action in admissible:
                return action, {"lm": True, "trajectory": pred.trajectory}
            log.warning("note agent: %r is not an admissible action; using the memory-guided choice", action)
        except Exception as exc:  # an unparsable answer; a dead endpoint fails the trial
            raise_if_unavailable(exc)
            log.warning("note agent LM call failed (%s); using the memory-guided choice", exc.__class__.__name__)
        self.fallbacks += 1
        action, info = self.fallback.act(admissible, history, guides)
        return action, {**info, "lm": False}
