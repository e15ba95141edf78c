"""`DSPyAgent`: the LM counterpart of the memory-guided agent (ReAct-style, memory context in its
prompt), falling back to the LM-free agent when its answer is not an admissible action."""
from __future__ import annotations

import logging
from typing import Any, Sequence

from memarch.benchmarks.agents.memory_guided import Guide, MemoryGuidedAgent

log = logging.getLogger(__name__)


class DSPyAgent:
    """ReAct-style agent through a typed Signature: task, memory context, observation and the
    admissible actions in; one of the admissible actions out. An answer outside the admissible
    set is retried once with a note saying why (a new prompt, so DSPy's cache cannot replay it),
    then the LM-free agent's choice is used (logged, counted in ``fallbacks`` of ``lm_requests``).
    An unreachable endpoint raises :class:`LMUnavailableError` (the trial fails, no fallback)."""

    def __init__(self, lm: Any, *, fallback: MemoryGuidedAgent | None = None):
        import dspy

        from memarch.modules.signatures.agents import ChooseAction

        self.lm = lm
        self.fallback = fallback or MemoryGuidedAgent()
        self.choose = dspy.Predict(ChooseAction)
        self.fallbacks = 0
        self.lm_requests = 0

    def act(self, task: str, observation: str, admissible: Sequence[str], history: Sequence[str],
            memory: str, guides: Sequence[Guide]) -> tuple[str, dict[str, Any]]:
        import dspy

        from memarch.lm.roles import raise_if_unavailable
        from memarch.lm.structured import with_correction

        self.lm_requests += 1
        choose, problem = self.choose, ""
        for attempt in range(2):
            if problem:
                choose = with_correction(self.choose, problem)
            try:
                with dspy.context(lm=self.lm, adapter=dspy.JSONAdapter()):
                    out = choose(task=task, memory=memory or "(no memory)", observation=observation[-1500:],
                                 history=list(history)[-8:], admissible_actions=list(admissible))
                choice = str(out.action).strip()
                if choice in admissible:
                    return choice, {"reasoning": getattr(out, "reasoning", ""), "lm": True}
                problem = f"the action {choice[:80]!r} is not one of admissible_actions"
            except Exception as exc:  # an unparsable answer; a dead endpoint fails the trial
                raise_if_unavailable(exc)
                log.warning("agent LM call failed (%s)", exc.__class__.__name__)
                problem = f"{exc.__class__.__name__}: {exc}"
        self.fallbacks += 1
        log.warning("agent: LM answer not admissible twice; using the memory-guided choice")
        action, info = self.fallback.act(admissible, history, guides)
        return action, {**info, "lm": False}
