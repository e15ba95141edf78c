"""Agents that act in an environment with memory: an LM-free memory-guided agent (ranks the
admissible actions by how well they continue the retrieved workflows, trajectories and shortcuts,
plus an exploration term) and a DSPy agent (ReAct-style, memory context in its prompt)."""
from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

from memarch.pipeline.retrieval import Retrieval

log = logging.getLogger(__name__)
_WORD = re.compile(r"[a-z0-9]+")
_PLACEHOLDER = re.compile(r"<[A-Z_0-9]+>")


@lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(_PLACEHOLDER.sub(" __slot__ ", text.lower()).replace("__slot__", "SLOT").lower()))


@lru_cache(maxsize=262144)
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


# -- actions as templates ------------------------------------------------------------------------
# An action or a guide step is read as a verb, connective words and noun phrases:
# "put <OBJECT> in <LOCATION>" -> ("put", [slot OBJECT, "in", slot LOCATION]). A ``<PLACEHOLDER>``
# is a hard slot (any phrase, bound once per guide); a concrete phrase of a step ("put bathrobe in
# wall hook") is a soft slot: the same phrase is a literal match, another phrase of the same shape
# an analogous one (bound consistently, so "take mouthwash" ~ "take key" makes the guide's later
# "put mouthwash in ..." read "put key in ...").
_CONNECTIVES = frozenset({"in", "into", "on", "onto", "to", "from", "with", "at", "using", "for", "about",
                          "inside", "under", "of"})
_DETERMINERS = frozenset({"the", "a", "an", "some"})


@lru_cache(maxsize=65536)
def _template(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(verb, parts)``; a part is ``("w", connective)``, ``("hard", NAME)`` or ``("soft", phrase)``."""
    words = [w for w in re.findall(r"<[A-Za-z_0-9]+>|[A-Za-z0-9'\-]+", text) if w.lower() not in _DETERMINERS]
    if not words:
        return "", ()
    verb, parts, phrase = words[0].lower(), [], []

    def flush() -> None:
        if phrase:
            parts.append(("soft", " ".join(phrase)))
            phrase.clear()

    for w in words[1:]:
        if _PLACEHOLDER.fullmatch(w):
            flush()
            parts.append(("hard", w[1:-1]))
        elif w.lower() in _CONNECTIVES:
            flush()
            parts.append(("w", w.lower()))
        else:
            phrase.append(w.lower())
    flush()
    return verb, tuple(parts)


@lru_cache(maxsize=262144)
def _instantiate(action: str, step: str) -> tuple[tuple[str, str, str], ...] | None:
    """How ``action`` fills ``step``: ``((kind, key, value), ...)`` per phrase slot, or None when the
    verb or the shape (connectives, number of phrases) differs."""
    av, ap = _template(action)
    sv, sp = _template(step)
    if not av or av != sv or len(ap) != len(sp):
        return None
    out = []
    for (ak, aval), (sk, sval) in zip(ap, sp):
        if sk == "w" or ak == "w":
            if sk != ak or sval != aval:
                return None
            continue
        if ak == "hard":
            return None
        out.append((sk, sval, aval))
    return tuple(out)


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
            self._seen.append((action.lower(), _norm(text)))

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
                fill = _instantiate(h, guide.steps[i])
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
        needle = _norm(action)
        if needle.count(" ") < 3:
            return False
        low = action.lower()
        return any(needle in t for a, t in self._seen if a != low)

    def _salience(self, phrase: str) -> int:
        needle = _norm(phrase)
        return sum(1 for act, text in self._seen if needle in text and phrase not in act)

    def step_score(self, action: str, step: str, bindings: dict) -> float:
        """How well ``action`` instantiates ``step`` given the guide's bindings (0..1)."""
        fill = _instantiate(action, step)
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
        phrases = {val for step in guide.steps for kind, val in _template(step)[1] if kind == "soft"}
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
                fill = _instantiate(action, step)
                if not fill or any(kind == "hard" for kind, _, _ in fill):
                    continue
                if _effect_hit(obs, fill, tuple(seen)):
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
            observation: str | None = None, task: str | None = None) -> tuple[str, dict[str, Any]]:
        """Pick one admissible action. ``observation`` (the text the last action produced) and
        ``task`` (given once, or every step: recorded once) feed slot salience and re-ranking."""
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
        spelled = {_phrases(a) for a in mentioned}
        for a in admissible:
            g, why = self.guidance(a, history, guides, states, weights)
            if a not in mentioned and _phrases(a) in spelled:
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
            scored.append((g + mention + self.explore * novelty + 1e-3 * self._rng.random(), a, g, why))
        scored.sort(key=lambda t: -t[0])
        total, action, g, why = scored[0]
        return action, {"score": total, "guidance": g, "why": why}


def _phrases(action: str) -> tuple[str, ...]:
    return tuple(v for k, v in _template(action)[1] if k != "w")


@lru_cache(maxsize=65536)
def _norm(text: str) -> str:
    """Lower-cased words without determiners, space-padded: "Slice the red apple." -> " slice red apple "."""
    return " " + " ".join(w for w in _WORD.findall(text.lower()) if w not in _DETERMINERS) + " "


@lru_cache(maxsize=65536)
def _effect_hit(obs: str, fill: tuple[tuple[str, str, str], ...], seen: tuple[str, ...]) -> bool:
    """The remembered observation ``obs``, with the step's phrases replaced by this action's, shares a
    three-word phrase with ``seen`` that holds a replaced value and another content word; every
    phrase the action changed must take part in such a shared phrase (else "cook X in stove" would
    borrow the evidence of the remembered "cook X in oven")."""
    text = _norm(obs)
    changed = []
    for _kind, key, value in fill:
        if key != value:
            text = text.replace(f" {key} ", f" {value} ")
            changed.append(set(value.split()))
    if not changed:
        return False
    values = set().union(*changed)
    words = text.split()
    covered: set[str] = set()
    for i in range(len(words) - 2):
        tri = words[i:i + 3]
        if not any(w in values for w in tri) or not any(w not in values and w not in _STOP for w in tri):
            continue
        needle = " " + " ".join(tri) + " "
        if any(needle in t for t in seen):
            covered.update(w for w in tri if w in values)
    return bool(covered) and all(c & covered for c in changed)


_STOP = frozenset({"the", "a", "an", "of", "to", "in", "on", "and", "or", "for", "with", "from", "into", "at",
                   "is", "it", "be", "by", "your", "you", "then", "that", "this", "as", "its", "some", "are",
                   "there", "see", "also", "has", "have", "nothing"})


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
