"""`StoreView` (source id -> stored items, for failure attribution) caught up from the store's
journal equals one built from scratch after every kind of write: adds, merges that change an item's
sources, supersedes, deletes and replacements."""
from __future__ import annotations

from memarch.benchmarks.evaluation.attribution import StoreView
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.items import MemoryItem


def _flat(index: dict[str, list[MemoryItem]]) -> dict[str, set[tuple[str, str]]]:
    """sid -> {(item id, status)}: what attribution reads (any active? any removed by a manager?)."""
    return {sid: {(it.id, it.status) for it in items} for sid, items in index.items() if items}


def test_caught_up_view_equals_a_rebuilt_one_after_each_write():
    store, ns = JsonStore(), "c"
    live = StoreView()
    a = MemoryItem("Ann moved to Paris", "turn", episode_id="s1", source_ids=["D1:1"], namespace=ns)
    b = MemoryItem("Bob likes tea", "turn", episode_id="s1", source_ids=["D1:2"], namespace=ns)
    c = MemoryItem("Ann lives in Paris", "fact", episode_id="s2", source_ids=["D2:5"], namespace=ns)

    def merge_b_into_a():
        a.source_ids = a.source_ids + b.source_ids
        store.update(a)

    def replace_c():
        store.add([MemoryItem(c.text, "fact", id=c.id, episode_id="s3", source_ids=["D3:1"], namespace=ns)])

    steps = [lambda: store.add([a, b]), lambda: store.add([c]), merge_b_into_a,
             lambda: store.delete(b.id, ns, reason="merged", actor="manager:test", status="superseded"),
             replace_c, lambda: store.delete(a.id, ns), lambda: None]
    for step in steps:
        step()
        assert _flat(live.by_source(store, ns)) == _flat(StoreView().by_source(store, ns))
    final = _flat(live.by_source(store, ns))
    assert final["D1:2"] == {(a.id, "deleted"), (b.id, "superseded")} and "D2:5" not in final
    assert final["D3:1"] == {(c.id, "active")} and final["s3"] == {(c.id, "active")}


def test_an_unknown_history_rebuilds():
    """A view older than the store's journal remembers (here: a fresh store object) is rebuilt."""
    view, ns = StoreView(), "c"
    first = JsonStore()
    first.add([MemoryItem("x", "turn", source_ids=["t1"], namespace=ns)])
    view.by_source(first, ns)
    second = JsonStore()
    for i in range(3):
        second.add([MemoryItem(f"y{i}", "turn", source_ids=[f"t{i}"], namespace=ns)])
    assert _flat(view.by_source(second, ns)) == _flat(StoreView().by_source(second, ns))
