"""The four managers: upsert by key, dedup, conflicts, feedback, curation and prune, promotion,
consolidation, edge feedback, and the LM judgement paths (DummyLM, malformed answers)."""
from __future__ import annotations

import logging

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from memarch.modules.managers.graph_consolidate import GraphConsolidateManager
from memarch.modules.managers.json_full import JsonFullManager
from memarch.modules.managers.lightweight import LightweightManager
from memarch.modules.managers.tool_manager import ToolManager
from memarch.modules.retrievers.graph import GraphRetriever
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Episode, Query, Step
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval, ScoredItem

MANAGERS = [LightweightManager, JsonFullManager, ToolManager, GraphConsolidateManager]


def fact(text, key=None, when=None, ep="e1", outcome="unknown", kind="fact", ns="default"):
    return MemoryItem(text=text, kind=kind, key=key, event_time=when, episode_id=ep, outcome=outcome, namespace=ns)


def write(manager, store, items, episode=None):
    store.add(manager.on_insert(items, store))
    if episode is not None:
        manager.after_episode(episode, store)


def actions(item):
    return [e.action for e in item.lineage]


def with_lm(hash_resources, answers):
    lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    return Resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir, lm=lm), lm


# -- registry --------------------------------------------------------------------------------------
def test_registration_ranks_and_capabilities():
    assert REGISTRY.names("manager") == ["lightweight", "json_full", "tool_manager", "graph_consolidate"]
    specs = {n: REGISTRY.get("manager", n) for n in REGISTRY.names("manager")}
    assert not any(s.needs_lm for s in specs.values())
    assert [s.uses_lm for s in specs.values()] == [False, True, True, True]
    assert specs["graph_consolidate"].requires_store == {"graph"}
    assert specs["graph_consolidate"].requires_retriever == {"graph"}


# -- upsert by key ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", MANAGERS)
def test_newer_fact_supersedes_older_with_lineage(cls, hash_resources):
    m, store = cls(hash_resources), JsonStore(hash_resources)
    old = fact("Caroline works as a nurse", key="caroline|job", when="2023-05-01", ep="s1")
    write(m, store, [old])
    new = fact("Caroline is now a school counsellor", key="caroline|job", when="2023-07-09", ep="s2")
    write(m, store, [new])
    assert [it.id for it in store.list()] == [new.id]
    tomb = store.get(old.id, include_deleted=True)
    assert tomb.status == "superseded" and tomb in store.tombstones()
    last = tomb.lineage[-1]
    assert (last.action, last.actor, last.related, last.at) == ("superseded_by", m.actor, [new.id], "2023-07-09")
    assert "caroline|job" in last.reason
    sup = next(e for e in new.lineage if e.action == "supersedes")
    assert sup.related == [old.id]


def test_older_fact_arriving_late_is_superseded_and_undated_is_older(hash_resources):
    m, store = LightweightManager(hash_resources), JsonStore(hash_resources)
    current = fact("Melanie lives in Boston", key="melanie|city", when="2023-08-01", ep="s3")
    write(m, store, [current])
    late = fact("Melanie lives in Denver", key="melanie|city", when="2023-02-01", ep="s1")
    undated = fact("Melanie lives in Austin", key="melanie|city", when=None, ep="s0")
    write(m, store, [late, undated])
    assert [it.id for it in store.list()] == [current.id]
    for t in (late, undated):
        tomb = store.get(t.id, include_deleted=True)
        assert tomb.status == "superseded" and tomb.lineage[-1].related == [current.id]


def test_same_key_within_one_batch_keeps_latest(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    a = fact("Jon's dog is Max", key="jon|dog", when="2023-01-01")
    b = fact("Jon adopted a new dog called Bella", key="jon|dog", when="2023-03-01")
    write(m, store, [a, b])
    assert [it.id for it in store.list()] == [b.id]
    assert store.get(a.id, include_deleted=True).status == "superseded"


# -- dedup -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", MANAGERS)
def test_duplicate_writes_collapse(cls, hash_resources):
    m, store = cls(hash_resources), JsonStore(hash_resources)
    first = fact("Use the search tool with exact product names", kind="tip", ep="t1")
    write(m, store, [first])
    again = fact("use the search tool with exact product names.", kind="tip", ep="t2")
    write(m, store, [again])
    assert [it.id for it in store.list()] == [first.id]
    assert store.get(again.id, include_deleted=True).lineage[-1].related == [first.id]
    merged = next(e for e in first.lineage if e.action == "merged_from")
    assert merged.related == [again.id] and merged.data["episode_id"] == "t2"
    # The very same item written again (an episode re-encoded) stays one record.
    write(m, store, [fact("Use the search tool with exact product names", kind="tip", ep="t1")])
    assert store.count(include_deleted=True) == 2 and "rewritten" in actions(first)


def test_semantic_dedup_threshold_differs_by_preset(hash_resources):
    a_text = "open the fridge before taking the apple"
    b_text = "always open the fridge before taking the apple"  # cosine 0.94 with the hash embedder
    for cls, expected in ((LightweightManager, 2), (JsonFullManager, 1)):
        m, store = cls(hash_resources), JsonStore(hash_resources)
        write(m, store, [fact(a_text, kind="tip", ep="t1")])
        write(m, store, [fact(b_text, kind="tip", ep="t2")])
        assert store.count() == expected, cls.__name__


def test_json_full_dedups_across_kinds_but_not_across_keys(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    write(m, store, [fact("check the drawer for the key first", kind="tip", ep="t1")])
    write(m, store, [fact("check the drawer for the key first always", kind="insight", ep="t2")])
    assert store.count() == 1
    write(m, store, [fact("Alice works at the big red bank downtown", key="alice|job")])
    write(m, store, [fact("Alice works at the big red bank downtown", key="bob|job", kind="note")])
    assert store.count() == 3


# -- conflicts -------------------------------------------------------------------------------------
def _conflict_pair():
    old = fact("open the fridge before taking the apple", kind="tip", ep="t1", outcome="failure", when="2024-01-01")
    new = fact("always open the fridge before taking the apple", kind="tip", ep="t2", outcome="success",
               when="2024-01-02")
    return old, new


def test_opposite_outcomes_without_lm_keep_both_flagged(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    old, new = _conflict_pair()
    write(m, store, [old])
    write(m, store, [new])
    assert store.count() == 2
    flags = [e for e in old.lineage if e.action == "conflict"]
    assert flags and flags[0].related == [new.id] and flags[0].data["decision"] == "keep_both"


def test_lm_resolves_conflict_keep_new(hash_resources):
    res, lm = with_lm(hash_resources, [{"decision": "keep_new", "reason": "the success shows the right order"}])
    m, store = JsonFullManager(res), JsonStore(res)
    old, new = _conflict_pair()
    write(m, store, [old])
    write(m, store, [new])
    assert [it.id for it in store.list()] == [new.id]
    tomb = store.get(old.id, include_deleted=True)
    assert tomb.status == "superseded" and "keep_new" in tomb.lineage[-1].reason


def test_lm_malformed_answer_retried_once(hash_resources):
    res, lm = with_lm(hash_resources, [{"decision": "maybe", "reason": "?"},
                                      {"decision": "keep_old", "reason": "the failure is newer but wrong"}])
    m, store = JsonFullManager(res), JsonStore(res)
    old, new = _conflict_pair()
    write(m, store, [old])
    write(m, store, [new])
    assert [it.id for it in store.list()] == [old.id]
    assert store.get(new.id, include_deleted=True).status == "superseded"
    assert m._resolver.calls == 2 and m._resolver.fallbacks == 0
    retry_prompt = str(lm.history[-1]["messages"])
    assert "Your previous answer was rejected: " in retry_prompt
    assert "Your previous answer was rejected: " not in str(lm.history[-2]["messages"])


def test_lm_malformed_twice_falls_back_to_rule_and_logs(hash_resources, caplog):
    res, _ = with_lm(hash_resources, [{"decision": "maybe", "reason": "?"}, {"decision": "dunno", "reason": "?"}])
    m, store = JsonFullManager(res), JsonStore(res)
    old, new = _conflict_pair()
    write(m, store, [old])
    with caplog.at_level(logging.WARNING):
        write(m, store, [new])
    assert store.count() == 2 and m._resolver.fallbacks == 1
    assert any("LM-free rule" in r.message for r in caplog.records)


def test_lm_conflict_budget_is_five_pairs_a_run(hash_resources):
    res, _ = with_lm(hash_resources, [{"decision": "keep_both", "reason": "different"}] * 20)
    m, store = JsonFullManager(res), JsonStore(res)
    topics = ["fridge", "drawer", "cabinet", "shelf", "oven", "sink", "table"]
    write(m, store, [fact(f"open the {t} before taking the apple", kind="tip", ep=f"f{t}", outcome="failure")
                     for t in topics])
    write(m, store, [fact(f"always open the {t} before taking the apple", kind="tip", ep=f"s{t}",
                          outcome="success") for t in topics])
    assert m._resolver.calls == 5
    assert store.count() == 14


# -- feedback, curation, prune ---------------------------------------------------------------------
def _retrieval(items, text="find the mug"):
    return Retrieval(query=Query(text=text, id="q1"), items=[ScoredItem(it, 1.0) for it in items])


def test_feedback_boosts_and_penalises(hash_resources):
    m, store = LightweightManager(hash_resources), JsonStore(hash_resources)
    a, b = fact("look in the cabinet for the mug", kind="tip"), fact("the mug is never in the sink", kind="tip")
    write(m, store, [a, b])
    m.feedback(_retrieval([a]), True, store)
    m.feedback(_retrieval([b]), False, store)
    m.feedback(_retrieval([b]), None, store)
    assert (a.usage.retrieved, a.usage.helped_success, a.usage.strength) == (1, 1, 1.25)
    assert (b.usage.retrieved, b.usage.helped_failure, b.usage.strength) == (2, 1, 0.75)
    assert "boosted" in actions(a) and "penalised" in actions(b)
    assert m.failed_queries[b.id] == ["find the mug"]


def test_curation_tombstones_misleading_items(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    bad = fact("the key is under the mat", kind="tip")
    write(m, store, [bad])
    for _ in range(3):
        m.feedback(_retrieval([bad]), False, store)
    m.periodic(store, "default")
    assert store.count() == 0
    assert store.tombstones()[0].lineage[-1].reason.startswith("curated:")


def test_size_cap_prunes_lowest_utility_for_experience_only(hash_resources):
    m, store = JsonFullManager(hash_resources, max_items=2), JsonStore(hash_resources)
    items = [fact(t, kind="tip", ep=f"t{i}") for i, t in enumerate(
        ["water the plants daily", "charge the robot at night", "label every box clearly"])]
    write(m, store, items, Episode(id="t0", steps=[]))
    m.feedback(_retrieval([items[0]]), True, store)
    m.feedback(_retrieval([items[2]]), True, store)
    m.periodic(store, "default")
    assert sorted(it.id for it in store.list()) == sorted([items[0].id, items[2].id])
    assert store.tombstones()[0].lineage[-1].reason.startswith("pruned: low utility")

    # A conversation has no default cap (its facts are the memory); 300 is the experience default.
    conv = LightweightManager(hash_resources)
    cstore = JsonStore(hash_resources)
    many = [fact(f"fact number {i} about topic {i * 7}", ep="s1") for i in range(305)]
    write(conv, cstore, many, Episode(id="s1", turns=[]))
    conv._family = "conversation"
    conv.periodic(cstore, "default")
    assert cstore.count() == 305
    exp = LightweightManager(hash_resources, family="experience")
    estore = JsonStore(hash_resources)
    write(exp, estore, [fact(f"tip number {i} about topic {i * 7}", kind="tip") for i in range(305)])
    exp.periodic(estore, "default")
    assert estore.count() == 300 and len(estore.tombstones()) == 5


def test_lightweight_time_decay_and_score_prune(hash_resources):
    m, store = LightweightManager(hash_resources, family="experience"), JsonStore(hash_resources)
    old = fact("the lamp switch is behind the door", kind="tip")
    write(m, store, [old], Episode(id="e0"))
    for i in range(1, 10):
        m.after_episode(Episode(id=f"e{i}"), store)
    assert m.utility(old, m.tick(store, "default")) == pytest.approx(0.95 ** 10)
    for i in range(10, 45):
        m.after_episode(Episode(id=f"e{i}"), store)
    m.periodic(store, "default")
    assert store.count() == 0 and "pruned: low utility" in store.tombstones()[0].lineage[-1].reason


def test_clock_survives_save_and_reload(hash_resources, tmp_path):
    m, store = LightweightManager(hash_resources), JsonStore(hash_resources)
    for i in range(3):
        write(m, store, [fact(f"note {i} on a distinct subject {i * 11}", kind="tip", ep=f"e{i}")], Episode(id=f"e{i}"))
    store.save(tmp_path)
    fresh = LightweightManager(hash_resources)
    assert fresh.tick(JsonStore.load(tmp_path, hash_resources), "default") == 3


# -- promotion -------------------------------------------------------------------------------------
def _trajectory(ep, obj, place, outcome="success"):
    acts = [f"go to {place}", f"open {place}", f"take {obj} from {place}", "inventory"]
    return MemoryItem(text=" -> ".join(acts), kind="trajectory", episode_id=ep, outcome=outcome,
                      fields={"actions": acts, "task": f"put the {obj} on the table"}, event_time=f"2024-01-0{ep[-1]}")


@pytest.mark.parametrize("cls", [JsonFullManager, ToolManager])
def test_trajectories_promote_to_workflow(cls, hash_resources):
    m, store = cls(hash_resources), JsonStore(hash_resources)
    t1 = _trajectory("e1", "apple", "fridge")
    write(m, store, [t1], Episode(id="e1", outcome="success"))
    failed = _trajectory("e2", "pear", "cupboard", outcome="failure")
    write(m, store, [failed], Episode(id="e2", outcome="failure"))
    assert store.list(where={"kind": "workflow"}) == []
    t3 = _trajectory("e3", "mug", "cabinet")
    write(m, store, [t3], Episode(id="e3", outcome="success"))
    [wf] = store.list(where={"kind": "workflow"})
    assert "<OBJECT>" in " ".join(wf.fields["steps"]) and "mug" not in " ".join(wf.fields["steps"])
    promoted = wf.lineage[0]
    assert promoted.action == "promoted" and set(promoted.related) == {t1.id, t3.id}
    assert sorted(wf.fields["support"]) == ["e1", "e3"]
    assert "promoted_into" in actions(t1)
    # A third success with the same pattern reinforces the workflow instead of duplicating it.
    write(m, store, [_trajectory("e4", "cup", "shelf")], Episode(id="e4", outcome="success"))
    assert len(store.list(where={"kind": "workflow"})) == 1 and "reinforced" in actions(wf)


def test_unrelated_successes_make_no_workflow(hash_resources):
    m, store = ToolManager(hash_resources), JsonStore(hash_resources)
    cook = ["go to kitchen", "open fridge", "take egg from fridge", "cook egg with stove", "eat egg", "wash plate"]
    read = ["go to study", "open drawer", "take book from drawer", "read book", "sit on chair", "sleep"]
    for i, acts in enumerate((cook, read)):
        item = MemoryItem(text=" -> ".join(acts), kind="trajectory", episode_id=f"e{i}", outcome="success",
                          fields={"actions": acts})
        write(m, store, [item], Episode(id=f"e{i}", outcome="success"))
    assert store.list(where={"kind": "workflow"}) == [], "3 shared shapes of 6 is under the 0.6 coverage"
    m2, store2 = ToolManager(hash_resources, workflow_coverage=0.5), JsonStore(hash_resources)
    for i, acts in enumerate((cook, read)):
        item = MemoryItem(text=" -> ".join(acts), kind="trajectory", episode_id=f"e{i}", outcome="success",
                          fields={"actions": acts})
        write(m2, store2, [item], Episode(id=f"e{i}", outcome="success"))
    [wf] = store2.list(where={"kind": "workflow"})
    assert wf.fields["shapes"] == ["go to <LOCATION>", "open <OBJECT>", "take <OBJECT> from <LOCATION>"]
    assert not any(w in " ".join(wf.fields["steps"]) for w in ("kitchen", "fridge", "study", "drawer"))


def _shortcut(ep, args, expected=None, key="take <OBJECT> from <LOCATION>"):
    steps = ["go to <LOCATION>", "take <OBJECT> from <LOCATION>"]
    inv = {"arguments": args}
    if expected is not None:
        inv["expected_actions"] = expected
    return MemoryItem(text=f"macro fetch: {' ; '.join(steps)} ({ep})", kind="shortcut", episode_id=ep, key=key,
                      outcome="success", fields={
                          "name": "fetch", "steps": steps, "test_invocation": inv,
                          "input_schema": {"type": "object", "required": ["OBJECT", "LOCATION"], "properties": {
                              "OBJECT": {"type": "string"}, "LOCATION": {"type": "string"}}}})


def test_shortcut_validated_after_two_successes(hash_resources):
    m, store = ToolManager(hash_resources), JsonStore(hash_resources)
    args = {"OBJECT": "apple", "LOCATION": "fridge"}
    write(m, store, [_shortcut("e1", args, ["go to fridge", "take apple from fridge"])],
          Episode(id="e1", outcome="success"))
    assert not store.list(where={"kind": "shortcut"})[0].fields.get("validated")
    write(m, store, [_shortcut("e2", args, ["go to fridge", "take apple from fridge"])],
          Episode(id="e2", outcome="success"))
    [sc] = store.list(where={"kind": "shortcut"})
    assert sc.fields["validated"] is True and sc.episode_id == "e2"
    entry = next(e for e in sc.lineage if e.action == "validated")
    assert entry.data["episodes"] == ["e1", "e2"]


@pytest.mark.parametrize("args,expected,problem", [
    ({"OBJECT": "apple"}, None, "lacks required"),
    ({"OBJECT": "apple", "LOCATION": "fridge", "COLOR": "red"}, None, "undeclared"),
    ({"OBJECT": "apple", "LOCATION": 3}, None, "should be string"),
    ({"OBJECT": "apple", "LOCATION": "fridge"}, ["go to sink", "take apple from fridge"], "reproduce"),
])
def test_invalid_shortcut_is_tombstoned_with_reason(args, expected, problem, hash_resources):
    m, store = ToolManager(hash_resources), JsonStore(hash_resources)
    sc = _shortcut("e1", args, expected)
    write(m, store, [sc], Episode(id="e1", outcome="success"))
    assert store.count() == 0
    reason = store.get(sc.id, include_deleted=True).lineage[-1].reason
    assert reason.startswith("invalid shortcut:") and problem in reason


# -- reflection ------------------------------------------------------------------------------------
def test_reflection_revises_a_misleading_memory(hash_resources):
    res, _ = with_lm(hash_resources, [{"verdict": "revise", "corrected_memory": "the key is in the drawer",
                                       "reason": "tasks found it in the drawer"}])
    m, store = JsonFullManager(res), JsonStore(res)
    bad = fact("the key is under the mat", kind="tip")
    write(m, store, [bad])
    for _ in range(2):
        m.feedback(_retrieval([bad], "find the key"), False, store)
    m.periodic(store, "default")
    [revised] = store.list()
    assert revised.text == "the key is in the drawer" and revised.lineage[0].related == [bad.id]
    assert store.get(bad.id, include_deleted=True).status == "superseded"


def test_reflection_unusable_answer_leaves_item_to_curation(hash_resources):
    res, _ = with_lm(hash_resources, [{"verdict": "revise", "corrected_memory": "", "reason": "?"}] * 2)
    m, store = ToolManager(res), JsonStore(res)
    sc = fact("macro open: open <X>", kind="shortcut")
    write(m, store, [sc])
    for _ in range(2):
        m.feedback(_retrieval([sc]), False, store)
    m.periodic(store, "default")
    assert store.get(sc.id) is not None and m._corrector.fallbacks == 1


# -- graph consolidation ---------------------------------------------------------------------------
def _edge_weight(store, u, v, edge_type):
    g = store.graph()
    data = g.get_edge_data(u, v, key=edge_type) or g.get_edge_data(v, u, key=edge_type)
    return data["weight"]


def test_edge_feedback_follows_the_traversal_path(hash_resources):
    m, store = GraphConsolidateManager(hash_resources), GraphStore(hash_resources)
    seed = fact("Caroline joined a support group in May", ep="s1")
    hop = fact("the group meets on Fridays at the library", ep="s2")
    write(m, store, [seed, hop])
    store.add_edge(seed.id, hop.id, "COOCCURS", 1.0)
    retrieval = Retrieval(query=Query(text="when does Caroline's group meet?"), items=[
        ScoredItem(seed, 0.9, {"seed": seed.id, "hop": 0, "edge_type": None, "path": [seed.id]}),
        ScoredItem(hop, 0.6, {"seed": seed.id, "hop": 1, "edge_type": "COOCCURS",
                              "path": [seed.id, ["COOCCURS", hop.id]]})])
    m.feedback(retrieval, True, store)
    assert _edge_weight(store, seed.id, hop.id, "COOCCURS") == pytest.approx(1.1)
    m.feedback(retrieval, False, store)
    m.feedback(retrieval, False, store)
    assert _edge_weight(store, seed.id, hop.id, "COOCCURS") == pytest.approx(0.9)
    assert [e.data["weight"] for e in hop.lineage if e.action == "edge_adjusted"] == [1.1, 1.0, 0.9]
    # A path through an item that is gone since the read is skipped, not an error.
    stale = Retrieval(query=Query(text="x"), items=[ScoredItem(hop, 0.5, {"path": [seed.id, ["COOCCURS", "gone"]]})])
    m.feedback(stale, True, store)


def test_edge_feedback_from_the_graph_retriever(hash_resources):
    m, store = GraphConsolidateManager(hash_resources), GraphStore(hash_resources)
    items = [fact("Caroline went to the LGBTQ support group", ep="s1", when="2023-05-07"),
             fact("Caroline said the support group was inspiring", ep="s2", when="2023-05-08"),
             fact("Melanie painted a sunrise over the lake", ep="s3", when="2023-05-09")]
    write(m, store, items)
    retrieval = GraphRetriever(hash_resources, seeds=1).retrieve(Query(text="Caroline support group"), store, top_k=4)
    hops = [s for s in retrieval.items if s.trace.get("hop", 0) >= 1]
    assert hops, "the retriever should reach an item through an edge"
    u, v, etype = (hops[0].trace["path"][0], hops[0].trace["path"][1][1], hops[0].trace["path"][1][0])
    before = _edge_weight(store, u, v, etype)
    m.feedback(retrieval, True, store)
    assert _edge_weight(store, u, v, etype) == pytest.approx(min(5.0, before + 0.1))


def _recurring(ep, n):
    return fact(f"check the drawer for the key first {'always ' * n}".strip(), kind="tip", ep=ep, outcome="success")


def test_generalise_across_episodes_without_lm(hash_resources):
    m = GraphConsolidateManager(hash_resources, merge_threshold=0.99, dedup_threshold=0.999)
    store = GraphStore(hash_resources)
    members = [_recurring("e1", 0), _recurring("e2", 1), _recurring("e3", 2)]
    write(m, store, members)
    m.periodic(store, "default")
    [general] = [it for it in store.list() if it.fields.get("generalised")]
    assert general.text.startswith("Across 3 episodes:") and general.fields["episodes"] == ["e1", "e2", "e3"]
    assert sorted(general.lineage[0].related) == sorted(it.id for it in members)
    assert all(store.graph().has_edge(general.id, it.id, key="REINFORCES") for it in members)
    m.periodic(store, "default")  # already generalised: no second general memory
    assert sum(1 for it in store.list() if it.fields.get("generalised")) == 1
    late = _recurring("e4", 1)
    late.text += " indeed"
    write(m, store, [late])
    m.periodic(store, "default")  # a new member joins the existing general memory
    assert sum(1 for it in store.list() if it.fields.get("generalised")) == 1
    assert late.id in general.fields["generalised_from"] and "e4" in general.fields["episodes"]
    assert store.graph().has_edge(general.id, late.id, key="REINFORCES")


def test_generalise_with_lm_and_merge_near_duplicates(hash_resources):
    res, _ = with_lm(hash_resources, [{"general_memory": "Search drawers before anything else."}])
    m = GraphConsolidateManager(res, merge_threshold=0.93, dedup_threshold=0.999)
    store = GraphStore(res)
    members = [_recurring("e1", 0), _recurring("e2", 1), _recurring("e3", 2)]
    write(m, store, members)
    m.periodic(store, "default")
    merged = [it for it in store.tombstones() if "cluster merge" in it.lineage[-1].reason]
    assert merged, "near-duplicates (cosine >= 0.93) merge first"
    # After the merge only two members remain: too few to generalise (generalise_min=3).
    assert not any(it.fields.get("generalised") for it in store.list())
    m2, store2 = GraphConsolidateManager(res, merge_threshold=0.99, dedup_threshold=0.999), GraphStore(res)
    write(m2, store2, [_recurring("e1", 0), _recurring("e2", 1), _recurring("e3", 2)])
    m2.periodic(store2, "default")
    assert [it.text for it in store2.list() if it.fields.get("generalised")] == ["Search drawers before anything else."]


# -- lineage of every manager ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", MANAGERS)
def test_every_manager_leaves_lineage(cls, hash_resources):
    m, store = cls(hash_resources), JsonStore(hash_resources)
    it = fact("the printer needs paper in tray two", kind="tip", when="2024-03-01")
    write(m, store, [it], Episode(id="e1"))
    admitted = it.lineage[-1]
    assert (admitted.action, admitted.actor, admitted.at) == ("admitted", f"manager:{m.name}", "2024-03-01")
    m.feedback(_retrieval([it]), True, store)
    assert it.lineage[-1].actor == f"manager:{m.name}" and it.lineage[-1].at == "episode:1"


def test_clusters_are_stars_not_chains(hash_resources):
    from memarch.modules.managers._consolidation import clusters

    items = [_recurring(f"e{n}", n) for n in range(6)]  # neighbours >= 0.94, ends 0.51 apart
    vecs = hash_resources.embedder.embed([it.text for it in items])
    [group] = clusters(items, vecs, 0.93)
    assert 0 not in group and len(group) >= 3
    sims = vecs[group] @ vecs[group].T
    assert (sims.max(axis=0) >= 0.93).all() and sims.min() > 0.51
    assert len(clusters(items, vecs, 0.93, max_size=2)[0]) == 2


def test_conversation_defaults_keep_similar_turns(hash_resources):
    a = fact("open the fridge before taking the apple", kind="turn", ep="s1", when="2023-05-01")
    b = fact("always open the fridge before taking the apple", kind="turn", ep="s2", when="2023-06-01")
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    write(m, store, [a], Episode(id="s1", turns=[]))
    write(m, store, [b], Episode(id="s2", turns=[]))
    m.periodic(store, "default")
    assert store.count() == 2, "cosine 0.94 is a duplicate for agent tips, not for dialogue turns"
    assert m.setting("max_items", store, "default") is None
    write(m, store, [fact("Always open the fridge before taking the apple!", kind="turn", ep="s3")])
    assert store.count() == 2, "a verbatim repeat still collapses"
    explicit = JsonFullManager(hash_resources, dedup_threshold=0.9)
    assert explicit.setting("dedup_threshold", store, "default") == 0.9


# -- through MemoryProgram with the real encoders --------------------------------------------------
def _agent_episode(i, obj, place):
    acts = [(f"go to {place}", f"You arrive at the {place}."), (f"open {place}", f"You open the {place}."),
            (f"take {obj} from {place}", f"You take the {obj}."), ("go to table", "You arrive at the table."),
            (f"put {obj} on table", "Done.")]
    return Episode(id=f"e{i}", task=f"put the {obj} on the table", outcome="success",
                   steps=[Step(f"s{j}", a, o) for j, (a, o) in enumerate(acts)])


def test_program_tool_manager_validates_mined_shortcuts(hash_resources):
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram(Architecture(("trajectory", "shortcut"), "json", "hybrid", "tool_manager"),
                            resources=hash_resources)
    for i, (obj, place) in enumerate([("apple", "fridge"), ("milk", "fridge"), ("mug", "cabinet")]):
        program.write(_agent_episode(i, obj, place))
    store = program.store
    [shortcut] = store.list(where={"kind": "shortcut"})
    assert shortcut.fields.get("validated") is True
    [workflow] = store.list(where={"kind": "workflow"})
    assert workflow.lineage[0].action == "promoted" and "<OBJECT>" in workflow.text
    assert all(t.lineage[-1].reason for t in store.tombstones())


def test_program_graph_consolidate_feedback(hash_resources):
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram(Architecture(("trajectory",), "graph", "graph", "graph_consolidate"),
                            resources=hash_resources, config={"retriever": {"seeds": 1}})
    for i, (obj, place) in enumerate([("apple", "fridge"), ("milk", "fridge"), ("mug", "cabinet")]):
        program.write(_agent_episode(i, obj, place))
    retrieval = program.read("put the pear on the table")
    hops = [s for s in retrieval.items if s.trace.get("hop", 0) >= 1]
    assert hops
    program.feedback(retrieval, True)
    assert any(e.action == "edge_adjusted" for e in hops[0].item.lineage)


@pytest.mark.parametrize("store_name", ["json", "vector", "hybrid", "graph"])
@pytest.mark.parametrize("cls", MANAGERS)
def test_every_store_stays_consistent(cls, store_name, hash_resources, tmp_path):
    store = REGISTRY.get("store", store_name).cls(hash_resources)
    m = cls(hash_resources, max_items=3, period=1)
    write(m, store, [fact("Jon's dog is Max", key="jon|dog", when="2023-01-01", ep="s1"),
                     fact("the printer needs paper in tray two", kind="tip", ep="s1")], Episode(id="s1"))
    write(m, store, [fact("Jon adopted a dog called Bella", key="jon|dog", when="2023-03-01", ep="s2"),
                     fact("The printer needs paper in tray two!", kind="tip", ep="s2"),
                     fact("water the plants every morning", kind="tip", ep="s2"),
                     fact("label every box before moving", kind="tip", ep="s2")], Episode(id="s2"))
    active = store.list()
    m.feedback(_retrieval(active[:2]), True, store)
    m.feedback(_retrieval(active[2:]), False, store)
    m.periodic(store, "default")
    assert store.count() == 3 and store.count(include_deleted=True) == 6
    assert all(t.lineage[-1].reason and t.lineage[-1].actor == m.actor for t in store.tombstones())
    live = {it.id for it in store.list()}
    hits = store.search(hash_resources.embedder.embed(["printer paper dog plants box"])[0], 10)
    assert {it.id for it, _ in hits} <= live
    store.save(tmp_path)
    again = type(store).load(tmp_path, hash_resources)
    assert {it.id for it in again.list()} == live and len(again.tombstones()) == 3


@pytest.mark.integration
def test_locomo_conversation_keeps_its_turns(resources, data_dir):
    """Real MiniLM embeddings on a LoCoMo conversation: no turn is lost to dedup, merge or prune."""
    from memarch.benchmarks.locomo import LoCoMo
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.program import MemoryProgram

    dialogue = LoCoMo(data_dir / "locomo").dialogues[0]
    program = MemoryProgram(Architecture(("fact", "turn"), "json", "hybrid", "json_full"), resources=resources)
    for session in dialogue.sessions:
        program.write(session)
    ns = dialogue.sessions[0].namespace
    turns = {t.id for s in dialogue.sessions for t in s.turns}
    kept = {sid for it in program.store.list(ns, where={"kind": "turn"}) for sid in it.source_ids}
    assert turns <= kept
    assert all(t.lineage[-1].reason for t in program.store.tombstones(ns))
