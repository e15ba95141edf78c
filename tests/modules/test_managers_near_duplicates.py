"""Every near-duplicate path of every manager keeps texts that differ in content words apart
(insert-time dedup and conflicts, cluster merges, the budget's merge and generalisation), and every
merge names what it absorbed, with the absorbed text, on the survivor."""
from __future__ import annotations

import pytest

from memarch.modules.managers._budget_policies import compress_sessions, merge_near_duplicates, neighbourhoods
from memarch.modules.managers.graph_consolidate import GraphConsolidateManager
from memarch.modules.managers.json_full import JsonFullManager
from memarch.modules.managers.tool_manager import ToolManager
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.json_store import JsonStore
from manager_helpers import MANAGERS, fact, write

CODE = "the code word of the blue team for the spring games this year is w{}xbob"
# Same content words as CODE.format(46), a few more words: a paraphrase that may merge.
AGAIN = "the code word of the blue team for the spring games this year is w46xbob indeed"


def _cos(res, a, b):
    va, vb = res.embedder.embed([a, b])
    return float(va @ vb)


def _absorbed(item):
    """{id: text} over the survivor's merged_from lineage entries."""
    out = {}
    for e in item.lineage:
        if e.action == "merged_from":
            out.update(e.data["absorbed"])
    return out


@pytest.mark.parametrize("cls", MANAGERS)
def test_insert_keeps_a_near_duplicate_with_another_code(cls, hash_resources):
    a, b = CODE.format(46), CODE.format(47)
    assert _cos(hash_resources, a, b) > 0.9  # above the threshold below: only the content rule separates them
    m, store = cls(hash_resources, dedup_threshold=0.8), JsonStore(hash_resources)
    write(m, store, [fact(a, kind="tip", ep="t1")])
    write(m, store, [fact(b, kind="tip", ep="t2")])
    assert sorted(it.text for it in store.list()) == [a, b]
    assert not store.tombstones()


@pytest.mark.parametrize("cls", MANAGERS)
def test_insert_merge_records_merged_from_with_the_absorbed_text(cls, hash_resources):
    m, store = cls(hash_resources, dedup_threshold=0.8), JsonStore(hash_resources)
    first, again = fact(CODE.format(46), kind="tip", ep="t1"), fact(AGAIN, kind="tip", ep="t2")
    write(m, store, [first])
    write(m, store, [again])
    assert [it.id for it in store.list()] == [first.id]
    assert store.get(again.id, include_deleted=True).status == "superseded"
    assert first.fields["merged_from"] == [again.id]
    assert _absorbed(first) == {again.id: AGAIN}


@pytest.mark.parametrize("cls", MANAGERS)
def test_a_subset_merges_into_its_superset_not_the_reverse(cls, hash_resources):
    full, part = CODE.format(46) + " since 2023", CODE.format(46)
    assert _cos(hash_resources, full, part) > 0.9
    m, store = cls(hash_resources, dedup_threshold=0.8), JsonStore(hash_resources)
    write(m, store, [fact(full, kind="tip", ep="t1")])
    write(m, store, [fact(part, kind="tip", ep="t2")])
    assert [it.text for it in store.list()] == [full]          # nothing the shorter one said is lost
    m, store = cls(hash_resources, dedup_threshold=0.8), JsonStore(hash_resources)
    write(m, store, [fact(part, kind="tip", ep="t1")])
    write(m, store, [fact(full, kind="tip", ep="t2")])
    assert sorted(it.text for it in store.list()) == [part, full]  # the year would be


def test_opposite_outcomes_about_different_codes_are_no_conflict(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    old = fact(CODE.format(46), kind="tip", ep="t1", outcome="failure")
    new = fact(CODE.format(47), kind="tip", ep="t2", outcome="success")
    write(m, store, [old])
    write(m, store, [new])
    assert store.count() == 2 and not any(e.action == "conflict" for e in old.lineage + new.lineage)


def _three(m, store, ep_kind="tip"):
    items = [fact(CODE.format(46), kind=ep_kind, ep="t1"), fact(CODE.format(47), kind=ep_kind, ep="t2"),
             fact(AGAIN, kind=ep_kind, ep="t3")]
    write(m, store, items)
    assert store.count() == 3
    return items


def test_json_full_cluster_merge_keeps_different_codes(hash_resources):
    m, store = JsonFullManager(hash_resources, dedup_threshold=0.999, merge_threshold=0.8), JsonStore(hash_resources)
    w46, w47, again = _three(m, store)
    assert m.merge_clusters(store, "default") == 1
    assert sorted(it.id for it in store.list()) == sorted([w46.id, w47.id])
    assert w46.fields["merged_from"] == [again.id] and _absorbed(w46) == {again.id: AGAIN}


def test_graph_consolidate_merge_keeps_different_codes(hash_resources):
    m = GraphConsolidateManager(hash_resources, dedup_threshold=0.999, merge_threshold=0.8, generalise=False)
    store = GraphStore(hash_resources)
    w46, w47, again = _three(m, store)
    assert m.merge(store, "default") == 1
    assert sorted(it.id for it in store.list()) == sorted([w46.id, w47.id])
    assert _absorbed(w46) == {again.id: AGAIN}


def test_json_full_budget_merge_keeps_different_codes(hash_resources):
    m = JsonFullManager(hash_resources, dedup_threshold=0.999, budget_merge_threshold=0.8)
    store = JsonStore(hash_resources)
    w46, w47, again = _three(m, store)
    merge_near_duplicates(m, store, "default", budget=1)
    assert sorted(it.id for it in store.list()) == sorted([w46.id, w47.id])
    assert w46.fields["merged_from"] == [again.id] and _absorbed(w46) == {again.id: AGAIN}


def test_graph_budget_near_duplicates_need_the_same_content(hash_resources):
    m = GraphConsolidateManager(hash_resources, dedup_threshold=0.999)
    store = JsonStore(hash_resources)  # no graph edges: only the near-duplicate links count
    w46, w47, again = _three(m, store)
    items = store.list()
    groups = neighbourhoods(store, "default", items, store.vectors(items), 0.8, 0.6, 8)
    assert [[items[i].id for i in g] for g in groups] == [[w46.id, again.id]]


def test_compression_keeps_the_members_texts_in_the_lineage(hash_resources):
    m, store = ToolManager(hash_resources, dedup_threshold=0.999), JsonStore(hash_resources)
    turns = [fact(f"Caroline said the answer to question {n} is in the green folder on the left shelf",
                  kind="turn", ep="s1", when=f"2023-05-0{n}") for n in range(1, 5)]
    write(m, store, turns)
    compress_sessions(m, store, "default", budget=1)
    [summary] = store.list()
    assert summary.fields["merged_from"] == [t.id for t in turns]
    assert _absorbed(summary) == {t.id: t.text for t in turns}


def test_a_merged_cluster_has_the_same_content_pairwise(hash_resources):
    from memarch.modules.managers._consolidation import clusters
    from memarch.modules.managers._content import same_content

    # Same content is not transitive: "will" is a word of the centre, a name (content) in the
    # second text and absent from the third; the centre matches both, they do not match each other.
    texts = ["the whole blue team will meet at the old river bridge tonight at nine",
             "the whole blue team Will meet at the old river bridge tonight at nine",
             "the whole blue team meet at the old river bridge tonight at nine"]
    items = [fact(t, kind="tip", ep=f"t{n}") for n, t in enumerate(texts)]
    assert same_content(texts[0], texts[1]) and same_content(texts[0], texts[2])
    assert not same_content(texts[1], texts[2])
    vecs = hash_resources.embedder.embed(texts)
    [group] = clusters(items, vecs, 0.8)
    assert len(group) == 2 and all(same_content(items[a].text, items[b].text) for a in group for b in group)
