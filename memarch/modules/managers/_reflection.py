"""Reflection correction: an LM reviews the memories that accompanied failed tasks and keeps,
revises (a new item supersedes the old) or deletes them. Without an LM, or after an unusable
answer, the memories are left to the floor's quality curation."""
from __future__ import annotations

from typing import Any

import dspy

from memarch.modules.managers._conflicts import describe
from memarch.modules.managers._judge import Judge
from memarch.pipeline.items import MemoryItem, make_item_id


def suspects(store: Any, namespace: str, min_failures: int) -> list[MemoryItem]:
    """Items retrieved for at least ``min_failures`` failed tasks and more failures than successes."""
    out = [it for it in store.list(namespace)
           if it.usage.helped_failure >= min_failures and it.usage.helped_failure > it.usage.helped_success]
    return sorted(out, key=lambda it: (-it.usage.helped_failure, it.id))


def reflect(manager: Any, judge: Judge, store: Any, namespace: str, *, min_failures: int = 2,
            limit: int = 5, kinds: tuple[str, ...] | None = None) -> int:
    """Review at most ``limit`` suspects (optionally only of ``kinds``); returns how many the LM judged."""
    if not judge.available:
        return 0
    done = 0
    for item in [s for s in suspects(store, namespace, min_failures) if kinds is None or s.kind in kinds][:limit]:
        failed = manager.failed_queries.get(item.id) or ["(task text not recorded)"]
        pred = judge(check=lambda p: p.verdict != "revise" or bool(str(p.corrected_memory).strip()),
                     memory=describe(item), failed_tasks=failed)
        if pred is not None:
            done += 1
            apply_verdict(manager, item, pred, store)
    return done


def apply_verdict(manager: Any, item: MemoryItem, pred: dspy.Prediction, store: Any) -> None:
    at = manager.at(store, item.namespace, item.event_time)
    reason = f"reflection ({pred.verdict}): {pred.reason}"
    text = str(pred.corrected_memory or "").strip()
    if pred.verdict == "delete":
        manager.tombstone(item, store, reason)
    elif pred.verdict == "revise" and text != item.text.strip():
        revised = MemoryItem(
            text=text, kind=item.kind, id=make_item_id(item.kind, item.episode_id, text, "revised"),
            fields=dict(item.fields), episode_id=item.episode_id, source_ids=list(item.source_ids),
            outcome=item.outcome, event_time=item.event_time, namespace=item.namespace, key=item.key)
        revised.log("revised", manager.actor, reason, [item.id], at)
        store.add([revised])
        manager.supersede(item, revised, store, reason)
    else:
        item.log("reflected", manager.actor, reason, at=at)
        store.update(item)
