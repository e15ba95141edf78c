"""Landscapes with levers (issue 23): every architecture also read at each combination of some
retriever knob levels from its one write pass. A lever row equals live evaluate() of that
architecture, the all-default row is the plain architecture, keys with knobs parse back, bad levers
are one clear error, and a replay searches the categorical choices plus the levels (every strategy
draws only the landscape's rows; guided reaches a lever by a coordinate step between levels)."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.landscapes.build import build, plan_build
from memarch.optimizers.landscapes.levers import grid_size, lever_space, parse_levers, with_levers
from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.landscapes.table import architecture_of
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace

LEVERS = "retrieve.pack=0,1;retrieve.pack_compact=0,1"
SPACE = ArchitectureSpace("conversation", lm_available=False)
MEMP = Architecture(("turn", "event"), "vector", "hybrid", "json_full")


@pytest.fixture(scope="module")
def lever_land(small_generated, hash_res, tmp_path_factory):
    plan = plan_build(small_generated, resources=hash_res, sample=10, seed=1, levers=parse_levers(LEVERS))
    return build(plan, tmp_path_factory.mktemp("levers") / "levers.npz", progress=False)


def test_parse_levers_reads_levels_and_refuses_what_is_not_a_lever():
    assert parse_levers("retrieve.pack=1,0; retrieve.time_weight=0,1.0,0.5") == {
        "retrieve.pack": (0, 1), "retrieve.time_weight": (0, 0.5, 1.0)}
    assert parse_levers(None) == {} == parse_levers(" ")
    for bad, needle in [("retrieve.pack", "KNOB=V1,V2"), ("retrieve.pack=1", "two distinct"),
                        ("retrieve.pack=0,x", "numbers"), ("retrieve.pack=0,1;retrieve.pack=0,2", "twice")]:
        with pytest.raises(MemarchError, match=needle):
            parse_levers(bad)
    for bad, needle in [({"manage.decay": (0.5, 0.95)}, "only retriever knobs"),
                        ({"retrieve.top_k": (4, 20)}, "not a lever"),
                        ({"retrieve.pack": (1, 2)}, "must include its default"),
                        ({"retrieve.pack": (0, 9)}, "outside"),
                        ({"retrieve.nope": (0, 1)}, "not declared")]:
        with pytest.raises(MemarchError, match=needle):
            lever_space(SPACE, bad)


def test_every_architecture_at_every_combination_the_default_one_being_itself():
    levels = parse_levers(LEVERS + ";retrieve.time_weight=0,1")
    rows = with_levers([MEMP], levels, SPACE)
    assert grid_size(levels) == 8 == len(rows) == len({a.key() for a in rows})
    assert rows[0] == MEMP and rows[0].key() == MEMP.key()
    assert {a.without_params().key() for a in rows} == {MEMP.key()}
    assert {a.key() for a in rows if a.params} >= {
        MEMP.key() + "|retrieve.pack=1,retrieve.pack_compact=1,retrieve.time_weight=1.0"}
    for a in rows:  # keys with knobs parse back to the same architecture
        assert architecture_of(a.key()) == a
    with pytest.raises(MemarchError, match="without knobs"):
        with_levers([rows[-1]], levels, SPACE)


def test_a_lever_row_equals_live_evaluate_and_the_default_row_the_plain_one(lever_land, small_generated, hash_res):
    lev = lever_land.meta["levers"]
    assert lev["grid"] == 4 and lev["rows"] == len(lever_land) - 1 == 4 * lev["categorical"]
    preset = lever_land.presets["memp"]
    variants = [k for k in lever_land.keys if k.startswith(preset + "|")]
    assert len(variants) == 3
    # One write pass per manager: the lever rows share it with the plain row.
    group = lever_land.arrays["group"]
    assert len({int(group[lever_land.index(k)]) for k in [preset, *variants]}) == 1
    scores = lever_land.scores("answer_span")
    assert any(not np.array_equal(scores[lever_land.index(preset)], scores[lever_land.index(k)]) for k in variants)
    for key in (preset, variants[-1]):
        for split in ("search", "test"):
            live = evaluate(architecture_of(key), small_generated, split=split, resources=hash_res,
                            metric="answer_span")
            looked = lever_land.result(key, split, "answer_span")
            assert [o.score for o in looked.outcomes] == pytest.approx([o.score for o in live.outcomes], abs=1e-6)


def test_param_space_levels_are_categorical_and_steps_move_between_levels():
    ps = ParamSpace(SPACE, "full", levels={"retrieve.time_weight": (0.0, 0.5, 1.0)})
    dists = ps.knob_distributions()
    assert set(dists) == {f"retrieve:{r}.time_weight" for r in SPACE.retrievers}
    assert all(d.choices == (0.0, 0.5, 1.0) for d in dists.values())
    knob = next(k for _, key, k in ps.chosen_knobs(ps.to_params(MEMP)) if key == "retrieve.time_weight")
    assert ps.knob_steps("retrieve.time_weight", knob, 0.0) == [0.5]
    assert ps.knob_steps("retrieve.time_weight", knob, 0.5) == [1.0, 0.0]
    assert ps.describe()["levels"] == {"retrieve.time_weight": [0.0, 0.5, 1.0]}
    with pytest.raises(MemarchError, match="full search space"):
        ParamSpace(SPACE, levels={"retrieve.pack": (0, 1)})


@pytest.mark.parametrize("strategy", ["random", "tpe", "guided", "archive"])
def test_a_replay_searches_the_categorical_choices_and_the_levels(lever_land, strategy):
    replay = Replay(lever_land, budget=8, horizon=40)
    assert replay.param_space().levels == {"retrieve.pack": (0, 1), "retrieve.pack_compact": (0, 1)}
    run = replay.run(strategy, 2)
    assert run.stopped is None and len(run.keys) == 40 == len(set(run.keys))
    assert all(k in lever_land for k in run.keys)
    assert any("|retrieve.pack" in k for k in run.keys)  # the levers are searched, not only the defaults
    assert run.pick in lever_land


def test_guided_steps_a_lever_of_its_leader(lever_land):
    from memarch.optimizers.samplers.guided.numeric import numeric_proposals

    replay = Replay(lever_land, budget=8)
    ps = replay.param_space()
    leader = lever_land.result(lever_land.presets["memp"], "search", "answer_span")
    _, proposals = numeric_proposals(ps, leader, blocked=set())
    assert proposals and proposals[0].architecture.key() in lever_land
    assert proposals[0].architecture.without_params().key() == lever_land.presets["memp"]


def test_cli_builds_with_levers_and_refuses_a_bad_one(tmp_path, capsys):
    out = tmp_path / "l.npz"
    argv = ["landscape", "build", "--knob", "conversations=1", "--knob", "sessions=2", "--sample", "2",
            "--limit", "6", "--embedder", "hash", "--quiet", "--levers", "retrieve.pack=0,1", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "x 2 lever settings" in text and "retrieve.pack 0/1" in text
    assert main(["landscape", "info", str(out)]) == 0
    assert "x 2 lever settings" in capsys.readouterr().out
    assert main(argv[:-4] + ["--levers", "retrieve.top_k=4,8", "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert "retrieve.top_k" in err and err.count("\n") == 1


def test_write_side_knobs_get_their_own_write_pass(small_generated, hash_res, tmp_path):
    """Only retriever knobs share a write pass: an encoder knob (3-turn chunks) writes its own memory."""
    plain = Architecture(("turn",), "vector", "hybrid", "lightweight")
    chunks = plain.replace(params={"encode:turn.window": 3})
    land = build(plan_build(small_generated, resources=hash_res, architectures=[plain, chunks], presets=False),
                 tmp_path / "w.npz", progress=False)
    group = land.arrays["group"]
    assert group[land.index(plain)] != group[land.index(chunks)]
    assert land.meta["build"]["sharing"]["write_passes"] == 2
    live = evaluate(chunks, small_generated, split="test", resources=hash_res, metric="answer_span")
    looked = land.result(chunks, "test", "answer_span")
    assert [o.score for o in looked.outcomes] == pytest.approx([o.score for o in live.outcomes], abs=1e-6)
