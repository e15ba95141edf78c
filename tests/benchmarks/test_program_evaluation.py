"""The saved program is what was evaluated: compile saves the trials' top_k and context budget and an
evaluation record, and ``memarch evaluate --program FILE`` reproduces the reported scores from it."""
from __future__ import annotations

import json

import pytest

from memarch.cli import main
from memarch.errors import DataError
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.evaluators import BenchmarkEvaluator, CachedEvaluator
from memarch.pipeline.evaluation_record import EvaluationRecord
from memarch.pipeline.program import MemoryProgram

TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking", "--storage", "memory"]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """One tiny compile through the CLI with a context budget whose top_k is not the default 4."""
    out = tmp_path_factory.mktemp("compiled")
    assert main(["compile", *TINY, "--budget", "3", "--context-budget", "60", "--out", str(out),
                 "--output", str(out / "p.json")]) == 0
    return out / "p.json"


def test_compiled_program_carries_the_trials_settings_and_record(compiled, hash_resources):
    data = json.loads(compiled.read_text())
    assert (data["top_k"], data["context_budget"]) == (6, 60)  # B / 10 with B = 60, as the trials read
    rec = data["evaluation"]
    assert rec["benchmark"] == "generated" and rec["metric"] == "answer_span" and rec["limit"] == 8
    assert (rec["top_k"], rec["context_budget"]) == (6, 60)
    assert rec["knobs"]["conversations"] == 1 and rec["knobs"]["sessions"] == 3
    assert rec["split"] == {"seed": 0, "split_by": "question",
                            "fractions": {"search": 0.5, "validation": 0.25, "test": 0.25}}
    assert set(rec["scores"]) == {"search", "validation", "test"}
    # the trial that produced the reported test score read with exactly these settings
    metric = BenchmarkEvaluator("generated", resources=hash_resources, limit=8, context_budget=60,
                             knobs={"conversations": 1, "sessions": 3})
    program = MemoryProgram.load(compiled)
    trial = metric(program.architecture, "test")
    assert (program.top_k, program.context_budget) == (trial.metadata["top_k"], trial.metadata["context_budget"])
    assert trial.score == rec["scores"]["test"]


def test_evaluate_program_reproduces_the_reported_test_score(compiled, capsys):
    reported = json.loads(compiled.read_text())["evaluation"]["scores"]["test"]
    capsys.readouterr()
    assert main(["evaluate", "--program", str(compiled)]) == 0
    out = capsys.readouterr().out
    assert f"score (answer_span): {reported:.4f}" in out
    assert f"reported test {reported:.4f} (metric answer_span): reproduced" in out
    assert main(["evaluate", "--program", str(compiled), "--split", "validation"]) == 0
    assert "reported validation" in (out := capsys.readouterr().out) and ": reproduced" in out


def test_evaluate_program_shows_a_difference_clearly(compiled, capsys):
    capsys.readouterr()
    assert main(["evaluate", "--program", str(compiled), "--context-budget", "10", "--top-k", "1"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "reported test" in ln)
    assert "DIFFERS by" in line and "settings changed: context budget, top_k" in line


def test_evaluate_program_takes_knobs_over_the_recorded_ones(compiled, capsys):
    capsys.readouterr()
    assert main(["evaluate", "--program", str(compiled), "--knob", "conversations=1"]) == 0  # as recorded
    assert ": reproduced" in (out := capsys.readouterr().out) and "settings changed" not in out
    assert main(["evaluate", "--program", str(compiled), "--knob", "sessions=2"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "reported test" in ln)
    assert "settings changed: knob sessions" in line


def test_saved_memory_bank_is_not_used_and_said_so(compiled, tmp_path, capsys):
    data = json.loads(compiled.read_text())
    data["memory"] = {"junk": "a memory bank from a deployment"}  # never read for a benchmark run
    path = tmp_path / "with_memory.json"
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["evaluate", "--program", str(path)]) == 0
    out = capsys.readouterr().out
    assert "saved memory bank is not used" in out and ": reproduced" in out


def test_program_and_architecture_are_exclusive(compiled, tmp_path, capsys):
    arch = tmp_path / "a.json"
    arch.write_text(json.dumps({"encode": ["turn"], "store": "vector", "retrieve": "hybrid", "manage": "lightweight"}))
    assert main(["evaluate", "--program", str(compiled), "--architecture", str(arch)]) == 2
    err = capsys.readouterr().err.strip()
    assert "exclusive" in err and "\n" not in err


def test_old_program_files_load_and_a_malformed_record_is_one_line(compiled, tmp_path, capsys):
    data = json.loads(compiled.read_text())
    old = {k: v for k, v in data.items() if k != "evaluation"}
    assert MemoryProgram.from_dict(old).evaluation is None
    assert MemoryProgram.from_dict(data).evaluation == EvaluationRecord.from_dict(data["evaluation"])
    for bad in ({**data["evaluation"], "top_k": "six"}, {**data["evaluation"], "scores": {"train": 1.0}},
                {k: v for k, v in data["evaluation"].items() if k != "context_budget"}, ["not", "an", "object"]):
        with pytest.raises(DataError, match="malformed 'evaluation' block"):
            MemoryProgram.from_dict({**data, "evaluation": bad}, source="p.json")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**data, "evaluation": {**data["evaluation"], "objective": 3}}))
    capsys.readouterr()
    assert main(["evaluate", "--program", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "malformed 'evaluation' block" in err and "\n" not in err


def test_optimizer_builds_the_program_with_the_metric_settings(hash_resources):
    metric = CachedEvaluator(BenchmarkEvaluator("generated", resources=hash_resources, limit=6, context_budget=90,
                                          knobs={"conversations": 1, "sessions": 3}))
    assert metric.program_settings() == {"top_k": 9, "context_budget": 90}  # delegated through the cache
    opt = MemarchOptimizer(metric, strategy="random", budget=2, seed=0, resources=hash_resources)
    program = opt.compile("conversation")
    assert (program.top_k, program.context_budget) == (9, 90)
    assert program.evaluation.scores["test"] == opt.report.test_score
    assert program.evaluation.scores["validation"] == opt.report.validation_score
