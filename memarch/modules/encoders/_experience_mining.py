"""Cross-episode LM-free mining: shortcut macros from action subsequences repeated across
successful episodes, and tips from contrasting action statistics of successes and failures.

Encoder output must depend only on the episode (it is cached per episode), so the work splits:
each episode yields *candidates* (pure, cached) and these pure functions promote candidates that
recur across episodes. `ExperienceMiner` keeps the candidates seen per namespace for an encoder;
a manager holding the candidates can call the same functions."""
from __future__ import annotations

from typing import Any

from memarch.modules.encoders._experience_actions import abstract_actions, instantiate, is_error, parse_episode
from memarch.modules.encoders._experience_algorithms import compress_trajectory
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem

CANDIDATE = "candidate"  # fields["stage"] of a per-episode candidate (never stored as memory)


# -- shortcuts -------------------------------------------------------------------------------------
def shortcut_candidates(episode: Episode, *, min_len: int = 3, max_len: int = 6) -> list[dict[str, Any]]:
    """Every contiguous window of the compressed action sequence, keyed by its abstract form
    (placeholders numbered within the window, so equal shapes get equal keys)."""
    comp = compress_trajectory(episode)
    idx = [i for i in comp.kept if not is_error(episode.steps[i])]
    parsed = parse_episode(episode)
    out: dict[str, dict[str, Any]] = {}
    for a in range(len(idx)):
        for b in range(a + min_len, min(a + max_len, len(idx)) + 1):
            window = idx[a:b]
            steps, binding = abstract_actions([parsed[i] for i in window])
            key = " ; ".join(steps)
            if key in out or not binding:
                continue
            out[key] = {"key": key, "steps": steps, "binding": binding,
                        "actions": [episode.steps[i].action for i in window],
                        # the concrete actions as the abstraction rebuilds them (determiners
                        # dropped, verb lower-cased): what a replay of the macro must produce
                        "replay": [parsed[i].form.format(*(s.value for s in parsed[i].slots)) for i in window],
                        "source_ids": [episode.steps[i].id for i in window],
                        "final_observation": episode.steps[window[-1]].observation}
    return list(out.values())


def _macro_name(steps: list[str], params: list[str]) -> str:
    verbs = [s.split("[")[0].split("(")[0].split()[0] for s in steps if s.split()]
    core = "_then_".join(dict.fromkeys(verbs))[:48]
    return f"{core}_{'_'.join(p.lower() for p in params)}" if params else core


def mine_shortcuts(candidates: list[MemoryItem], *, min_support: int = 2) -> list[dict[str, Any]]:
    """Promote candidate windows found in >= ``min_support`` distinct successful episodes.

    Slots whose value is the same in every occurrence are inlined (they do not vary, so they are
    not parameters); the others become the macro's parameters. Only maximal windows are kept (a
    window inside a longer one with the same supporting episodes adds nothing). The test
    invocation replays the occurrence of the first supporting episode (by id) and must reproduce
    its concrete actions.
    """
    groups: dict[str, dict[str, MemoryItem]] = {}
    for c in candidates:
        if c.outcome != "success" or c.fields.get("stage") != CANDIDATE:
            continue
        groups.setdefault(c.key or "", {}).setdefault(c.episode_id or c.id, c)
    promoted = {k: occ for k, occ in groups.items() if k and len(occ) >= min_support}
    # Placeholders are renumbered per window, so containment is judged on the concrete steps.
    spans = {k: {(e, sid) for e, c in occ.items() for sid in c.source_ids} for k, occ in promoted.items()}
    maximal = {k: occ for k, occ in promoted.items()
               if not any(set(occ) <= set(o2) and spans[k] < spans[k2]
                          for k2, o2 in promoted.items() if k2 != k)}
    out = []
    for key, occ in sorted(maximal.items()):
        first = occ[sorted(occ)[0]]
        steps = list(first.fields["steps"])
        bindings = [occ[e].fields["binding"] for e in sorted(occ)]
        params = [n for n in bindings[0] if len({b.get(n, "").lower() for b in bindings}) > 1]
        constants = {n: v for n, v in bindings[0].items() if n not in params}
        steps = instantiate(steps, constants)
        args = {p: bindings[0][p] for p in params}
        if instantiate(steps, args) != first.fields["replay"]:
            continue  # the abstraction lost information; a macro that cannot replay is no macro
        out.append({
            "key": key, "name": _macro_name(steps, params), "parameters": params, "steps": steps,
            "constants": constants,
            "input_schema": {"type": "object", "required": params, "properties": {
                p: {"type": "string", "examples": sorted({b[p] for b in bindings})} for p in params}},
            "output_schema": {"type": "object", "properties": {"observation": {
                "type": "string", "examples": [occ[e].fields["final_observation"] for e in sorted(occ)][:3]}}},
            "test_invocation": {"arguments": args, "expected_actions": instantiate(steps, args)},
            "support": len(occ), "episodes": sorted(occ),
            "occurrences": {e: list(occ[e].source_ids) for e in sorted(occ)},
        })
    return out


# -- tips by contrast ------------------------------------------------------------------------------
def action_profile(episode: Episode) -> dict[str, Any]:
    """The action shapes an episode tried (generic forms, rejected ones included: trying them
    is the behaviour being contrasted) with one concrete example and step id each."""
    parsed = parse_episode(episode)
    examples: dict[str, str] = {}
    ids: dict[str, str] = {}
    for p, s in zip(parsed, episode.steps):
        if p.verb:
            g = p.generic()
            examples.setdefault(g, s.action)
            ids.setdefault(g, s.id)
    return {"templates": sorted(examples), "examples": examples, "step_ids": ids}


def contrast_tips(profiles: list[MemoryItem], *, min_support: int = 2, margin: float = 0.5,
                  focus: MemoryItem | None = None) -> list[dict[str, Any]]:
    """Action shapes whose presence separates successes from failures.

    With Laplace-smoothed rates p_s = (s+1)/(S+2) and p_f = (f+1)/(F+2) over S successful and F
    failed episodes, an action seen in >= ``min_support`` episodes with p_s - p_f >= ``margin``
    gives a "do" tip, <= -``margin`` an "avoid" tip. ``focus`` restricts to the shapes of one
    episode's profile (the tips that episode is evidence for).
    """
    per_ep = {p.episode_id: p for p in profiles if p.outcome in ("success", "failure")}
    S = sum(1 for p in per_ep.values() if p.outcome == "success")
    F = len(per_ep) - S
    if S == 0 or F == 0:
        return []
    counts: dict[str, list[int]] = {}
    for p in per_ep.values():
        for t in p.fields["templates"]:
            counts.setdefault(t, [0, 0])[0 if p.outcome == "success" else 1] += 1
    shapes = set(counts) if focus is None else set(focus.fields["templates"])
    if focus is not None and focus.outcome == "failure":
        # A failure is also evidence for the successful habits it lacked.
        shapes |= {t for t, (s, _) in counts.items() if s >= min_support}
    out = []
    for t in sorted(shapes):
        s, f = counts.get(t, (0, 0))
        if s + f < min_support:
            continue
        effect = (s + 1) / (S + 2) - (f + 1) / (F + 2)
        if abs(effect) < margin:
            continue
        polarity = "do" if effect > 0 else "avoid"
        example = next((p.fields["examples"][t] for p in per_ep.values()
                        if t in p.fields["examples"] and (p.outcome == "success") == (polarity == "do")), t)
        out.append({"shape": t, "polarity": polarity, "effect": round(effect, 3),
                    "with": {"success": s, "failure": f}, "totals": {"success": S, "failure": F},
                    "example": example, "key": f"tip:{polarity}:{t}"})
    return out


# -- per-namespace state ---------------------------------------------------------------------------
class ExperienceMiner:
    """Candidates an encoder has seen, per namespace (namespaces never see each other), indexed
    by key so that mining after an episode only revisits the keys that episode touched.

    Example::

        miner = ExperienceMiner()
        miner.observe(candidate_items, "default")
        mine_shortcuts(miner.with_keys("default", {c.key for c in candidate_items}))
    """

    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, dict[str, MemoryItem]]] = {}

    def observe(self, candidates: list[MemoryItem], namespace: str) -> None:
        index = self._by_key.setdefault(namespace, {})
        for c in candidates:
            index.setdefault(c.key or c.id, {})[c.id] = c

    def with_keys(self, namespace: str, keys: set[str]) -> list[MemoryItem]:
        index = self._by_key.get(namespace, {})
        return [c for k in sorted(keys) for c in index.get(k, {}).values()]

    def seen(self, namespace: str) -> list[MemoryItem]:
        return [c for group in self._by_key.get(namespace, {}).values() for c in group.values()]


__all__ = ["CANDIDATE", "ExperienceMiner", "action_profile", "contrast_tips", "mine_shortcuts",
           "shortcut_candidates"]
