"""Promotion across episodes: a trajectory pattern shared by successful episodes becomes a
workflow with ``<PLACEHOLDER>`` slots (AWM), and a shortcut candidate becomes validated when
enough successful episodes support it and its test invocation agrees with its input schema
(Voyager). Pure functions over items; the managers write the results and the lineage."""
from __future__ import annotations

import hashlib
import re
from typing import Any

from memarch.modules.encoders import abstract_actions, instantiate, parse_action
from memarch.pipeline.items import MemoryItem

_PLACEHOLDER = re.compile(r"<([A-Za-z][A-Za-z0-9_]*)>|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STEP_LINE = re.compile(r"^\s*(?:>|\d+[.)]|-)\s*(.+)$")
_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
               "array": list, "object": dict}
_TEXT_FORMS = {"integer": re.compile(r"^[-+]?\d+$"), "number": re.compile(r"^[-+]?\d+(?:\.\d+)?$"),
               "boolean": re.compile(r"^(?:true|false)$", re.I)}


def _type_ok(value: Any, declared: Any) -> bool:
    """Does ``value`` fit the declared JSON type? Scalars written as text ("3") fit too: actions
    are text, so a test invocation often carries its arguments as strings."""
    want = _JSON_TYPES.get(str(declared))
    if want is None or (isinstance(value, want) and not (want is int and isinstance(value, bool))):
        return True
    form = _TEXT_FORMS.get(str(declared))
    return isinstance(value, str) and form is not None and bool(form.match(value.strip()))


# -- trajectory -> workflow ------------------------------------------------------------------------
def trajectory_actions(item: MemoryItem) -> list[str]:
    """The concrete actions of a trajectory item, from whichever fields its encoder wrote."""
    f = item.fields
    for key in ("actions", "steps", "trajectory", "chain"):
        raw = f.get(key)
        if isinstance(raw, list) and raw:
            out = []
            for s in raw:
                if isinstance(s, dict):
                    s = s.get("action") or s.get("step") or ""
                # The trajectory encoder writes "action -> observation" per step.
                s = str(s).split(" -> ")[0].strip()
                if s:
                    out.append(s)
            if out:
                return out
    # Text fallback: "> action" / "1. action" lines, else an "a -> b -> c" chain.
    lines = [m.group(1) for m in map(_STEP_LINE.match, item.text.splitlines()) if m]
    if lines:
        return [ln.split(" -> ")[0].strip() for ln in lines]
    return [p.strip() for p in item.text.split("->") if p.strip()]


def common_pattern(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Longest common subsequence of two action lists compared by shape (``take <OBJECT>``);
    returns the matched index pairs."""
    ga = [parse_action(x).generic() for x in a]
    gb = [parse_action(x).generic() for x in b]
    n, m = len(ga), len(gb)
    dp = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            dp[i][j] = dp[i + 1][j + 1] + 1 if ga[i] == gb[j] else max(dp[i + 1][j], dp[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if ga[i] == gb[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif dp[i + 1][j] >= dp[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def shapes_of(actions: list[str]) -> list[str]:
    return [parse_action(x).generic() for x in actions]


def contains(shapes: list[str], pattern: list[str]) -> bool:
    """Is ``pattern`` a subsequence of ``shapes``?"""
    it = iter(shapes)
    return all(p in it for p in pattern)


def workflow_from(a: MemoryItem, b: MemoryItem, *, min_steps: int = 2,
                  min_coverage: float = 0.6) -> dict[str, Any] | None:
    """The procedure two successful trajectories share, or None.

    Shared = the longest common subsequence of their action shapes; it must have ``min_steps``
    steps and cover ``min_coverage`` of each trajectory, so two tasks that merely both "go to" and
    "open" something do not make a workflow. ``b`` fixes the placeholder names."""
    acts_a, acts_b = trajectory_actions(a), trajectory_actions(b)
    pairs = common_pattern(acts_b, acts_a)
    if len(pairs) < min_steps or len(pairs) < min_coverage * max(len(acts_a), len(acts_b)):
        return None
    keep = [i for i, _ in pairs]
    steps, binding = abstract_actions([parse_action(acts_b[i]) for i in keep])
    shapes = [parse_action(acts_b[i]).generic() for i in keep]
    key = "workflow:" + hashlib.sha1(" ; ".join(shapes).encode("utf-8")).hexdigest()[:16]
    task = b.fields.get("task") or a.fields.get("task") or ""
    return {"key": key, "steps": steps, "shapes": shapes, "example_binding": binding, "task": task,
            "support": sorted({t.episode_id or t.id for t in (a, b)})}


def workflow_text(wf: dict[str, Any]) -> str:
    numbered = " ".join(f"{i}. {s}" for i, s in enumerate(wf["steps"], 1))
    seen = f"seen in {len(wf['support'])} successful tasks"
    return f"Workflow ({seen}{', e.g. ' + wf['task'] if wf['task'] else ''}): {numbered}"


# -- shortcut validation ---------------------------------------------------------------------------
def _schema_params(item: MemoryItem) -> tuple[dict[str, Any], set[str]]:
    """Parameters (name -> declared type or None) and the required names, from any schema style:
    JSON schema ``{"properties": ..., "required": ...}``, ``{name: type}``, or a list of names."""
    schema = item.fields.get("input_schema")
    if schema is None:
        schema = item.fields.get("parameters", [])
    if isinstance(schema, dict) and "properties" in schema:
        props = {k: (v.get("type") if isinstance(v, dict) else v) for k, v in (schema["properties"] or {}).items()}
        return props, set(schema.get("required", props))
    if isinstance(schema, dict):
        props = {k: (v.get("type") if isinstance(v, dict) else v) for k, v in schema.items()}
        return props, set(props)
    if isinstance(schema, list):
        props = {}
        for p in schema:
            if isinstance(p, dict) and p.get("name"):
                props[p["name"]] = p.get("type")
            elif isinstance(p, str):
                props[p] = None
        return props, set(props)
    return {}, set()


def _invocation_args(inv: Any) -> dict[str, Any] | None:
    if not isinstance(inv, dict):
        return None
    for key in ("arguments", "args", "inputs"):
        if isinstance(inv.get(key), dict):
            return inv[key]
    return {k: v for k, v in inv.items() if k not in ("expected_actions", "expected", "steps", "name")}


def validate_shortcut(item: MemoryItem) -> tuple[bool | None, str]:
    """Is the shortcut's test invocation consistent with its input schema?

    Returns ``(True, "")``, ``(False, problem)``, or ``(None, why)`` when there is nothing to test.
    Checks: required arguments given, no undeclared argument, declared types respected, every
    placeholder in the steps bound, and the instantiated steps equal the expected actions."""
    inv = item.fields.get("test_invocation")
    args = _invocation_args(inv)
    if args is None:
        return None, "no test invocation"
    params, required = _schema_params(item)
    lower = {p.lower(): p for p in params}
    missing = sorted(r for r in required if r not in args)
    if missing:
        return False, f"test invocation lacks required input(s) {missing}"
    unknown = sorted(a for a in args if a.lower() not in lower)
    if unknown:
        return False, f"test invocation passes undeclared input(s) {unknown}"
    for name, value in args.items():
        declared = params.get(lower[name.lower()])
        if not _type_ok(value, declared):
            return False, f"input {name!r} should be {declared}, got {value!r}"
    steps = [str(s) for s in item.fields.get("steps", []) if str(s).strip()]
    constants = {k.lower() for k in (item.fields.get("constants") or {})}
    used = {(m.group(1) or m.group(2)) for s in steps for m in _PLACEHOLDER.finditer(s)}
    unbound = sorted(u for u in used if u.lower() not in lower and u.lower() not in constants)
    if unbound:
        return False, f"steps use placeholder(s) {unbound} not in the input schema"
    expected = inv.get("expected_actions") if isinstance(inv, dict) else None
    if isinstance(expected, list) and steps:
        got = [s.strip() for s in instantiate(steps, {**(item.fields.get("constants") or {}), **args})]
        if [str(e).strip() for e in expected] != got:
            return False, "test invocation does not reproduce its expected actions"
    return True, ""


# -- the manager side: write promotions with their lineage -----------------------------------------
def support(item: MemoryItem, related: list[MemoryItem]) -> set[str]:
    """Successful episodes behind ``item``: its own, those its encoder counted, those merged into
    it, and those of ``related`` items (same key, e.g. older versions it superseded)."""
    eps: set[str] = set()
    for it in [item, *related]:
        if it.outcome == "failure":
            continue
        if it.episode_id:
            eps.add(it.episode_id)
        listed = it.fields.get("episodes")
        if isinstance(listed, list):
            eps.update(str(e) for e in listed)
        eps.update(str(e.data["episode_id"]) for e in it.lineage
                   if e.action == "merged_from" and e.data.get("episode_id"))
    return eps


def promote_workflows(manager: Any, episode_id: str, store: Any, namespace: str, *,
                      min_steps: int = 2, min_coverage: float = 0.6) -> list[MemoryItem]:
    """Each successful trajectory of ``episode_id`` is paired with the earlier successful trajectory
    it shares the longest procedure with; that procedure becomes a workflow item supported by every
    successful episode whose trajectory contains it (or reinforces the workflow that has it)."""
    pool = [it for it in store.list(namespace, include_deleted=True, where={"kind": "trajectory"})
            if it.outcome == "success" and it.status != "deleted"]
    shapes = {t.id: shapes_of(trajectory_actions(t)) for t in pool}
    made: list[MemoryItem] = []
    for new in [t for t in pool if t.episode_id == episode_id]:
        found = [(old, wf) for old in pool if old.episode_id != episode_id
                 for wf in [workflow_from(old, new, min_steps=min_steps, min_coverage=min_coverage)] if wf]
        if not found:
            continue
        old, wf = max(found, key=lambda p: (len(p[1]["steps"]), p[0].id))
        backers = [t for t in pool if contains(shapes[t.id], wf["shapes"])]
        wf["support"] = sorted({t.episode_id or t.id for t in backers})
        sources = sorted({t.id for t in backers})
        at = manager.at(store, namespace, new.event_time)
        # The same procedure may already be stored: promoted before, or written by the workflow encoder.
        existing = [w for w in store.list(namespace, where={"kind": "workflow"})
                    if w.key == wf["key"] or w.fields.get("steps") == wf["steps"]]
        if existing:
            w = existing[0]
            w.source_ids = list(dict.fromkeys(w.source_ids + sources))
            w.fields["support"] = sorted(set(w.fields.get("support", [])) | set(wf["support"]))
            w.usage.strength += manager.boost
            w.log("reinforced", manager.actor, "trajectory pattern seen again in a successful task",
                  [new.id], at, support=len(w.fields["support"]))
            store.update(w)
            continue
        item = MemoryItem(text=workflow_text(wf), kind="workflow", fields={**wf, "promoted": True},
                          source_ids=sources, outcome="success", event_time=new.event_time,
                          namespace=namespace, key=wf["key"])
        item.log("promoted", manager.actor,
                 f"trajectory pattern shared by {len(wf['support'])} successful episodes", sources, at)
        for src in backers:
            src.log("promoted_into", manager.actor, "its pattern became a workflow", [item.id], at)
            store.update(src)
        store.add([item])
        made.append(item)
    return made


def review_shortcuts(manager: Any, store: Any, namespace: str, *, min_support: int = 2) -> None:
    """Tombstone shortcuts whose test invocation contradicts their schema; validate (and boost)
    those with enough successful support. A shortcut with no test stays a candidate."""
    everything = store.list(namespace, include_deleted=True, where={"kind": "shortcut"})
    for item in [it for it in everything if it.active and not it.fields.get("validated")]:
        at = manager.at(store, namespace, item.event_time)
        ok, problem = validate_shortcut(item)
        if ok is False:
            manager.tombstone(item, store, f"invalid shortcut: {problem}")
            continue
        related = [o for o in everything if o.id != item.id and o.key and o.key == item.key and o.status != "deleted"]
        eps = support(item, related)
        if ok and len(eps) >= min_support:
            item.fields["validated"] = True
            item.usage.strength += manager.boost
            item.log("validated", manager.actor,
                     f"test invocation matches the schema; supported by {len(eps)} successful episodes",
                     [o.id for o in related], at, episodes=sorted(eps))
            store.update(item)
