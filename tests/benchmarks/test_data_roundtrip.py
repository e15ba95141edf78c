"""Round trip on the real data: LoCoMo and bAbI converted to the memarch data format load as the
same dialogues, split the same way and score exactly as their own benchmarks do."""
from __future__ import annotations

import pytest

from memarch.benchmarks import get_benchmark
from memarch.cli import main
from memarch.pipeline.architecture import Architecture
from memarch.benchmarks.evaluation.evaluate import evaluate

pytestmark = pytest.mark.integration

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")


def _convert(tmp_path, source, data, *knobs):
    out = tmp_path / f"{source}.jsonl"
    argv = ["data", "convert", "--from", source, str(data), "--out", str(out)]
    for k in knobs:
        argv += ["--knob", k]
    assert main(argv) == 0
    return out


def _same_scores(original, converted, split, resources):
    a = evaluate(ARCH, original, split=split, resources=resources)
    b = evaluate(ARCH, converted, split=split, resources=resources)
    assert not a.failed and not b.failed, (a.error, b.error)
    assert a.outcomes and a.score > 0
    assert (b.score, b.scores, b.per_category, b.attribution) == (a.score, a.scores, a.per_category,
                                                                      a.attribution)
    keep = ("query_id", "score", "success", "category", "attribution", "retrieved_ids", "evidence")
    assert [[getattr(o, k) for k in keep] for o in b.outcomes] == [[getattr(o, k) for k in keep] for o in a.outcomes]
    assert b.cost["memory_items"] == a.cost["memory_items"] and b.cost["memory_words"] == a.cost["memory_words"]


def test_locomo_converted_whole_is_the_same_benchmark(tmp_path, data_dir, capsys):
    out = _convert(tmp_path, "locomo", data_dir / "locomo")
    printed = capsys.readouterr().out
    assert "10 dialogues, 272 sessions, 5882 turns, 1986 questions" in printed
    assert "2 warning(s)" in printed  # LoCoMo's own two evidence ids that name no turn, carried over
    locomo, converted = get_benchmark("locomo", data_dir / "locomo"), get_benchmark("jsonl", out)
    assert converted.dialogues == locomo.dialogues and converted.categories == locomo.categories
    assert converted.split_settings() == locomo.split_settings()
    for split in ("search", "validation", "test"):
        assert converted.split(split).dialogues == locomo.split(split).dialogues


@pytest.mark.parametrize("split_by, conversations, split", [("question", 2, "validation"), ("dialogue", 3, "test")])
def test_locomo_converted_scores_exactly_as_locomo(tmp_path, data_dir, hash_resources, split_by, conversations, split):
    out = _convert(tmp_path, "locomo", data_dir / "locomo", f"conversations={conversations}")
    _same_scores(get_benchmark("locomo", data_dir / "locomo", conversations=conversations, split_by=split_by),
                 get_benchmark("jsonl", out, split_by=split_by), split, hash_resources)


def test_babi_converted_scores_exactly_as_babi(tmp_path, data_dir, hash_resources):
    out = _convert(tmp_path, "babi", data_dir / "babi", "tasks=1,3", "stories=15")
    babi = get_benchmark("babi", data_dir / "babi", tasks=[1, 3], stories=15)
    converted = get_benchmark("jsonl", out)
    assert converted.dialogues == babi.dialogues and converted.split_settings()["split_by"] == "dialogue"
    _same_scores(babi, converted, "search", hash_resources)
