"""The five experience encoders: LM-free algorithms (compression, workflow induction, failure
analysis, tips, shortcut mining), outcome gates, provenance, and the typed LM paths with DummyLM
(valid answer, one corrective retry, fallback to the LM-free path)."""
from __future__ import annotations

import json
import logging

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from memarch.modules.encoders._experience_actions import instantiate, parse_action
from memarch.modules.encoders.insight import InsightEncoder
from memarch.modules.encoders.shortcut import ShortcutEncoder
from memarch.modules.encoders.tip import TipEncoder
from memarch.modules.encoders.trajectory import TrajectoryEncoder
from memarch.modules.encoders.workflow import WorkflowEncoder
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Step
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.registry import REGISTRY


# -- a tiny deterministic episode builder ----------------------------------------------------------
def kitchen(eid: str, obj: str, outcome: str = "success", *, open_first: bool = False) -> Episode:
    """Slice ``obj``: the fridge is closed, so taking fails until it is opened (unless
    ``open_first``); a look is repeated (a no-op); the knife is on the counter."""
    acts = [("go to fridge", "You arrive at the fridge. The fridge is closed.")]
    if open_first:
        acts.append(("open fridge", f"You open the fridge. You see a {obj}."))
    else:
        acts += [(f"take {obj} from fridge", f"You can't see any {obj}."),
                 ("open fridge", f"You open the fridge. You see a {obj}.")]
    acts += [(f"take {obj} from fridge", f"You take the {obj}."),
             ("look", "You are in the kitchen."), ("look", "You are in the kitchen."),
             ("go to counter", "You arrive at the counter. You see a knife."),
             (f"slice {obj} with knife", f"You slice the {obj}.")]
    return Episode(id=eid, task=f"slice the {obj}", outcome=outcome,
                   steps=[Step(f"s{i}", a, o) for i, (a, o) in enumerate(acts, 1)])


def wrong_item(eid: str, want: str = "carrot", took: str = "potato") -> Episode:
    """A failure: the agent takes and slices the wrong vegetable, then the task cannot finish."""
    acts = [("go to fridge", "You arrive at the fridge."),
            (f"take {took} from fridge", f"You take the {took}."),
            ("go to counter", "You arrive at the counter."),
            (f"slice {took} with knife", f"You slice the {took}."),
            (f"put {took} in pot", "Nothing happens.")]
    return Episode(id=eid, task=f"slice the {want}", outcome="failure",
                   steps=[Step(f"s{i}", a, o) for i, (a, o) in enumerate(acts, 1)])


def step_ids(ep: Episode) -> set[str]:
    return {s.id for s in ep.steps}


# -- action abstraction and workflows --------------------------------------------------------------
def test_action_parsing_types_entities():
    p = parse_action("take the apple from fridge")
    assert p.generic() == "take <OBJECT> from <LOCATION>" and [s.value for s in p.slots] == ["apple", "fridge"]
    assert parse_action('say "good morning" to Alice').generic() == "say <TEXT> to <NAME>"
    assert parse_action("pay 12 to shop").generic() == "pay <NUMBER> to <LOCATION>"
    assert parse_action('search(query="Paris hotels")').generic() == "search(query=<QUERY>)"
    assert parse_action("go north").generic() == "go north"  # vocabulary, not an entity
    assert instantiate(["take <OBJECT> from <LOCATION>"], {"OBJECT": "egg", "LOCATION": "box"}) == ["take egg from box"]


def test_workflow_placeholders_abstract_entity_names(hash_resources):
    [item] = WorkflowEncoder(hash_resources).encode(kitchen("e1", "apple"))
    steps = item.fields["steps"]
    assert steps == ["go to <LOCATION>", "open <LOCATION>", "take <OBJECT> from <LOCATION>", "look",
                     "go to <LOCATION_2>", "slice <OBJECT> with <TOOL>"]
    assert item.fields["task_template"] == "slice <OBJECT>"
    assert item.fields["example_binding"] == {"LOCATION": "fridge", "OBJECT": "apple", "LOCATION_2": "counter",
                                              "TOOL": "knife"}
    assert not any(w in item.text for w in ("apple", "fridge", "knife"))
    # the same procedure on another object gives the same workflow text
    [other] = WorkflowEncoder(hash_resources).encode(kitchen("e2", "tomato"))
    assert other.text == item.text and other.id != item.id
    assert item.fields["task"] == "slice the apple" and set(item.source_ids) <= step_ids(kitchen("e1", "apple"))


def test_insight_only_from_failures_and_workflow_only_from_successes(hash_resources):
    ok, bad = kitchen("ok", "apple"), wrong_item("bad")
    assert InsightEncoder(hash_resources).encode(ok) == []
    assert WorkflowEncoder(hash_resources).encode(bad) == []
    assert ShortcutEncoder(hash_resources).encode(bad) == []
    [ins] = InsightEncoder(hash_resources).encode(bad)
    assert ins.kind == "insight" and ins.outcome == "failure" and ins.episode_id == "bad"
    assert ins.fields["failure_pattern"] == "wrong_entity"
    # the failing step (s5) and the divergent action (s2: took the potato, not the carrot)
    assert ins.source_ids == ["s2", "s5"]
    assert "take potato from fridge" in ins.fields["root_cause"] and "Nothing happens" in ins.fields["detection_signal"]
    assert "carrot" in ins.fields["corrective_strategy"]
    assert set(ins.fields) >= {"failure_pattern", "root_cause", "corrective_strategy", "detection_signal", "task"}


def test_lm_free_failure_labels_are_the_signature_labels():
    from typing import get_args

    from memarch.modules.encoders._experience_algorithms import _STRATEGY
    from memarch.modules.signatures.experience import FailurePattern

    assert set(_STRATEGY) == set(get_args(FailurePattern))


@pytest.mark.parametrize("obs,meta,pattern", [
    ("The drawer is locked.", {}, "precondition_violation"),
    ("Error: invalid format for answer", {}, "format_error"),
    ("You answer.", {"answer": "41", "expected": "42"}, "wrong_value"),
    ("You see nothing special.", {}, "incomplete_search"),
])
def test_insight_failure_patterns(hash_resources, obs, meta, pattern):
    last = "examine drawer" if pattern == "incomplete_search" else "open drawer"
    ep = Episode("f", task="find the key in the drawer", outcome="failure", metadata=meta,
                 steps=[Step("s1", "go to drawer", "You arrive at the drawer."), Step("s2", last, obs)])
    [ins] = InsightEncoder(hash_resources).encode(ep)
    assert ins.fields["failure_pattern"] == pattern


def test_trajectory_drops_noops_and_repeats_keeps_key_decision(hash_resources):
    ep = kitchen("e1", "apple")
    [item] = TrajectoryEncoder(hash_resources).encode(ep)
    assert item.fields["dropped"] == {"s2": "no-op", "s6": "repeat"}
    assert item.source_ids == ["s1", "s3", "s4", "s5", "s7", "s8"]
    # the recovery after the rejected take is the decision that mattered
    assert item.fields["key_decision"] == "open fridge"
    assert item.fields["anchor"] == "slice <OBJECT>" and item.fields["task"] == "slice the apple"
    assert item.id == TrajectoryEncoder(hash_resources, max_steps=12).encode(ep)[0].id  # deterministic
    [short] = TrajectoryEncoder(hash_resources, max_steps=2).encode(ep)
    assert "s3" in short.source_ids and len(short.source_ids) == 2


# -- tips ------------------------------------------------------------------------------------------
def test_precondition_tip_within_one_episode(hash_resources):
    tips = TipEncoder(hash_resources).encode(kitchen("e1", "apple"))
    [tip] = [t for t in tips if t.fields["source"] == "precondition"]
    assert tip.fields["principle"] == "Before `take <OBJECT> from <LOCATION>`, do `open <LOCATION>`."
    assert tip.source_ids == ["s2", "s3", "s4"]
    assert set(tip.fields) >= {"topic", "principle", "micro_example", "counterfactual", "use_when", "avoid_when"}


def test_tip_contrasts_successes_and_failures(hash_resources):
    enc = TipEncoder(hash_resources)
    written = []
    for i, obj in enumerate(["apple", "tomato", "pear"]):
        written += enc.encode(kitchen(f"ok{i}", obj, open_first=True))
    assert not [t for t in written if t.fields["source"] == "contrast"]  # no failure seen yet
    written = enc.encode(wrong_item("bad1")) + enc.encode(wrong_item("bad2", "leek", "onion"))
    contrast = {t.fields["principle"].split(":")[0]: t for t in written if t.fields["source"] == "contrast"}
    do_open = contrast["Do `open <OBJECT>`"]
    assert do_open.outcome == "success" and do_open.key == "tip:do:open <OBJECT>"
    assert "3/3 successful and 0/2 failed" in do_open.fields["principle"]
    assert "Avoid `put <OBJECT> in <LOCATION>`" in contrast
    assert all(t.fields["task"] == "slice the leek" for t in contrast.values())


# -- shortcuts -------------------------------------------------------------------------------------
def _arch_manager() -> str:
    return "lightweight" if "lightweight" in REGISTRY.names("manager") else "passthrough"


def test_shortcut_mined_from_two_successful_episodes_through_program_write(hash_resources):
    from memarch.modules.managers.base import Manager

    with REGISTRY.temporarily():
        if _arch_manager() == "passthrough":
            REGISTRY.register("manager", "passthrough")(type("Passthrough", (Manager,), {}))
        arch = Architecture(("shortcut",), "json", "hybrid", _arch_manager())
        program = MemoryProgram(arch, resources=hash_resources)
        assert program.write(kitchen("e1", "apple")) == []  # support 1: nothing yet
        assert program.store.count() == 0
        program.write(wrong_item("bad"))  # failures never support a shortcut
        assert program.store.count() == 0
        kept = program.write(kitchen("e2", "tomato"))
    assert len(kept) == 1
    [macro] = program.store.list()
    f = macro.fields
    assert macro.kind == "shortcut" and macro.outcome == "success" and macro.episode_id == "e2"
    assert f["parameters"] == ["OBJECT"] and f["support"] == 2 and f["episodes"] == ["e1", "e2"]
    # what varies (the object) is a parameter; what does not (fridge, counter, knife) is inlined
    assert f["steps"] == ["go to fridge", "open fridge", "take <OBJECT> from fridge", "look", "go to counter",
                          "slice <OBJECT> with knife"]
    assert f["input_schema"]["required"] == ["OBJECT"]
    assert f["input_schema"]["properties"]["OBJECT"]["examples"] == ["apple", "tomato"]
    assert f["output_schema"]["properties"]["observation"]["examples"][0] == "You slice the apple."
    assert f["test_invocation"]["arguments"] == {"OBJECT": "apple"}
    assert f["test_invocation"]["expected_actions"] == instantiate(f["steps"], {"OBJECT": "apple"})
    assert macro.source_ids == ["s1", "s3", "s4", "s5", "s7", "s8"] and f["occurrences"]["e1"] == macro.source_ids
    assert macro.key.startswith("shortcut:") and f["task"] == "slice the tomato"


def test_shortcut_keeps_only_maximal_shared_window(hash_resources):
    enc = ShortcutEncoder(hash_resources, max_len=3)
    enc.encode(kitchen("e1", "apple"))
    macros = enc.encode(kitchen("e2", "tomato"))
    # windows of 3 over 6 kept steps: 4 maximal windows, shorter ones inside them are dropped
    assert len(macros) == 4 and all(len(m.fields["steps"]) == 3 for m in macros)


def test_shortcut_mining_is_per_namespace(hash_resources):
    enc = ShortcutEncoder(hash_resources)
    a, b = kitchen("e1", "apple"), kitchen("e2", "tomato")
    b.namespace = "other"
    assert enc.encode(a) == [] and enc.encode(b) == []


# -- LM paths with DummyLM -------------------------------------------------------------------------
def with_lm(resources, answers):
    resources.lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    return resources


TIP = {"topic": "containers", "principle": "Open a container before taking from it.",
       "micro_example": "open fridge, then take apple", "counterfactual": "take fails while closed",
       "use_when": "an item is inside something", "avoid_when": "it is already open"}
LM_CASES = {
    "tip": (TipEncoder, kitchen("e1", "apple"), {"tips": [TIP]}, {"tips": "not a list"}),
    "insight": (InsightEncoder, wrong_item("bad"),
                {"insight": {"failure_pattern": "wrong_entity", "root_cause": "took the potato",
                             "corrective_strategy": "take the carrot", "detection_signal": "task names carrot",
                             "failing_step_id": "s2"}},
                {"insight": {"failure_pattern": "bad_label", "root_cause": "x", "corrective_strategy": "y",
                             "detection_signal": "z", "failing_step_id": "s2"}}),
    "insight-unknown-step": (InsightEncoder, wrong_item("bad"),
                             {"insight": {"failure_pattern": "wrong_entity", "root_cause": "took the potato",
                                          "corrective_strategy": "take the carrot", "detection_signal": "carrot",
                                          "failing_step_id": "s2"}},
                             {"insight": {"failure_pattern": "wrong_entity", "root_cause": "r",
                                          "corrective_strategy": "c", "detection_signal": "d",
                                          "failing_step_id": "step 42"}}),
    "trajectory": (TrajectoryEncoder, kitchen("e1", "apple"),
                   {"compressed": {"steps": ["open fridge -> opened", "take apple from fridge -> taken"],
                                   "kept_step_ids": ["s3", "s4", "s99"], "key_decision": "open fridge",
                                   "anchor": "item in closed container"}},
                   {"compressed": {"steps": [], "kept_step_ids": [], "key_decision": "", "anchor": ""}}),
    # a small model's habit: step ids instead of actions
    "trajectory-ungrounded": (TrajectoryEncoder, kitchen("e1", "apple"),
                              {"compressed": {"steps": ["open fridge -> opened"], "kept_step_ids": ["s3"],
                                              "key_decision": "open the fridge", "anchor": "closed container"}},
                              {"compressed": {"steps": ["s1", "s2"], "kept_step_ids": ["s1"], "key_decision": "s1",
                                              "anchor": "s1"}}),
    "workflow": (WorkflowEncoder, kitchen("e1", "apple"),
                 {"workflow": {"task_template": "slice the <ITEM>",
                               "steps": ["open fridge", "take <ITEM> from fridge", "slice <ITEM> with knife"]}},
                 {"workflow": {"task_template": "slice the apple", "steps": ["take apple from fridge"]}}),
    "shortcut": (ShortcutEncoder, kitchen("e1", "apple"),
                 {"shortcut": {"name": "fetch_and_slice", "parameters": ["ITEM"],
                               "input_schema": {"ITEM": "string: what to slice"},
                               "output_schema": {"observation": "string"},
                               "steps": ["open fridge", "take <ITEM> from fridge", "slice <ITEM> with knife"],
                               "test_invocation": {"ITEM": "apple"}}},
                 {"shortcut": {"name": "x", "parameters": ["ITEM"], "input_schema": {}, "output_schema": {},
                               "steps": ["open fridge"], "test_invocation": {}}}),
}


def lm_items(items):
    return [it for it in items if it.fields.get("source", "lm") == "lm" and it.fields.get("support", 1) == 1]


@pytest.mark.parametrize("name", list(LM_CASES))
def test_lm_path_typed_answer(hash_resources, name):
    cls, ep, good, _ = LM_CASES[name]
    enc = cls(with_lm(hash_resources, [good]))
    items = enc.encode(ep)
    assert enc.fallbacks == 0 and len(hash_resources.lm.history) == 1
    [item] = lm_items(items)
    assert item.kind == cls.name and item.fields["task"] == ep.task and item.episode_id == ep.id
    assert set(item.source_ids) <= step_ids(ep)
    if name == "trajectory":
        assert item.source_ids == ["s3", "s4"]  # the made-up s99 is not provenance
    if name == "shortcut":
        assert item.fields["test_invocation"]["expected_actions"][1] == "take apple from fridge"
        assert item.fields["input_schema"]["properties"]["ITEM"]["type"] == "string"
    if name == "insight":
        assert item.source_ids == ["s2"] and item.fields["failure_pattern"] == "wrong_entity"


@pytest.mark.parametrize("name", list(LM_CASES))
def test_lm_malformed_answer_gets_one_corrective_retry(hash_resources, name):
    cls, ep, good, bad = LM_CASES[name]
    enc = cls(with_lm(hash_resources, [bad, good]))
    [item] = lm_items(enc.encode(ep))
    assert enc.fallbacks == 0 and len(hash_resources.lm.history) == 2
    retry_prompt = json.dumps(hash_resources.lm.history[1]["messages"])
    assert "previous answer was rejected" in retry_prompt


@pytest.mark.parametrize("name", list(LM_CASES))
def test_lm_malformed_twice_falls_back_to_lm_free_path(hash_resources, name, caplog):
    cls, ep, _, bad = LM_CASES[name]
    enc = cls(with_lm(hash_resources, [bad, bad]))
    with caplog.at_level(logging.WARNING):
        items = enc.encode(ep)
    assert enc.fallbacks == 1 and len(hash_resources.lm.history) == 2
    assert any("LM-free path" in r.getMessage() for r in caplog.records)
    hash_resources.lm = None
    hash_resources.use_encoder_cache = False
    free = cls(hash_resources).encode(ep)
    assert [it.to_dict() for it in items] == [it.to_dict() for it in free]


def test_all_five_encoders_write_through_one_program(hash_resources):
    arch = Architecture(("tip", "insight", "trajectory", "workflow", "shortcut"), "json", "hybrid",
                        _arch_manager())
    with REGISTRY.temporarily():
        if _arch_manager() == "passthrough":
            from memarch.modules.managers.base import Manager
            REGISTRY.register("manager", "passthrough")(type("Passthrough", (Manager,), {}))
        program = MemoryProgram(arch, resources=hash_resources)
        for ep in [kitchen("e1", "apple"), wrong_item("bad"), kitchen("e2", "tomato")]:
            program.write(ep)
    kinds = {it.kind for it in program.store.list()}
    assert kinds == {"tip", "insight", "trajectory", "workflow", "shortcut"}
    assert not [it for it in program.store.list(include_deleted=True) if it.fields.get("stage") == "candidate"]
    assert all(it.fields["task"] and it.episode_id and it.source_ids for it in program.store.list())
    r = program.read("slice the pear")
    assert r.items
