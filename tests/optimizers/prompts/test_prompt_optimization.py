"""Stage two of compile: DSPy prompt optimisation of the chosen program (DummyLM): prompts change,
are saved in the program JSON and come back on load; GEPA's feedback names the attributed module;
nothing to optimise without an LM is said and counted; flags are validated."""
from __future__ import annotations

import json
import dspy
import pytest
from dspy.clients.engines.dummy_engine import DummyEngine
from dspy.utils import DummyLM

from memarch.benchmarks.evaluation.reader import MemoryReader
from memarch.errors import MemarchError
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.evaluators import BenchmarkEvaluator
from memarch.optimizers.prompts.metric import PromptMetric
from memarch.optimizers.prompts.student import PromptStudent, StudentRuntime
from memarch.optimizers.prompts.optimize import NOTHING, check_benchmark, optimize_prompts
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.resources import Resources
from memarch.pipeline.trial import QueryOutcome

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")
MARKER = "Copy the answer word for word from the memory context."


class _Engine(DummyEngine):
    def _complete_messages(self, messages):
        owner = self.owner
        prompt = "\n".join(m["content"] for m in messages)
        owner.answers = {q: {"answer": a if (MARKER in prompt or q in owner.good) else "wrong"}
                         for q, a in owner.gold.items()}
        return super()._complete_messages(messages)


class ReaderLM(DummyLM):
    """Answers the gold answer to every other question — to all of them once the instructions
    carry MARKER — and nothing parseable to anything else (LM encoders fall back, counted)."""

    def __init__(self, bench):
        super().__init__({}, adapter=dspy.JSONAdapter())
        questions = [q for s in ("search", "validation", "test") for d in bench.split(s).dialogues for q in d.questions]
        self.gold = {q.text: q.answer or "No information available." for q in questions}
        self.good = {q.text for i, q in enumerate(questions) if i % 2 == 0}
        self._engine_spec = _Engine(self)


def proposer_lm() -> DummyLM:
    """GEPA's reflection LM and MIPRO's proposer: always proposes MARKER."""
    return DummyLM({"": {"new_instruction": MARKER, "proposed_instruction": MARKER}}, adapter=dspy.JSONAdapter())


@pytest.fixture
def lm_setup(small_generated, hash_resources):
    lm = ReaderLM(small_generated)
    res = Resources(embedder=hash_resources.embedder, lm=lm, cache_dir=hash_resources.cache_dir)
    metric = BenchmarkEvaluator(small_generated, resources=res, reader=MemoryReader(res), metric="qa_f1")
    program = MemoryProgram(ARCH, resources=res, **metric.program_settings())
    return lm, metric, program


def test_bootstrap_adds_reader_demos_saved_and_reloaded(lm_setup, tmp_path):
    lm, metric, program = lm_setup
    report = optimize_prompts(program, metric, "bootstrap", lm=lm, examples=6, testset=None)
    assert report.kept == "optimised" and "reader.answer" in report.changed
    assert report.validation_after >= report.validation_before
    assert report.counts["metric_calls"] >= 4 and report.counts["optimizer_failed"] == 0  # stops at 4 demos
    demos = program.reader_prompts["answer"]["demos"]
    assert demos and all({"context", "question", "answer"} <= set(d) for d in demos)
    path = program.save(tmp_path / "p.json", include_memory=False)
    assert json.loads(path.read_text())["reader"]["answer"]["demos"] == demos
    back = MemoryProgram.load(path, resources=program.resources)
    assert back.reader_prompts == program.reader_prompts


@pytest.mark.parametrize("optimizer", ["gepa", "mipro"])
def test_instruction_optimizers_change_the_reader_instructions(lm_setup, tmp_path, optimizer):
    lm, metric, program = lm_setup
    report = optimize_prompts(program, metric, optimizer, lm=lm, meta_lm=proposer_lm(), examples=6, budget=24,
                              testset=None)
    assert report.error is None, report.error
    assert report.validation_after > report.validation_before  # the MARKER instructions answer everything
    assert report.kept == "optimised" and "reader.answer" in report.changed
    assert program.reader_prompts["answer"]["instructions"] == MARKER
    back = MemoryProgram.load(program.save(tmp_path / "p.json", include_memory=False), resources=program.resources)
    assert back.reader_prompts["answer"]["instructions"] == MARKER


def test_module_demos_roundtrip_and_old_files_unchanged(lm_setup, tmp_path):
    _, _, program = lm_setup
    assert "demos" not in program.to_dict() and "reader" not in program.to_dict()  # never optimised: as before
    (name, predictor), = [(n, p) for n, p in program.encoders[0].named_predictors()]
    predictor.demos = [dspy.Example(dialogue="Ann: hi", rewrites=["Ann says hi"])]
    back = MemoryProgram.load(program.save(tmp_path / "p.json"), resources=program.resources)
    assert [dict(d) for d in dict(back.encoders[0].named_predictors())[name].demos] == \
        [{"dialogue": "Ann: hi", "rewrites": ["Ann says hi"]}]


def test_gepa_feedback_names_the_attributed_module():
    outcome = QueryOutcome(query_id="q1", score=0.0, success=False, category="single-hop", attribution="retrieve",
                           evidence={"question": "Where does Priya live?", "prediction": "Oslo",
                                     "lost": {"D1:3": "retrieve"},
                                     "gold_rank": 7, "read_items": 4})
    pred = dspy.Prediction(score=0.0, outcome=outcome, metric="qa_f1",
                           missed=[("D1:3", "Priya: I'm living in Bergen at the moment")])
    example = dspy.Example(question="Where does Priya live?", answer="Bergen")
    metric = PromptMetric(feedback=True)
    own = metric(example, pred, None, "prompts['retriever.rerank']", None)
    assert own.score == 0.0
    assert "attributed to the retrieve module (retriever)" in own.feedback
    assert "[D1:3] Priya: I'm living in Bergen" in own.feedback and "ranked 7" in own.feedback
    assert "it is the part the failure was attributed to" in own.feedback
    other = metric(example, pred, None, "prompts['reader.answer']", None).feedback
    assert "attributed to the retriever, not to it" in other
    assert PromptMetric()(example, pred) == 0.0


def test_feedback_from_real_failures_names_a_module(lm_setup):
    lm, metric, program = lm_setup
    runtime = StudentRuntime(program, metric, ["search"], MemoryReader(program.resources))
    student, scorer = PromptStudent(runtime), PromptMetric(feedback=True)
    with dspy.context(lm=lm):
        feedback = [scorer(ex, student(**ex.inputs())).feedback for ex in runtime.examples("search")]
    failed = [f for f in feedback if "counts as correct" not in f]
    assert failed and all("Failure" in f for f in failed)
    assert any("module (" in f or "attributed to the reader" in f for f in failed)
    assert runtime.memories_written <= len({q[0].namespace for q in runtime.questions.values()})  # reused


def test_nothing_to_optimise_without_an_lm_is_said_and_counted(small_generated, hash_resources):
    metric = BenchmarkEvaluator(small_generated, resources=hash_resources)
    opt = MemarchOptimizer(metric, strategy="random", budget=1, warm_start=[ARCH], prompt_optimizer="gepa",
                           resources=hash_resources)
    opt.compile("conversation")
    assert opt.report.prompts["kept"] == NOTHING and opt.report.counts["prompts_skipped"] == 1
    assert "nothing to optimise" in opt.report.prompts["summary"]


def test_compile_with_prompts_saves_them_and_logs_nested_runs(lm_setup, tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    lm, metric, _ = lm_setup
    tracker = Tracker(f"file://{tmp_path}/mlruns", artifact_root=tmp_path / "artifacts")  # no DB to create
    opt = MemarchOptimizer(metric, strategy="random", budget=1, lm=lm, warm_start=[ARCH], resources=metric.resources,
                           prompt_optimizer="bootstrap", prompt_examples=6, save_path=tmp_path / "p.json",
                           tracker=tracker)
    opt.compile("conversation")
    rep = opt.report.prompts
    assert rep["kept"] == "optimised" and rep["test_after"] is not None
    saved = json.loads((tmp_path / "p.json").read_text())
    assert saved["reader"]["answer"]["demos"]
    assert saved["evaluation"]["scores"]["validation"] == rep["validation_after"]
    runs = tracker.client.search_runs([tracker.experiment_id])
    by_name = {r.info.run_name: r for r in runs}
    stage = by_name["prompts bootstrap"]
    assert stage.data.tags["mlflow.parentRunId"] == tracker.parent_run_id
    for step in ("validation before", "optimise (bootstrap)", "validation after", "test after"):
        assert by_name[f"prompts bootstrap: {step}"].data.tags["mlflow.parentRunId"] == stage.info.run_id


def test_flag_validation(capsys):
    from memarch.cli import main

    with pytest.raises(MemarchError, match="unknown prompt optimizer 'copro'"):
        MemarchOptimizer(BenchmarkEvaluator("generated"), prompt_optimizer="copro")
    from memarch.benchmarks.base import TaskBenchmark

    with pytest.raises(MemarchError, match="agent benchmark"):
        check_benchmark(TaskBenchmark.__new__(type("TW", (TaskBenchmark,), {"name": "textworld"})))
    for args, needle in ((["--optimize-prompts", "copro"], "unknown prompt optimizer 'copro'"),
                         (["--optimize-prompts", "gepa", "--prompt-budget", "0"],
                          "--prompt-budget must be at least 1")):
        assert main(["compile", *args]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], lines
