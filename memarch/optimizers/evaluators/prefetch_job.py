"""The background process of `BenchmarkEvaluator.prefetch`: rebuild the benchmark the evaluator
scores (from its `EvaluationRecord`: name, data, knobs, split), work out the texts its splits will
embed (`texts_ahead`), embed them into the shared cache. Run as ``python -m`` by `Prefetch`."""
from __future__ import annotations

import sys


def main(path: str) -> int:
    from memarch.benchmarks import recorded_benchmark
    from memarch.benchmarks.evaluation.texts_ahead import texts_ahead
    from memarch.pipeline.evaluation_record import EvaluationRecord
    from memarch.pipeline.prefetch import embed_texts, read_job

    job = read_job(path)
    bench = recorded_benchmark(EvaluationRecord.from_dict(job["record"], source="prefetch job"))
    return embed_texts(job["model"], texts_ahead(bench, job["splits"], limit=job.get("limit"),
                                                    encoders=job.get("encoders")))


if __name__ == "__main__":
    main(sys.argv[1])
