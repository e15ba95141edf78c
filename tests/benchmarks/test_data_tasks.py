"""Recorded agent tasks in the memarch data format: an offline collect -> deploy benchmark whose
deployed task scores 1 when memory returns a trajectory relevant to it."""
from __future__ import annotations

import json

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.base import TaskBenchmark
from memarch.benchmarks.formats.jsonl_records import benchmark_records
from memarch.cli import main
from memarch.pipeline.architecture import Architecture
from memarch.benchmarks.evaluation.evaluate import evaluate

ARCH = Architecture(("trajectory",), "vector", "hybrid", "lightweight")
ROOMS = {"kitchen": ("put the apple in the fridge", ["open fridge", "take apple", "put apple in fridge"]),
         "garden": ("water the tomato plants", ["take watering can", "fill watering can", "water tomatoes"]),
         "cellar": ("find the lantern in the cellar", ["go down", "light match", "take lantern"])}


def task(tid: str, room: str, outcome: str = "success", **extra) -> dict:
    text, actions = ROOMS[room]
    return {"type": "task", "id": tid, "task": f"{text} ({tid})", "category": room, "outcome": outcome,
            "steps": [{"action": a, "observation": f"You {a.split()[0]}."} for a in actions], **extra}


@pytest.fixture
def tasks_file(tmp_path):
    """Collection (first half): kitchen and garden; deployment: kitchen, garden, then cellar twice
    (a cellar trajectory is in memory only once one was deployed, in dynamic mode)."""
    rows = [task("k1", "kitchen"), task("g1", "garden", "failure"), task("k2", "kitchen"), task("g2", "garden"),
            task("c1", "cellar"), task("c2", "cellar")]
    f = tmp_path / "tasks.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_a_task_file_is_an_agent_benchmark(tasks_file):
    bench = get_benchmark("jsonl", tasks_file, collect_share=0.34)
    assert isinstance(bench, TaskBenchmark) and bench.name == "jsonl" and bench.family == "experience"
    collect, deploy = bench.phases()
    assert [t.id for t in collect] == ["k1", "g1"] and [t.id for t in deploy] == ["k2", "g2", "c1", "c2"]
    assert bench.gold_sources(deploy[0]) == ["k1"] and bench.gold_sources(deploy[3]) == []
    assert bench.recorded["g1"].outcome == "failure" and bench.recorded["k1"].steps[1].action == "take apple"
    assert bench.stats()["deploy_without_relevant_memory"] == 2
    dynamic = get_benchmark("jsonl", tasks_file, collect_share=0.34, mode="dynamic")
    assert dynamic.gold_sources(dynamic.phases()[1][3]) == ["c1"]


@pytest.mark.parametrize("mode, expected", [("static", 0.5), ("dynamic", 0.75)])
def test_deployed_tasks_score_by_relevant_memory(tasks_file, hash_resources, mode, expected):
    bench = get_benchmark("jsonl", tasks_file, collect_share=0.34, mode=mode)
    result = evaluate(ARCH, bench, split="all", resources=hash_resources)
    assert not result.failed, result.error
    assert [o.query_id for o in result.outcomes] == ["k2", "g2", "c1", "c2"]
    assert result.score == pytest.approx(expected)
    assert result.scores["success_rate"] == 1.0  # the recorded outcomes, whatever memory did
    assert result.per_category["kitchen"] == 1.0
    assert evaluate(None, bench, split="all", resources=hash_resources).score == 0.0


def test_explicit_relevant_ids_override_the_category(tmp_path, hash_resources):
    rows = [task("k1", "kitchen"), task("g1", "garden"), task("k2", "kitchen", relevant=["g1"]),
            task("g2", "garden", relevant=[])]
    f = tmp_path / "rel.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = get_benchmark("jsonl", f)
    _, deploy = bench.phases()
    assert [bench.gold_sources(t) for t in deploy] == [["g1"], []]


def test_tasks_survive_conversion_unchanged(tasks_file):
    bench = get_benchmark("jsonl", tasks_file)
    rows = [json.loads(line) for line in tasks_file.read_text().splitlines()]
    written = list(benchmark_records(bench))
    assert written[0]["type"] == "meta" and written[0]["categories"] == ["cellar", "garden", "kitchen"]
    for mine, theirs in zip(written[1:], rows):
        assert mine == {**theirs, "steps": [{"id": f"s{i}", **s} for i, s in enumerate(theirs["steps"], 1)]}


def test_evaluate_and_stats_cli_on_a_task_file(tasks_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    arch = tmp_path / "arch.json"
    ARCH.save(arch)
    assert main(["evaluate", "--benchmark", "jsonl", "--data", str(tasks_file), "--architecture", str(arch),
                 "--embedder", "hash", "--split", "all"]) == 0
    assert "score (task_score)" in capsys.readouterr().out
    assert main(["data", "stats", str(tasks_file), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["tasks"], s["steps"], s["outcomes"]) == (6, 18, {"failure": 1, "success": 5})
    assert s["categories"] == {"cellar": 2, "garden": 2, "kitchen": 2}
