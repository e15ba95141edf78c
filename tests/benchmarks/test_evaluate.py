"""The evaluation runtime with small test-local modules (registered only inside each test):
objective, no-memory baseline, namespaces, failure capture, the LM reader, attribution to each
of the four modules on a constructed case, collect -> deploy (static vs dynamic) and the CLI."""
from __future__ import annotations

import json

import dspy
import pytest
from dspy.utils import DummyLM

from memarch.benchmarks.base import SPLITS, AgentTask, Benchmark, Dialogue, Question, TaskBenchmark
from memarch.benchmarks.generated import GeneratedConversations
from memarch.benchmarks.evaluation.reader import MemoryReader
from memarch.modules.encoders.base import Encoder
from memarch.modules.managers.base import Manager
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Step, Turn
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY, ensure_modules_loaded, register
from memarch.pipeline.retrieval import ScoredItem

TOY = Architecture(("t_turn",), "t_store", "t_lex", "t_keep")


@pytest.fixture
def toy_modules():
    """Toy modules whose failures are driven by markers in the text: SKIP (not encoded), DROP
    (refused by the manager), FORGET (tombstoned by the manager), VANISH (lost by the store),
    HIDE (never returned by the retriever), BOOM (the manager raises)."""
    ensure_modules_loaded()
    with REGISTRY.temporarily():
        @register("encoder", "t_turn", families=("conversation", "experience"))
        class ToyTurns(Encoder):
            def encode_free(self, episode):
                if episode.steps:
                    return [MemoryItem(text=episode.text(), kind="t_turn", source_ids=[episode.id])]
                return [MemoryItem(text=f"{t.speaker}: {t.text}", kind="t_turn", source_ids=[t.id])
                        for t in episode.turns if "SKIP" not in t.text]

        @register("store", "t_store")
        class ToyStore(Store):
            def add(self, items, vectors=None):
                return super().add([it for it in items if "VANISH" not in it.text], vectors)

        @register("retriever", "t_lex")
        class ToyLexical(Retriever):
            def rank(self, query, store, k):
                words = set(query.text.lower().replace("?", "").split())
                scored = [ScoredItem(it, len(words & set(it.text.lower().replace(".", "").split())))
                          for it in self.candidates(query, store) if "HIDE" not in it.text]
                return sorted([s for s in scored if s.score > 0], key=lambda s: -s.score)[:k]

        @register("manager", "t_keep")
        class ToyManager(Manager):
            def on_insert(self, items, store):
                if any("BOOM" in it.text for it in items):
                    raise RuntimeError("manager exploded")
                return [it for it in items if "DROP" not in it.text]

            def after_episode(self, episode, store):
                for it in store.list(episode.namespace):
                    if "FORGET" in it.text:
                        store.delete(it.id, it.namespace, reason="forgotten", actor=self.actor)

        yield


class ToyBench(Benchmark):
    name = "toy"

    def __init__(self, dialogues):
        super().__init__(dialogues)


PETS = [("D1:1", "My dog is called Rex.", "dog", "Rex"),
        ("D1:2", "SKIP my cat is called Tom.", "cat", "Tom"),
        ("D1:3", "DROP my fish is called Nemo.", "fish", "Nemo"),
        ("D1:4", "VANISH my bird is called Tweety.", "bird", "Tweety"),
        ("D1:5", "HIDE my horse is called Star.", "horse", "Star"),
        ("D1:6", "FORGET my cow is called Daisy.", "cow", "Daisy")]


def pet_dialogue(namespace: str = "n1", with_unanswerable: bool = False) -> Dialogue:
    session = Episode(id=f"{namespace}/s1", namespace=namespace,
                      turns=[Turn(tid, "Ann", text, date="2023-05-08") for tid, text, _, _ in PETS])
    qs = [Question(f"{namespace}/{animal}", f"What is the {animal} called?", name, [tid], "single-hop")
          for tid, _, animal, name in PETS]
    if with_unanswerable:
        qs.append(Question(f"{namespace}/boat", "What is the boat called?", None, [], "adversarial"))
    return Dialogue(namespace, [session], qs)


def test_attribution_to_each_of_the_four_modules(toy_modules, hash_resources):
    result = evaluate(TOY, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
    assert not result.failed, result.error
    by_q = {o.query_id.split("/")[1]: o for o in result.outcomes}
    assert by_q["dog"].success and by_q["dog"].attribution is None
    assert by_q["cat"].attribution == "encode"
    assert by_q["fish"].attribution == "manage"  # refused on insert
    assert by_q["cow"].attribution == "manage"  # tombstoned afterwards, lineage names the manager
    assert by_q["bird"].attribution == "store"
    assert by_q["horse"].attribution == "retrieve"
    assert result.attribution == {"encode": 1, "manage": 2, "store": 1, "retrieve": 1}
    assert by_q["horse"].evidence["lost"] == {"D1:5": "retrieve"}
    assert result.score == pytest.approx(1 / 6)
    assert result.scores["evidence_recall"] == pytest.approx(1 / 6)
    assert result.cost["memory_items"] == 2  # Rex and Star: Tom, Nemo, Tweety, Daisy never kept
    assert result.per_category == {"single-hop": pytest.approx(1 / 6)}


def test_no_memory_baseline_retrieves_nothing(toy_modules, hash_resources):
    result = evaluate(None, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
    assert result.architecture is None and not result.failed
    assert result.score == 0.0 and all(not o.retrieved_ids for o in result.outcomes)


def test_namespaces_do_not_leak(toy_modules, hash_resources):
    other = Dialogue("n2", [Episode(id="n2/s1", namespace="n2", turns=[Turn("D1:1", "Bo", "I like tea.")])],
                     [Question("n2/dog", "What is the dog called?", "Rex", ["D1:1"], "single-hop")])
    result = evaluate(TOY, ToyBench([pet_dialogue(), other]), split="all", resources=hash_resources)
    leaked = next(o for o in result.outcomes if o.query_id == "n2/dog")
    assert leaked.score == 0.0 and not leaked.retrieved_ids


def test_a_failing_module_fails_the_trial_not_the_caller(toy_modules, hash_resources):
    d = pet_dialogue()
    d.sessions[0].turns.append(Turn("D1:7", "Ann", "BOOM"))
    result = evaluate(TOY, ToyBench([d]), split="all", resources=hash_resources)
    assert result.failed and "manager exploded" in result.error and result.score == 0.0
    assert result.cost["wall_s"] >= 0


def test_unanswerable_questions_are_scored_only_with_a_reader(toy_modules, hash_resources):
    bench = ToyBench([pet_dialogue(with_unanswerable=True)])
    free = evaluate(TOY, bench, split="all", resources=hash_resources)
    assert len(free.outcomes) == 6  # the boat question is excluded from recall
    answers = [{"answer": a} for a in ("Rex", "Tom", "No idea", "bird", "Star", "cow")]
    answers.append({"answer": "No information available."})
    hash_resources.lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    result = evaluate(TOY, bench, split="all", resources=hash_resources, reader=MemoryReader(hash_resources),
                      metric="qa_f1")
    assert len(result.outcomes) == 7
    f1 = {o.query_id.split("/")[1]: o.score for o in result.outcomes}
    assert f1["dog"] == 1.0 and f1["cat"] == 1.0 and f1["fish"] == 0.0 and f1["boat"] == 1.0
    assert result.score == pytest.approx(4 / 7)
    assert result.scores["answer_recall"] == pytest.approx(1 / 6)  # still reported
    assert result.per_category["adversarial"] == 1.0


def test_splits_never_share_a_question(toy_modules, hash_resources):
    bench = GeneratedConversations(seed=0, conversations=2, sessions=3, distractors=1)
    seen = {}
    for split in SPLITS:
        r = evaluate(TOY, bench, split=split, resources=hash_resources)
        assert not r.failed, r.error
        seen[split] = {o.query_id for o in r.outcomes}
    assert seen["search"] and seen["test"]
    assert not seen["search"] & seen["validation"] and not seen["search"] & seen["test"]
    assert not seen["validation"] & seen["test"]


def test_generated_benchmark_runs_and_attributes(toy_modules, hash_resources):
    result = evaluate(TOY, GeneratedConversations(seed=1, conversations=2), split="search",
                      resources=hash_resources, limit=15)
    assert not result.failed and len(result.outcomes) <= 15
    assert 0.0 < result.score < 1.0
    failures = result.failures()
    assert failures and all(o.attribution in (None, "encode", "manage", "store", "retrieve") for o in failures)
    assert result.to_dict()["outcomes"]  # serialisable for the diagnosis


# -- collect -> deploy ----------------------------------------------------------------------------
class Rooms(TaskBenchmark):
    """Each room has a code; a task succeeds iff the memory context holds its room's code. The
    code of room r is learned by any attempt at room r (success or not)."""

    name = "rooms"

    def __init__(self, tasks, **kw):
        super().__init__(tasks, **kw)

    def attempt(self, task, context, retrieval=None):
        room = task.metadata["room"]
        code = f"code{room}x"
        ok = context is not None and code in context
        return Episode(id=task.id, task=task.text, outcome="success" if ok else "failure",
                       steps=[Step(id="s1", action=f"open {room}", observation=f"room {room} code is {code}")])

    def gold_sources(self, task):
        return [t.id for t in self.tasks if t.metadata["room"] == task.metadata["room"] and t.id != task.id]


def _rooms(mode: str) -> Rooms:
    # collection sees rooms a and b; deployment asks b, c, then c again (learnable only while deployed)
    tasks = [AgentTask(f"t{i}", f"open room {r}", metadata={"room": r}) for i, r in enumerate("abbcc")]
    return Rooms(tasks, mode=mode, collect_share=0.4)


@pytest.mark.parametrize("mode,expected", [("static", 1 / 3), ("dynamic", 2 / 3)])
def test_collect_then_deploy(toy_modules, hash_resources, mode, expected):
    result = evaluate(TOY, _rooms(mode), split="all", resources=hash_resources)
    assert not result.failed, result.error
    assert [o.query_id for o in result.outcomes] == ["t2", "t3", "t4"]  # deployment tasks only
    assert result.score == pytest.approx(expected)
    assert result.metadata["protocol"] == f"collect_deploy:{mode}"
    first_c = result.outcomes[1]  # its room was never seen: nothing to retrieve, an encode gap
    assert not first_c.success and first_c.attribution == "encode"
    assert result.outcomes[0].success and result.outcomes[0].attribution is None


def test_no_memory_baseline_on_agent_tasks(toy_modules, hash_resources):
    result = evaluate(None, _rooms("dynamic"), split="all", resources=hash_resources)
    assert result.score == 0.0


# -- CLI ------------------------------------------------------------------------------------------
def test_cli_evaluate_prints_scores_cost_and_time(toy_modules, tmp_path, capsys, monkeypatch):
    from memarch.cli import main

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    arch = tmp_path / "arch.json"
    TOY.save(arch)
    out_json = tmp_path / "result.json"
    code = main(["evaluate", "--architecture", str(arch), "--embedder", "hash", "--split", "search",
                 "--limit", "12", "--json", str(out_json)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "score (answer_span)" in out and "time:" in out and "failures attributed" in out
    assert "gold answer contiguous in the context cut at 200 words" in out
    saved = json.loads(out_json.read_text())
    assert saved["benchmark"] == "generated" and len(saved["outcomes"]) <= 12
    assert saved["metadata"]["metric"] == "answer_span"
    assert all({"answer_span", "answer_recall"} <= set(o["evidence"]) for o in saved["outcomes"])


@pytest.mark.parametrize("argv,needle", [
    (["--benchmark", "locomo", "--data", "/nonexistent/locomo10.json"], "/nonexistent/locomo10.json: not found"),
    (["--benchmark", "babi", "--data", "/nonexistent"], "no bAbI task files"),
    (["--benchmark", "nope"], "unknown benchmark"),
])
def test_cli_bad_data_is_one_line_and_exit_2(argv, needle, capsys):
    from memarch.cli import main

    assert main(["evaluate", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_cli_malformed_locomo_file(tmp_path, capsys):
    from memarch.cli import main

    bad = tmp_path / "locomo10.json"
    bad.write_text('{"not": "a list"}')
    assert main(["evaluate", "--benchmark", "locomo", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(bad) in err and "expected a JSON list" in err


# -- LM reader and judge ----------------------------------------------------------------------------
def test_judge_gets_one_corrective_retry(hash_resources):
    from memarch.benchmarks.evaluation.reader import AnswerJudge

    hash_resources.lm = DummyLM([{"correct": "maybe"}, {"correct": False}], adapter=dspy.JSONAdapter())
    judge = AnswerJudge(hash_resources)
    assert judge("Where?", "Boston", "Paris") is False and judge.fallbacks == 0


def test_reader_fails_rather_than_abstains_after_the_retry(hash_resources):
    hash_resources.lm = DummyLM([{"wrong": "x"}, {"wrong": "y"}], adapter=dspy.JSONAdapter())
    reader = MemoryReader(hash_resources)
    assert reader("ctx", "q?") is None and reader.fallbacks == 1  # never the abstention answer


def test_attribution_rows_export_the_failures(toy_modules, hash_resources):
    from memarch.benchmarks.evaluation.attribution import attribution_rows

    result = evaluate(TOY, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
    rows = attribution_rows(result)
    assert len(rows) == 5 and {r["module"] for r in rows} == {"encode", "manage", "store", "retrieve"}
    assert all(r["gold"] and r["lost"] for r in rows)


def test_an_invalid_architecture_is_a_failed_trial(toy_modules, hash_resources):
    bad = {"encode": ["t_turn"], "store": "t_store", "retrieve": "nope", "manage": "t_keep"}
    result = evaluate(bad, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
    assert result.failed and "nope" in result.error


def test_a_failed_trial_of_an_architecture_dict_names_its_architecture(toy_modules, hash_resources):
    """Given as a dict, the architecture of a trial that fails before its program is built is still
    the result's (it read as the no-memory baseline); a dict that is no architecture at all is the
    caller's error, as a bad metric name is."""
    from memarch.errors import ArchitectureError

    bad = {"encode": ["t_turn"], "store": "t_store", "retrieve": "nope", "manage": "t_keep"}
    result = evaluate(bad, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
    assert result.failed and result.architecture == Architecture.from_dict(bad)
    unresolved = evaluate(TOY.to_dict(), "no-such-benchmark", split="all", resources=hash_resources)
    assert unresolved.failed and "unknown benchmark" in unresolved.error and unresolved.architecture == TOY
    with pytest.raises(ArchitectureError, match="missing field"):
        evaluate({"encode": ["t_turn"]}, ToyBench([pet_dialogue()]), split="all", resources=hash_resources)
