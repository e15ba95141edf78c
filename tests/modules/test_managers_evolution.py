"""How the managers evolve memory: trajectory -> workflow promotion, shortcut validation, reflection,
graph consolidation with edge feedback, lineage of every manager, and runs through MemoryProgram."""
from __future__ import annotations


import pytest

from memarch.modules.managers.graph_consolidate import GraphConsolidateManager
from memarch.modules.managers.json_full import JsonFullManager
from memarch.modules.managers.tool_manager import ToolManager
from memarch.modules.retrievers.graph import GraphRetriever
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Episode, Query, Step
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.retrieval import Retrieval, ScoredItem
from manager_helpers import MANAGERS, actions, fact, retrieval_of, with_lm, write


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
        m.feedback(retrieval_of([bad], "find the key"), False, store)
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
        m.feedback(retrieval_of([sc]), False, store)
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
    m.feedback(retrieval_of([it]), True, store)
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
    m.feedback(retrieval_of(active[:2]), True, store)
    m.feedback(retrieval_of(active[2:]), False, store)
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
