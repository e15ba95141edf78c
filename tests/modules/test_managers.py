"""The managers' common floor: registration, upsert by key, dedup, conflicts (with the LM judgement
paths on DummyLM, malformed answers included), feedback, curation, size cap and decay."""
from __future__ import annotations

import logging

import pytest

from memarch.modules.managers.json_full import JsonFullManager
from memarch.modules.managers.lightweight import LightweightManager
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Episode
from memarch.pipeline.registry import REGISTRY
from manager_helpers import MANAGERS, actions, fact, retrieval_of, with_lm, write


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
def test_feedback_boosts_and_penalises(hash_resources):
    m, store = LightweightManager(hash_resources), JsonStore(hash_resources)
    a, b = fact("look in the cabinet for the mug", kind="tip"), fact("the mug is never in the sink", kind="tip")
    write(m, store, [a, b])
    m.feedback(retrieval_of([a]), True, store)
    m.feedback(retrieval_of([b]), False, store)
    m.feedback(retrieval_of([b]), None, store)
    assert (a.usage.retrieved, a.usage.helped_success, a.usage.strength) == (1, 1, 1.25)
    assert (b.usage.retrieved, b.usage.helped_failure, b.usage.strength) == (2, 1, 0.75)
    assert "boosted" in actions(a) and "penalised" in actions(b)
    assert m.failed_queries[b.id] == ["find the mug"]


def test_curation_tombstones_misleading_items(hash_resources):
    m, store = JsonFullManager(hash_resources), JsonStore(hash_resources)
    bad = fact("the key is under the mat", kind="tip")
    write(m, store, [bad])
    for _ in range(3):
        m.feedback(retrieval_of([bad]), False, store)
    m.periodic(store, "default")
    assert store.count() == 0
    assert store.tombstones()[0].lineage[-1].reason.startswith("curated:")


def test_size_cap_prunes_lowest_utility_for_experience_only(hash_resources):
    m, store = JsonFullManager(hash_resources, max_items=2), JsonStore(hash_resources)
    items = [fact(t, kind="tip", ep=f"t{i}") for i, t in enumerate(
        ["water the plants daily", "charge the robot at night", "label every box clearly"])]
    write(m, store, items, Episode(id="t0", steps=[]))
    m.feedback(retrieval_of([items[0]]), True, store)
    m.feedback(retrieval_of([items[2]]), True, store)
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


def test_a_dead_endpoint_fails_the_judgement_not_a_silent_rule(hash_resources):
    from lm_helpers import dead_lm

    from memarch.lm import LMUnavailableError
    from memarch.pipeline.resources import Resources

    lm, server = dead_lm()
    res = Resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir, lm=lm)
    m, store = JsonFullManager(res), JsonStore(res)
    old, new = _conflict_pair()
    write(m, store, [old])
    with pytest.raises(LMUnavailableError, match="unavailable"):
        write(m, store, [new])
    # no retry of a dead endpoint and no LM-free rule: the error reaches `evaluate`, whose trial fails
    assert server.calls == 1 and m._resolver.fallbacks == 0 and store.count() == 1
