"""The LM-free memory-guided agent: ranks the admissible actions by how well they continue the
retrieved workflows, trajectories and shortcuts, plus an exploration term. Its LM counterpart is
`memarch.benchmarks.agents.dspy_agent.DSPyAgent`."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from memarch.benchmarks.agents.action_matching import effect_hit, instantiate, normalise, phrases, step_similarity, template
from memarch.pipeline.retrieval import Retrieval


@dataclass
class Guide:
    """An action sequence from one retrieved item, with the item's retrieval score, its rank in
    the read and the outcome of the episode it came from (``success`` / ``failure`` / ``unknown``)."""

    steps: list[str]
    weight: float
    item_id: str
    kind: str
    outcome: str = "unknown"
    rank: int = 0
    observations: list[str] = field(default_factory=list)  # per step, trajectories only ("" if none)


def guides_from(retrieval: Retrieval | None) -> list[Guide]:
    """Action sequences from retrieved workflows, trajectories and shortcuts (``fields["steps"]``)."""
    out: list[Guide] = []
    if retrieval is None:
        return out
    for s in retrieval.items:
        steps = s.item.fields.get("steps")
        if isinstance(steps, list) and steps:
            # Trajectory steps read "action -> observation"; only the action guides the next move.
            pairs = [((st if isinstance(st, str) else str(st.get("action", st))).split(" -> ", 1) + [""])[:2]
                     for st in steps]
            pairs = [(a.strip(), o.strip()) for a, o in pairs if a.strip()]
            if pairs:
                out.append(Guide([a for a, _ in pairs], max(float(s.score), 1e-3), s.item.id, s.item.kind,
                                 str(getattr(s.item, "outcome", "unknown") or "unknown"), len(out),
                                 [o for _, o in pairs]))
    return out



@dataclass
class _GuideState:
    pos: int = 0                  # steps of the guide done (in order, one skip allowed)
    misses: int = 0               # actions since the guide last advanced
    bindings: dict = field(default_factory=dict)  # slot key -> phrase of this episode


@dataclass
class MemoryGuidedAgent:
    """LM-free agent: score(a) = guidance(a) + explore * novelty(a) + noise.

    guidance(a): each retrieved sequence is aligned in order with the actions taken so far (one
    skipped step allowed); the steps it matched bind its slots (``<OBJECT>`` placeholders and,
    by analogy, the concrete phrases of another episode's trajectory) to this episode's phrases.
    ``a`` is scored by how well it instantiates the guide's next step with those bindings: the
    literal step or a bound value scores highest, an unbound slot filled with a phrase the task or
    the observations keep mentioning next, a phrase already bound to another slot or a slot
    re-bound to a different phrase lowest. A guide's weight falls with its rank, with the actions
    taken since it last matched (a guide that stopped matching fades), for a failed source episode,
    and with how few of its concrete phrases exist in this episode (a re-rank of the read against
    what the agent has observed). Two more memory terms: effect(a), a remembered step of the same
    shape whose observation, re-read with ``a``'s phrases, is what the episode's text asks for;
    and, with or without memory, a bonus for an action spelled out in what the agent has read.
    novelty(a) rewards actions not yet taken and penalises repeating a two-action sequence already
    taken (a loop), so the agent without memory still explores instead of looping. Ties are broken
    by a seeded RNG. The agent is built per episode: it keeps what it has read (``observe``).

    Example::

        agent = MemoryGuidedAgent(seed=0)
        agent.act(["open fridge", "look around"], history=[], guides=guides_from(retrieval))
    """

    explore: float = 0.35
    repeat_penalty: float = 0.6
    seed: int = 0
    stale_decay: float = 0.8      # weight factor per action since the guide last matched
    failure_weight: float = 0.3   # weight of guides from failed episodes
    effect_weight: float = 0.5    # bonus for an action whose remembered effect the episode asks for
    min_match: float = 0.3        # a step match below this gives no guidance
    follow_text: float = 0.6      # bonus for an action spelled out in the task or an observation
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._seen: list[tuple[str, str]] = []   # (action that produced it, observation text)

    def reset(self, seed: int | None = None) -> None:
        self._rng = random.Random(self.seed if seed is None else seed)
        self._seen = []

    def observe(self, text: str, action: str = "") -> None:
        """Record what the agent has read (the task, each observation) for slot salience and re-ranking."""
        if text:
            self._seen.append((action.lower(), normalise(text)))

    # -- guide alignment ---------------------------------------------------------------------------
    @staticmethod
    def _bind_ok(fill: tuple[tuple[str, str, str], ...], bindings: dict) -> bool:
        used = {v: k for k, v in bindings.items()}
        for kind, key, value in fill:
            if key in bindings and bindings[key] != value:
                return False
            if value in used and used[value] != key:
                return False
        return True

    def align(self, guide: Guide, history: Sequence[str]) -> _GuideState:
        """Follow ``guide`` through ``history`` in order: position, bindings and staleness."""
        st = _GuideState()
        for h in history:
            advanced = False
            for skip in (0, 1):
                i = st.pos + skip
                if i >= len(guide.steps):
                    break
                fill = instantiate(h, guide.steps[i])
                if fill is not None and self._bind_ok(fill, st.bindings):
                    for _kind, key, value in fill:
                        st.bindings.setdefault(key, value)
                    st.pos, st.misses, advanced = i + 1, 0, True
                    break
            if not advanced:
                st.misses += 1
        return st

    def _mentioned(self, action: str) -> bool:
        """``action`` (two words or more) appears word for word in something the agent has read
        that another action produced ("slice red apple" in a recipe read earlier)."""
        needle = normalise(action)
        if needle.count(" ") < 3:
            return False
        low = action.lower()
        return any(needle in t for a, t in self._seen if a != low)

    def _salience(self, phrase: str) -> int:
        needle = normalise(phrase)
        return sum(1 for act, text in self._seen if needle in text and phrase not in act)

    def step_score(self, action: str, step: str, bindings: dict) -> float:
        """How well ``action`` instantiates ``step`` given the guide's bindings (0..1)."""
        fill = instantiate(action, step)
        if fill is None:
            # Another shape: only a weak, verb-agreeing overlap.
            return 0.4 * step_similarity(action, step)
        if not fill:
            return 1.0
        used = {v: k for k, v in bindings.items()}
        total = 0.0
        for kind, key, value in fill:
            if key in bindings:
                s = 1.0 if bindings[key] == value else 0.1
            elif value in used:
                s = 0.1  # this phrase already plays another role in the guide
            elif kind == "soft" and key == value:
                s = 1.0  # the literal phrase of the step
            else:
                s = 0.75 if kind == "hard" else 0.6
                if self._salience(value) >= 2:
                    s += 0.15
            total += s
        return total / len(fill)

    def _relevance(self, guide: Guide, admissible: Sequence[str]) -> float:
        """Share of the guide's concrete phrases present in this episode (0.6..1; 0.8 if none)."""
        phrases = {val for step in guide.steps for kind, val in template(step)[1] if kind == "soft"}
        if not phrases:
            return 0.8
        world = " ".join(admissible).lower() + " " + " ".join(t for _, t in self._seen)
        return 0.6 + 0.4 * sum(1 for p in phrases if p in world) / len(phrases)

    def guidance(self, action: str, history: Sequence[str], guides: Sequence[Guide],
                 states: Sequence[_GuideState] | None = None, weights: Sequence[float] | None = None
                 ) -> tuple[float, str | None]:
        if states is None:
            states = [self.align(g, history) for g in guides]
        if weights is None:
            weights = [self._weight(g, s, ()) for g, s in zip(guides, states)]
        best, why = 0.0, None
        for g, st, w in zip(guides, states, weights):
            if st.pos >= len(g.steps) or w <= 0:
                continue
            nxt = g.steps[st.pos]
            sim = self.step_score(action, nxt, st.bindings)
            # The step after counts a little: the history may have skipped one.
            if st.pos + 1 < len(g.steps):
                sim = max(sim, 0.6 * self.step_score(action, g.steps[st.pos + 1], st.bindings))
            if sim < self.min_match:
                continue  # weak evidence (a conflicting binding, another shape) decides nothing
            score = w * sim
            if score > best:
                best, why = score, f"{g.kind}:{g.item_id} step {st.pos + 1}/{len(g.steps)} '{nxt}'"
        return best, why

    def effect(self, action: str, guides: Sequence[Guide], weights: Sequence[float]) -> tuple[float, str | None]:
        """Evidence that ``action`` does what this episode's text asks for: a remembered step of the
        same shape, its observation re-read with this action's phrases ("cook red potato in oven ->
        You roast the red potato" read for "cook yellow potato in oven"), shares a phrase with the
        task or an observation the agent has read ("roast the yellow potato")."""
        seen = [t for a, t in self._seen if a != action.lower()]
        if not seen:
            return 0.0, None
        best, why = 0.0, None
        for g, w in zip(guides, weights):
            if w <= best:
                continue
            for step, obs in zip(g.steps, g.observations):
                if not obs:
                    continue
                fill = instantiate(action, step)
                if not fill or any(kind == "hard" for kind, _, _ in fill):
                    continue
                if effect_hit(obs, fill, tuple(seen)):
                    best, why = w, f"effect of {g.kind}:{g.item_id} '{step}'"
                    break
        return best, why

    def _weight(self, g: Guide, st: _GuideState, admissible: Sequence[str]) -> float:
        w = 1.0 / (1.0 + 0.3 * g.rank)
        if g.outcome == "failure":
            w *= self.failure_weight
        w *= self.stale_decay ** st.misses
        if admissible:
            w *= self._relevance(g, admissible)
        return w

    def act(self, admissible: Sequence[str], history: Sequence[str], guides: Sequence[Guide], *,
            observation: str | None = None, task: str | None = None,
            hints: dict[str, float] | None = None) -> tuple[str, dict[str, Any]]:
        """Pick one admissible action. ``observation`` (the text the last action produced) and
        ``task`` (given once, or every step: recorded once) feed slot salience and re-ranking;
        ``hints`` are score adjustments per action from the agent's notes (`NotePolicy`)."""
        if not admissible:
            raise ValueError("no admissible action")
        if task and not any(a == "<task>" for a, _ in self._seen):
            self.observe(task, "<task>")
        if observation:
            self.observe(observation, history[-1] if history else "")
        states = [self.align(g, history) for g in guides]
        weights = [self._weight(g, s, admissible) for g, s in zip(guides, states)]
        last = history[-1] if history else None
        pairs = set(zip(history, history[1:]))
        scored = []
        base = [self._weight(g, _GuideState(), admissible) for g in guides]  # position-free
        mentioned = {a for a in admissible if self._mentioned(a)}
        # phrases whose action the text spells out: other verbs on exactly those phrases are not it
        spelled = {phrases(a) for a in mentioned}
        for a in admissible:
            g, why = self.guidance(a, history, guides, states, weights)
            if a not in mentioned and phrases(a) in spelled:
                g *= 0.3
            e, ewhy = self.effect(a, guides, base) if any(gd.observations for gd in guides) else (0.0, None)
            if e > 0:
                g, why = g + self.effect_weight * e, (why or "") + f" +{ewhy}"
            times = sum(1 for h in history if h == a)
            novelty = 1.0 if times == 0 else -self.repeat_penalty * times
            if a in ("inventory", "look around") and times > 0:
                novelty -= 1.0  # information actions rarely help twice
            if last is not None and times and (last, a) in pairs:
                novelty -= 0.5  # this two-step sequence was already taken: a loop
            mention = self.follow_text if (times == 0 and a in mentioned) else 0.0
            note = (hints or {}).get(a, 0.0)
            scored.append((g + mention + note + self.explore * novelty + 1e-3 * self._rng.random(), a, g, why))
        scored.sort(key=lambda t: -t[0])
        total, action, g, why = scored[0]
        return action, {"score": total, "guidance": g, "why": why}
