"""benchmarks/bench_strategy_compiles.py: where each strategy's program lies (guided reuses issue 49's
directory unless it is rerun; another embedder gets its own LongMemEval directory, so programs and test
evaluations of two embedders never mix) and which compile options a label adds."""
from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bench_strategy_compiles import LABELS, program_path  # noqa: E402
from bench_two_tasks import LME_EMBEDDER, compile_args, lme_dir_name  # noqa: E402


def test_guided_reuses_issue_49s_directory_unless_rerun():
    out = Path("o")
    assert program_path(out, "locomo", "guided", 3) == out / "locomo" / "seed-3.program.json"
    assert program_path(out, "locomo", "guided", 3, rerun_guided=True) == out / "locomo-guided" / "seed-3.program.json"
    assert program_path(out, "locomo", "tpe", 0, rerun_guided=True) == out / "locomo-tpe" / "seed-0.program.json"
    assert program_path(out, "locomo", "guided-lm", 0) == out / "locomo-guided-lm" / "seed-0.program.json"


def test_lme_directory_and_embedder_follow_the_options():
    args = Namespace(lme_limit=48, lme_exclude="entity", lme="d.json.gz")
    assert lme_dir_name(args) == "lme-48-no-entity"
    assert compile_args(args, "lme")[compile_args(args, "lme").index("--embedder") + 1] == LME_EMBEDDER
    args.lme_embedder = "all-MiniLM-L6-v2-static"
    assert lme_dir_name(args) == "lme-48-no-entity-all-MiniLM-L6-v2-static"
    assert compile_args(args, "lme")[compile_args(args, "lme").index("--embedder") + 1] == "all-MiniLM-L6-v2-static"


def test_the_lm_label_is_guided_with_the_embedded_proposer():
    assert LABELS["guided-lm"] == ("guided", ("--meta-lm", "local"))
