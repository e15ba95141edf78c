"""LM-free experience algorithms on one structured trajectory: trajectory compression with the
key decision, AWM-style workflow induction, failure analysis for insights, precondition tips.
Each is a pure function of the episode, so its output is safe to cache per episode."""
from __future__ import annotations

from dataclasses import dataclass, field

from memarch.modules.encoders._experience_actions import (
    NAVIGATION_VERBS, ParsedAction, abstract_actions, abstract_text, content_words, is_error, is_info,
    parse_episode,
)
from memarch.pipeline.episodes import Episode, Step

def _norm(text: str) -> str:
    return " ".join(text.lower().split())


# -- trajectory ------------------------------------------------------------------------------------
@dataclass
class Compressed:
    """The steps kept by :func:`compress_trajectory`, why the others went, and the key decision."""

    kept: list[int]
    dropped: dict[int, str] = field(default_factory=dict)  # step index -> "no-op" | "repeat"
    key_decision: int | None = None


def compress_trajectory(episode: Episode) -> Compressed:
    """Drop no-op steps (rejected by the environment) and repeated steps (the same action with
    the same observation, or an info action re-run back to back); keep the key decision.

    The last step of a failed episode is always kept: it is the evidence of the failure.
    """
    steps = episode.steps
    parsed = parse_episode(episode)
    key = key_decision(episode, parsed)
    kept: list[int] = []
    dropped: dict[int, str] = {}
    seen: set[tuple[str, str]] = set()
    last = len(steps) - 1
    for i, step in enumerate(steps):
        pair = (_norm(step.action), _norm(step.observation))
        protected = i == key or (i == last and episode.outcome == "failure")
        if not protected and is_error(step):
            dropped[i] = "no-op"
        elif not protected and pair in seen:
            dropped[i] = "repeat"
        elif (not protected and kept and is_info(parsed[i])
              and _norm(steps[kept[-1]].action) == pair[0]):
            dropped[i] = "repeat"
        else:
            kept.append(i)
        seen.add(pair)
    return Compressed(kept, dropped, key)


def _task_overlap(p: ParsedAction, task_words: set[str]) -> int:
    return sum(len(content_words(s.value) & task_words) for s in p.slots)


def key_decision(episode: Episode, parsed: list[ParsedAction] | None = None) -> int | None:
    """The step that decided the outcome.

    Failure: the last divergent action (see :func:`last_divergent_action`). Success: the first
    state-changing action after the last rejected step (the recovery), else the state-changing
    action that touches most task entities (latest on ties).
    """
    if not episode.steps:
        return None
    parsed = parsed or parse_episode(episode)
    if episode.outcome == "failure":
        return last_divergent_action(episode, parsed, failing_step(episode))
    acting = [i for i, p in enumerate(parsed)
              if not is_info(p) and p.verb not in NAVIGATION_VERBS and not is_error(episode.steps[i])]
    errors = [i for i, s in enumerate(episode.steps) if is_error(s)]
    if errors:
        after = [i for i in acting if i > errors[-1]]
        if after:
            return after[0]
    if not acting:
        return len(episode.steps) - 1
    words = content_words(episode.task)
    return max(acting, key=lambda i: (_task_overlap(parsed[i], words), i))


# -- workflow --------------------------------------------------------------------------------------
@dataclass
class Workflow:
    """An ordered action chain with ``<PLACEHOLDER>`` slots, the task it answers and a binding."""

    task_template: str
    steps: list[str]
    binding: dict[str, str]
    source_ids: list[str]


def induce_workflow(episode: Episode) -> Workflow | None:
    """AWM-style induction: compress the trajectory, then abstract entity names into typed
    placeholders consistently across the steps and the task (``take apple`` -> ``take <OBJECT>``)."""
    comp = compress_trajectory(episode)
    if not comp.kept:
        return None
    parsed = parse_episode(episode)
    steps, binding = abstract_actions([parsed[i] for i in comp.kept])
    # Consecutive identical abstract steps add nothing to a reusable procedure.
    ordered, ids = [], []
    for i, s in zip(comp.kept, steps):
        if not ordered or ordered[-1] != s:
            ordered.append(s)
            ids.append(episode.steps[i].id)
    return Workflow(abstract_text(episode.task, binding), ordered, binding, ids)


# -- insight ---------------------------------------------------------------------------------------
def failing_step(episode: Episode) -> int | None:
    """The last step the environment rejected, else the last step."""
    if not episode.steps:
        return None
    errors = [i for i, s in enumerate(episode.steps) if is_error(s)]
    return errors[-1] if errors else len(episode.steps) - 1


def _off_task(p: ParsedAction, task_words: set[str]) -> bool:
    """A state-changing action on entities the task does not mention."""
    return (bool(p.slots) and not is_info(p) and p.verb not in NAVIGATION_VERBS and bool(task_words)
            and _task_overlap(p, task_words) == 0)


def last_divergent_action(episode: Episode, parsed: list[ParsedAction], fail: int | None) -> int | None:
    """Where the agent last went astray: the latest run of actions (at or before the failing
    step) on entities the task does not mention, while the task names entities — its first
    action is the divergence. Else the last accepted state-changing action."""
    if fail is None:
        return None
    words = content_words(episode.task)

    def off_task(i: int) -> bool:
        return _off_task(parsed[i], words)

    last = next((i for i in range(fail, -1, -1) if off_task(i)), None)
    if last is not None:
        start = last
        for i in range(last - 1, -1, -1):
            if off_task(i):
                start = i
            elif not is_info(parsed[i]) and parsed[i].verb not in NAVIGATION_VERBS:
                break
        return start
    for i in range(fail, -1, -1):
        if not is_info(parsed[i]) and not is_error(episode.steps[i]):
            return i
    return fail


@dataclass
class FailureAnalysis:
    failure_pattern: str
    root_cause: str
    corrective_strategy: str
    detection_signal: str
    source_ids: list[str]


def _numeric(v: object) -> float | None:
    try:
        return float(str(v).strip().replace(",", ""))
    except ValueError:
        return None


def _classify(episode: Episode, parsed: list[ParsedAction], fail: int, div: int) -> str:
    meta = episode.metadata or {}
    answer, gold = meta.get("answer"), meta.get("expected", meta.get("gold"))
    if answer is not None and gold is not None:
        if _norm(str(answer)).strip(" .") == _norm(str(gold)).strip(" ."):
            return "format_error"
        if _numeric(answer) is not None and _numeric(gold) is not None:
            return "wrong_value"
    # The observation names the cause only when the environment rejected the step (a room
    # description saying "the cabinet is closed" is not a precondition failure).
    obs = (episode.steps[fail].observation or "").lower() if is_error(episode.steps[fail]) else ""
    if any(w in obs for w in ("invalid format", "parse", "syntax", "malformed", "unknown command",
                              "don't understand", "not recognised", "not recognized")):
        return "format_error"
    if any(w in obs for w in ("exception", "traceback", "timeout", "timed out", "error")):
        return "tool_error"
    if any(w in obs for w in ("is closed", "is locked", "need to", "must first", "can't reach", "first")):
        return "precondition_violation"
    last = parsed[-1]
    if meta.get("truncated") or meta.get("step_budget_exhausted") or is_info(last) or last.verb in NAVIGATION_VERBS:
        return "incomplete_search"
    # The task's own verb applied to an entity the task does not name ("slice potato" for
    # "slice the carrot"); generic tasks ("put objects away") name no verb the agent uses.
    words = content_words(episode.task)
    if any(_off_task(parsed[i], words) and parsed[i].verb in words for i in range(fail + 1)):
        return "wrong_entity"
    if not [p for p in parsed if not is_info(p) and p.verb not in NAVIGATION_VERBS]:
        return "incomplete_search"
    if answer is not None and gold is not None:
        return "wrong_value"
    return "wrong_action"


_STRATEGY = {
    "wrong_entity": "act on the entity the task names ({task_entities}), not {divergent_entity}",
    "wrong_value": "recompute the value and compare it with the task's constraints before answering",
    "format_error": "answer in exactly the format the environment or task expects",
    "incomplete_search": "keep searching until the task's target is found before acting or answering",
    "precondition_violation": "satisfy the precondition first (e.g. open or reach the container) and retry",
    "tool_error": "check the tool's arguments and retry with a valid call; fall back to another tool",
    "wrong_action": "compare the last action with what the task asks and choose the action that achieves it",
}


def analyse_failure(episode: Episode) -> FailureAnalysis | None:
    """The failing step, the last divergent action and the error observation, labelled with a
    failure pattern and turned into a corrective strategy."""
    fail = failing_step(episode)
    if fail is None:
        return None
    parsed = parse_episode(episode)
    div = last_divergent_action(episode, parsed, fail)
    assert div is not None
    pattern = _classify(episode, parsed, fail, div)
    fs, ds = episode.steps[fail], episode.steps[div]
    obs = (fs.observation or "").strip()
    verbs = {p.verb for p in parsed}
    task_entities = ", ".join(sorted(content_words(episode.task) - verbs)[:4]) or "the task's entities"
    divergent_entity = parsed[div].slots[0].value if parsed[div].slots else ds.action
    observed = f": {obs[:160]}" if obs else ""
    cause = (f"the failure showed at `{fs.action}` ({fs.id}){observed}" if div == fail else
             f"`{ds.action}` ({ds.id}) went astray; the failure showed at `{fs.action}` ({fs.id}){observed}")
    meta = episode.metadata or {}
    if "answer" in meta and ("expected" in meta or "gold" in meta):
        cause += f"; answered {meta['answer']!r}, expected {meta.get('expected', meta.get('gold'))!r}"
    strategy = _STRATEGY[pattern].format(task_entities=task_entities, divergent_entity=divergent_entity)
    signal = f"observation like: {obs[:120]}" if obs else f"after `{parsed[fail].generic()}` the task is not done"
    ids = [ds.id] if div == fail else [ds.id, fs.id]
    return FailureAnalysis(pattern, cause, strategy, signal, ids)


# -- tips within one episode -----------------------------------------------------------------------
@dataclass
class PreconditionTip:
    """``enabler`` made ``action`` work after it had been rejected."""

    action: str  # generic form, e.g. "take <OBJECT> from <LOCATION>"
    enabler: str  # generic form, e.g. "open <LOCATION>"
    failed: Step
    enabling: Step
    succeeded: Step


def precondition_tips(episode: Episode) -> list[PreconditionTip]:
    """A rejected action that later succeeded: the last accepted action in between enabled it."""
    parsed = parse_episode(episode)
    steps = episode.steps
    out: list[PreconditionTip] = []
    seen: set[tuple[str, str]] = set()
    for i, s in enumerate(steps):
        if not is_error(s):
            continue
        for j in range(i + 1, len(steps)):
            if _norm(steps[j].action) == _norm(s.action) and not is_error(steps[j]):
                between = [k for k in range(i + 1, j) if not is_error(steps[k]) and not is_info(parsed[k])]
                if between:
                    k = between[-1]
                    # abstract the pair together so shared entities share a placeholder
                    (action, enabler), _ = abstract_actions([parsed[i], parsed[k]])
                    sig = (action, enabler)
                    if sig not in seen:
                        seen.add(sig)
                        out.append(PreconditionTip(sig[0], sig[1], s, steps[k], steps[j]))
                break
    return out
