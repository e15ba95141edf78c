"""Landscapes: a lookup equals live evaluate() (both kinds of shared evaluation included), reads
leave memory untouched, the memory digest sees what readers see, save/load, the metric contract,
resume after SIGKILL, shards + merge = one build, and the CLI's bad inputs."""
from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.evaluation.attribution import WriteTrace
from memarch.optimizers.landscapes.evaluator import LandscapeEvaluator
from memarch.optimizers.landscapes.table import Landscape, architecture_of
from memarch.optimizers.landscapes.build import build, plan_build
from memarch.optimizers.landscapes.digest import namespace_digest
from memarch.cli import main
from memarch.modules.managers.lightweight import LightweightManager
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Query
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.registry import REGISTRY, ensure_modules_loaded, register
from memarch.pipeline.space import ArchitectureSpace

ROOT = Path(__file__).resolve().parents[3]
KNOBS = {"conversations": 2, "sessions": 3}
# Encoders x stores x retrievers x managers chosen so that both kinds of sharing occur: every
# retriever reads one write pass, and the managers leave identical memory on this small stream.
ARCHS = [Architecture(e, s, r, m) for e in (("turn",), ("summary", "event")) for s in ("vector", "graph")
         for r in ("hybrid", "graph", "mmr") for m in ("lightweight", "json_full", "graph_consolidate")]


def _valid(archs):
    space = ArchitectureSpace("conversation", lm_available=False)
    return [a for a in archs if space.is_valid(a)]


@pytest.fixture(scope="module")
def bench(small_generated):
    return small_generated


@pytest.fixture(scope="module")
def land(bench, hash_res, tmp_path_factory):
    plan = plan_build(bench, resources=hash_res, architectures=_valid(ARCHS), presets=False)
    return build(plan, tmp_path_factory.mktemp("land") / "small.npz", progress=False)


def _assert_same(live, looked_up):
    assert [o.query_id for o in live.outcomes] == [o.query_id for o in looked_up.outcomes]
    for a, b in zip(live.outcomes, looked_up.outcomes):
        assert b.score == pytest.approx(a.score, abs=1e-6)
        assert (b.success, b.attribution, b.category) == (a.success, a.attribution, a.category), a.query_id
    assert looked_up.score == pytest.approx(live.score, abs=1e-6)
    assert set(looked_up.scores) == set(live.scores)
    for k, v in live.scores.items():
        assert looked_up.scores[k] == pytest.approx(v, abs=1e-6)
    assert looked_up.per_category == pytest.approx(live.per_category, abs=1e-6)
    assert looked_up.attribution == live.attribution


def test_lookup_equals_live_evaluate_for_each_split_objective_and_kind_of_sharing(land, bench, hash_res):
    groups = land.meta["groups"]
    write_shared = next(g for g in groups if "write shared" in g["reason"])
    memory_shared = next(g for g in groups if "identical memory" in g["reason"])
    # A retriever read in another's write pass, and a manager whose reads all came from another's pass.
    picks = ["none", write_shared["members"][1], memory_shared["members"][-1], memory_shared["members"][-2]]
    assert land.meta["build"]["sharing"]["architectures_fully_reused"] > 0
    for key in dict.fromkeys(picks):
        for split in ("search", "validation", "test"):
            for objective in land.metrics:
                live = evaluate(architecture_of(key), bench, split=split, resources=hash_res, metric=objective)
                _assert_same(live, land.result(key, split, objective))


def test_reads_do_not_change_memory(bench, hash_res):
    program = MemoryProgram(Architecture(("turn", "event"), "graph", "graph", "lightweight"), resources=hash_res,
                            top_k=20, context_budget=200)
    dialogue = bench.dialogues[0]
    for session in dialogue.sessions:
        program.write(session)
    before = namespace_digest(program.store, dialogue.namespace)
    version = program.store.version(dialogue.namespace)
    space = ArchitectureSpace("conversation", lm_available=False)
    for name in space.retrievers:
        retriever = REGISTRY.get("retriever", name).cls(hash_res)
        for q in dialogue.questions:
            retriever.retrieve(Query(q.text, namespace=dialogue.namespace), program.store, top_k=20, context_budget=200)
    assert program.store.version(dialogue.namespace) == version
    assert namespace_digest(program.store, dialogue.namespace) == before


def test_no_reader_tells_managers_apart_by_name():
    """The digest writes a manager's own lineage actor as ``manager:*``; sound only while no
    retriever reads lineage and attribution only asks whether an actor is a manager."""
    ensure_modules_loaded()
    for spec in REGISTRY.specs("retriever"):
        source = inspect.getsource(sys.modules[spec.cls.__module__])
        assert "lineage" not in source and ".actor" not in source, spec.name
    from memarch.benchmarks.evaluation import attribution

    source = inspect.getsource(attribution)
    assert source.count(".actor") == source.count('.actor.startswith("manager:")') == 1


def _store(resources, actor="manager:lightweight", strength=1.0):
    store = VectorStore(resources)
    it = MemoryItem("Alice adopted a beagle named Biscuit", "turn", source_ids=["D1:1"], namespace="a")
    it.log("admitted", actor)
    it.usage.strength = strength
    store.add([it])
    return store


def test_the_digest_sees_what_readers_see(hash_res):
    base = namespace_digest(_store(hash_res), "a", actor="manager:lightweight")
    # The manager's own name is not read by anything: two managers, one digest.
    assert namespace_digest(_store(hash_res, "manager:json_full"), "a", actor="manager:json_full") == base
    # Usage (read by cbr_rerank), another actor, and the write trace change it.
    assert namespace_digest(_store(hash_res, strength=2.0), "a", actor="manager:lightweight") != base
    assert namespace_digest(_store(hash_res, "manager:json_full"), "a", actor="manager:lightweight") != base
    trace = WriteTrace()
    trace.kept["a"] = {"x"}
    assert namespace_digest(_store(hash_res), "a", trace, actor="manager:lightweight") != base

    class OwnState(VectorStore):  # a store class whose state the digest does not know
        pass

    assert namespace_digest(OwnState(hash_res), "a") is None


def test_reads_are_reused_only_where_memories_are_equal(bench, hash_res, tmp_path):
    ensure_modules_loaded()
    forget_ns = bench.dialogues[1].namespace
    with REGISTRY.temporarily():
        @register("manager", "t_forgets_one", families=("conversation",))
        class ForgetsOne(LightweightManager):
            """Tombstones every item of one conversation after each of its sessions."""

            def after_episode(self, episode, store):
                super().after_episode(episode, store)
                if episode.namespace == forget_ns:
                    for it in store.list(episode.namespace):
                        self.tombstone(it, store, "forgotten")

        archs = [Architecture(("turn",), "vector", r, m) for r in ("hybrid", "mmr")
                 for m in ("lightweight", "t_forgets_one")]
        land = build(plan_build(bench, resources=hash_res, architectures=archs, presets=False),
                     tmp_path / "forget.npz", progress=False)
        stats = land.meta["build"]["sharing"]
        # The first conversation's reads are reused, the second's are not.
        assert 0 < stats["reads_reused"] < stats["reads"] / 2
        assert land.arrays["group"][land.index(archs[1])] != land.arrays["group"][land.index(archs[0])]
        for arch in archs[1:]:
            for split in ("search", "test"):
                for objective in land.metrics:
                    _assert_same(evaluate(arch, bench, split=split, resources=hash_res, metric=objective),
                                 land.result(arch, split, objective))


def test_save_load_round_trip_and_foreign_files(land, tmp_path):
    path = land.save(tmp_path / "copy.npz")
    again = Landscape.load(path)
    assert again.keys == land.keys and again.meta == land.meta
    for name, arr in land.arrays.items():
        assert np.array_equal(again.arrays[name], arr), name
    with np.load(path, allow_pickle=False) as data:  # no object arrays inside
        assert all(data[n].dtype != object for n in data.files)
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    (tmp_path / "text.npz").write_text("hello")
    for bad in ("other.npz", "text.npz", "absent.npz"):
        with pytest.raises(Exception, match="landscape"):
            Landscape.load(tmp_path / bad)


def test_metric_contract_and_lookup_counts(land):
    metric = LandscapeEvaluator(land, metric="answer_recall")
    assert metric.family == "conversation"
    arch = architecture_of(land.keys[1])
    result = metric(arch, "search")
    assert not result.failed and result.metadata["metric"] == "answer_recall"
    assert result.score == pytest.approx(land.metric_values("search", "answer_recall")[1])
    assert metric(None, "test").architecture is None
    absent = metric(Architecture(("fact",), "json", "mmr", "lightweight"), "search")
    assert absent.failed and "not in the landscape (sampled:" in absent.error
    assert metric.lookups == 3
    assert sum(r.size for r in land.splits.values()) == len(land.arrays["query_id"])


def _build_cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "memarch", "landscape", "build", "--benchmark", "generated", "--knob",
            "conversations=2", "--knob", "sessions=3", "--embedder", "hash", "--sample", "14", "--quiet",
            "--out", str(out), *extra]


@pytest.fixture(scope="module")
def sampled(bench, hash_res, tmp_path_factory):
    """The uninterrupted build the CLI's would-be twins are compared with (in-process)."""
    plan = plan_build(bench, resources=hash_res, sample=14, seed=0, knobs={"seed": 0, **KNOBS})
    return plan, build(plan, tmp_path_factory.mktemp("ref") / "ref.npz", progress=False)


def _same_table(a: Landscape, b: Landscape) -> None:
    assert a.keys == b.keys
    for name in a.arrays:
        if not name.startswith("cost_"):  # times differ from run to run
            assert np.array_equal(a.arrays[name], b.arrays[name]), name
    assert [sorted(g["members"]) for g in a.meta["groups"]] == [sorted(g["members"]) for g in b.meta["groups"]]


def test_a_build_killed_with_sigkill_resumes_to_the_same_file(sampled, tmp_path):
    out = tmp_path / "killed.npz"
    parts = tmp_path / "killed.npz.parts"
    proc = subprocess.Popen(_build_cli(out), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(parts.glob("*.npz"))) < 3 and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the build finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list(parts.glob("*.npz")))
    assert done >= 3 and not out.exists()
    rerun = subprocess.run(_build_cli(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"({done} resumed)" in rerun.stdout
    _same_table(Landscape.load(out), sampled[1])
    assert not parts.exists()
    again = subprocess.run(_build_cli(out), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "built already" in again.stdout


def test_shards_merge_into_the_single_build(sampled, tmp_path, capsys):
    plan, single = sampled
    shards = [build(plan, tmp_path / f"s{i}.npz", shard=(i, 2), progress=False) for i in (1, 2)]
    assert all(0 < len(s) < len(single) for s in shards) and not shards[0].meta["complete"]
    assert main(["landscape", "merge", "--out", str(tmp_path / "m.npz"), str(tmp_path / "s1.npz"),
                 str(tmp_path / "s2.npz")]) == 0
    merged = Landscape.load(tmp_path / "m.npz")
    assert merged.meta["complete"]
    _same_table(merged, single)
    capsys.readouterr()
    assert main(["landscape", "merge", "--out", str(tmp_path / "half.npz"), str(tmp_path / "s1.npz")]) == 0
    assert "missing" in capsys.readouterr().err


def test_cli_info_names_oracle_preset_and_baseline(sampled, capsys):
    assert main(["landscape", "info", sampled[1].path]) == 0
    out = capsys.readouterr().out
    for needle in ("questions: search", "oracle (best test)", "best preset on test", "no memory",
                   "tied at the top of search", "write passes saved"):
        assert needle in out


def _bad_inputs(tmp_path, small):
    other = Landscape(dict(small.meta, context_budget=100), small.arrays)
    other.save(tmp_path / "b100.npz")
    (tmp_path / "junk.npz").write_text("not a landscape")
    return [
        (["landscape", "info", str(tmp_path / "absent.npz")], "not found"),
        (["landscape", "info", str(tmp_path / "junk.npz")], "not a landscape"),
        (["landscape", "build", "--shard", "3/2", "--out", str(tmp_path / "x.npz")], "--shard"),
        (["landscape", "build", "--shard", "one", "--out", str(tmp_path / "x.npz")], "--shard"),
        (["landscape", "build", "--sample", "0", "--out", str(tmp_path / "x.npz")], "--sample"),
        (["landscape", "merge", "--out", str(tmp_path / "m.npz"), small.path, str(tmp_path / "b100.npz")],
         "incompatible"),
        (["landscape", "merge", "--out", str(tmp_path / "m.npz"), small.path, small.path], "disjoint"),
        (["landscape"], "name an action"),
    ]


def test_cli_bad_input_is_one_line_and_exit_2(land, tmp_path, capsys):
    for argv, needle in _bad_inputs(tmp_path, land):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, (argv, err)


@pytest.mark.integration
def test_locomo_landscape_equals_live_evaluate(data_dir, resources, tmp_path):
    bench = get_benchmark("locomo", data_dir / "locomo", conversations=1)
    archs = [Architecture(("turn",), "vector", r, m) for r in ("hybrid", "mmr") for m in ("lightweight", "json_full")]
    land = build(plan_build(bench, resources=resources, architectures=archs, presets=False),
                 tmp_path / "locomo.npz", progress=False)
    assert land.meta["data"]["sha256"] and land.meta["queries"]["test"] > 0
    assert "answer_span" in land.metrics
    for arch in archs[1:2] + archs[3:] + [None]:
        for split in ("search", "test"):
            for objective in ("answer_span", "answer_recall"):
                _assert_same(evaluate(arch, bench, split=split, resources=resources, metric=objective),
                             land.result(arch, split, objective))
