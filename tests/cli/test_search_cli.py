"""The search CLI end to end on a tiny generated benchmark (hash embedder): compile with resume,
compare with table + PNG, presets, ui, and one-line errors with exit code 2."""
from __future__ import annotations

import json

import optuna
import pytest

from memarch.cli import main

TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking"]


def test_compile_saves_a_program_and_resumes_its_study(tmp_path, capsys):
    from memarch.pipeline.program import MemoryProgram

    storage = f"sqlite:///{tmp_path}/optuna.db"
    args = ["compile", *TINY, "--budget", "3", "--storage", storage, "--study-name", "s",
            "--out", str(tmp_path), "--output", str(tmp_path / "p.json")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "compiled:" in out
    assert "metric: answer_span (LM-free: gold answer contiguous in the context cut at 200 words)" in out
    assert MemoryProgram.load(tmp_path / "p.json").architecture.family == "conversation"
    assert main(args) == 2  # the study exists: --resume is required
    assert "--resume" in capsys.readouterr().err
    assert main(args[:args.index("--budget")] + ["--budget", "5", "--resume"] + args[args.index("--budget") + 2:]) == 0
    study = optuna.load_study(study_name="s", storage=storage)
    assert len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]) == 5


def test_first_seed_spreads_seeds_over_processes(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    assert main(["compile", *TINY, "--budget", "2", "--seeds", "1", "--first-seed", "3", "--storage", storage,
                 "--out", str(tmp_path), "--output", str(tmp_path / "p.json")]) == 0
    assert "guided seed 3:" in capsys.readouterr().out
    assert optuna.study.get_all_study_names(storage) == ["generated-conversation-guided-s3"]
    assert main(["compile", *TINY, "--first-seed", "-1", "--storage", "memory"]) == 2


def test_compare_prints_table_and_writes_png(tmp_path, capsys):
    assert main(["compare", *TINY, "--budget", "3", "--seeds", "1", "--strategies", "guided,random",
                 "--storage", "memory", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "trials to target" in out and "best preset" in out and "no memory" in out and "curves:" in out
    assert (tmp_path / "compare-generated.png").stat().st_size > 1000
    table = (tmp_path / "compare-generated.txt").read_text()
    assert table.startswith("metric: answer_span (LM-free: gold answer contiguous")
    data = json.loads((tmp_path / "compare-generated.json").read_text())
    assert {r["strategy"] for r in data["rows"]} == {"guided", "random"}


def test_presets_and_ui(tmp_path, capsys):
    assert main(["presets", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["mem0"]["valid_without_lm"] and not rows["zep"]["valid_without_lm"]
    assert main(["ui", "--tracking-uri", f"sqlite:///{tmp_path}/none.db"]) == 2
    (tmp_path / "m.db").touch()
    assert main(["ui", "--tracking-uri", f"sqlite:///{tmp_path}/m.db", "--print-only"]) == 0
    assert "mlflow ui --backend-store-uri" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [["compare", "--strategies", "nope"], ["compile", "--budget", "0"],
                                 ["compile", "--preset", "nosuch", "--budget", "1", "--storage", "memory",
                                  "--no-tracking", "--embedder", "hash"],
                                 ["compile", "--storage", "ftp://x", "--no-tracking", "--embedder", "hash"]])
def test_bad_input_is_one_line_exit_2(bad, capsys):
    assert main(bad) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memarch: error:") and "\n" not in err


def test_compile_prints_a_failed_test_evaluation_and_its_count(tmp_path, capsys, monkeypatch):
    import memarch.cli.compile as cli_compile
    from memarch.pipeline.trial import TrialResult

    built = cli_compile.build_evaluator

    from memarch.optimizers.evaluators import EvaluatorWrapper

    class FailingTest(EvaluatorWrapper):  # the benchmark's evaluator, whose test split fails
        def __call__(self, arch, data="search", *, on_instance=None):
            if data == "test":
                return TrialResult(arch, "generated", "test", 0.0, failed=True, error="RuntimeError: test exploded")
            return self.inner(arch, data, on_instance=on_instance)

    monkeypatch.setattr(cli_compile, "build_evaluator", lambda args, resources: FailingTest(built(args, resources)))
    assert main(["compile", *TINY, "--budget", "2", "--strategies", "random", "--storage", "memory",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "test FAILED" in out and "1 failed test evaluations of the pick" in out  # never "test 0.0000"
    assert "test evaluation failed: RuntimeError: test exploded" in out


def test_compile_with_a_pruner_counts_full_evaluations_and_refuses_what_it_cannot_do(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path}/optuna.db"
    six = ["--benchmark", "generated", "--knob", "conversations=6", "--knob", "sessions=2", "--embedder", "hash",
           "--no-tracking", "--storage", storage, "--out", str(tmp_path), "--output", str(tmp_path / "p.json")]
    assert main(["compile", *six, "--budget", "7", "--strategies", "random", "--pruner", "sha",
                 "--study-name", "p"]) == 0
    assert "compiled:" in capsys.readouterr().out
    study = optuna.load_study(study_name="p", storage=storage)
    from memarch.optimizers.search.history import fidelity_of

    spent = sum(fidelity_of(t) for t in study.trials)
    assert 7 <= spent < 8  # the budget is in full evaluations, a pruned trial counting its share
    assert any(t.state == optuna.trial.TrialState.PRUNED and 0 < fidelity_of(t) < 1 for t in study.trials)
    for bad, needle in [(["--pruner", "asha"], "unknown pruner 'asha'"),
                        (["--pruner", "sha", "--objectives", "quality,memory_words"], "needs one objective")]:
        assert main(["compile", *six, "--budget", "2", *bad, "--study-name", "q"]) == 2
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err
