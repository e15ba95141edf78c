"""Numeric knobs: declared in the registry, carried by `Architecture.params`, validated, applied by
`MemoryProgram` and `evaluate`, searched as conditional Optuna parameters in the full space by every
strategy, and moved by the guided search from per-query traces."""
from __future__ import annotations

import optuna
import pytest

import memarch
from memarch.benchmarks.generated import GeneratedConversations
from memarch.errors import ArchitectureError, DataError
from memarch.optimizers.search.param_space import steps
from memarch.optimizers.search.history import ARCH_ATTR, History
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Query, Turn
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.pipeline.knobs import Knob
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import QueryOutcome, TrialResult

optuna.logging.set_verbosity(optuna.logging.WARNING)

BASE = Architecture(("turn",), "vector", "hybrid", "lightweight")


@pytest.fixture(scope="module")
def conv() -> ArchitectureSpace:
    return ArchitectureSpace("conversation", lm_available=False)


@pytest.fixture(scope="module")
def full(conv) -> ParamSpace:
    return ParamSpace(conv, "full")


def _session(n: int = 6) -> Episode:
    return Episode(id="c/s1", namespace="c", turns=[
        Turn(f"D1:{i}", "Ann" if i % 2 else "Bob", f"line {i} about the garden and the red bike {i}",
             date="2023-05-08") for i in range(1, n + 1)])


# -- the architecture's params ----------------------------------------------------------------------

def test_params_are_hashable_and_the_key_and_json_unchanged_without_them():
    a = BASE.replace(params={"retrieve.top_k": 8, "encode:turn.window": 3})
    assert a.key() == "turn|vector|hybrid|lightweight|encode:turn.window=3,retrieve.top_k=8"
    assert BASE.key() == "turn|vector|hybrid|lightweight" and "params" not in BASE.to_dict()
    assert Architecture.from_json(a.to_json()) == a and hash(a) != hash(BASE) and a != BASE
    assert a.param_dict == {"encode:turn.window": 3, "retrieve.top_k": 8}
    with pytest.raises(ArchitectureError, match="params"):
        Architecture.from_dict({**BASE.to_dict(), "params": {"retrieve.top_k": "8"}})


@pytest.mark.parametrize("params, rule, needle", [
    ({"retrieve.mmr_lambda": 0.3}, "knob-known", "no knob 'mmr_lambda' on the module chosen for 'retrieve'"),
    ({"store.pool": 10}, "knob-known", "its knobs: none"),
    ({"encode:fact.window": 2}, "knob-known", "encode:fact"),
    ({"retrieve.top_k": 500}, "knob-value", "outside [2, 64]"),
    ({"encode:turn.window": 2.5}, "knob-value", "must be an integer"),
    ({"manage.decay": True}, "knob-value", "must be a number"),
])
def test_knob_validation_names_the_rule(conv, params, rule, needle):
    arch = BASE.replace(params=params)
    v = conv.violations(arch)
    assert [x.rule for x in v] == [rule] and needle in v[0].message
    with pytest.raises(ArchitectureError) as exc:
        conv.validate(arch)
    assert exc.value.rule == rule
    assert conv.repair(arch).params == ()  # the bad value is dropped: the module's default


def test_repair_and_edits_keep_the_knobs_of_the_modules_that_stay(conv):
    arch = BASE.replace(params={"retrieve.pool": 80, "manage.decay": 0.9})
    moved = conv.fit_params(arch.replace(retrieve="mmr"))
    assert moved.param_dict == {"manage.decay": 0.9} and conv.is_valid(moved)


def test_a_cached_result_is_never_shared_across_knob_values():
    from memarch.optimizers.evaluators import CachedEvaluator

    metric = CachedEvaluator(lambda arch, data: TrialResult(arch, "x", data, float(len(arch.params))))
    tuned = BASE.replace(params={"retrieve.top_k": 8})
    assert [metric(a, "search").score for a in (BASE, tuned, BASE, tuned)] == [0.0, 1.0, 0.0, 1.0]
    assert metric.evaluations == 2


def test_knob_declarations_are_checked():
    with pytest.raises(ValueError, match="outside"):
        Knob("x", "int", 1, 4, default=9)
    with pytest.raises(ValueError, match="kind"):
        Knob("x", "str", 0, 1)
    assert steps(Knob("k", "int", 2, 64, log=True), 4) == [8, 2]
    assert steps(Knob("w", "float", 0.0, 1.0), 0.9) == [1.0, 0.65]


# -- the program applies them -----------------------------------------------------------------------

def test_knobs_change_behaviour(hash_resources):
    plain = MemoryProgram(BASE, resources=hash_resources)
    chunked = MemoryProgram(BASE.replace(params={"encode:turn.window": 4, "encode:turn.overlap": 0.0}),
                            resources=hash_resources)
    units = [it.fields["unit"] for it in chunked.encode(_session())]
    assert "chunk" not in {it.fields["unit"] for it in plain.encode(_session())}
    assert units.count("chunk") == 2  # turns 1-4 and the tail 3-6 (stride 4: no overlap)
    assert MemoryProgram(BASE.replace(params={"encode:turn.window": 4}), resources=hash_resources) \
        .encoders[0].stride == 2  # the default overlap is the old window // 2
    small = MemoryProgram(BASE.replace(params={"retrieve.top_k": 2, "retrieve.pool": 12, "manage.decay": 0.9}),
                          resources=hash_resources, top_k=10)
    assert small.top_k == 2 and small.retriever.settings["pool"] == 12 and small.manager.decay == 0.9
    for p in (plain, small):
        p.write(_session())
    query = Query("garden bike", namespace="c")
    assert len(plain.read(query, context_budget=None).items) == 4
    assert len(small.read(query, context_budget=None).items) == 2
    # A low dedup threshold merges near-duplicate turns the default (0.98 for conversations) keeps.
    # The turns are paraphrases with the same content words (the speakers' names): `_session`'s
    # differ in a number, so no threshold merges them (managers/_content.py).
    fill = ["", "again ", "also ", "really ", "still ", "truly "]
    paraphrases = Episode(id="c/s2", namespace="c", turns=[
        Turn(f"D2:{i}", "Ann" if i % 2 else "Bob",
             f"a line about the garden and the red bike {fill[i - 1]}and the shed", date="2023-05-08") for i in range(1, 7)])
    default = MemoryProgram(BASE, resources=hash_resources)
    loose = MemoryProgram(BASE.replace(params={"manage.dedup_threshold": 0.8}), resources=hash_resources)
    for p in (default, loose):
        p.write(paraphrases)
    assert loose.store.count("c") < default.store.count("c") == 6
    numbered = MemoryProgram(BASE.replace(params={"manage.dedup_threshold": 0.8}), resources=hash_resources)
    numbered.write(_session())
    assert numbered.store.count("c") == 6


def test_saved_program_round_trip_keeps_the_knob_values(tmp_path, hash_resources):
    arch = BASE.replace(params={"retrieve.top_k": 6, "retrieve.dense_weight": 2.5, "encode:turn.window": 3})
    program = MemoryProgram(arch, resources=hash_resources)
    program.write(_session())
    path = program.save(tmp_path / "p.json")
    back = MemoryProgram.load(path, resources=hash_resources)
    assert back.architecture == program.architecture and back.architecture.param_dict["retrieve.top_k"] == 6
    assert back.top_k == 6 and back.retriever.settings["dense_weight"] == 2.5 and back.encoders[0].window == 3
    query = Query("red bike", namespace="c")
    assert len(back.read(query).ids()) == 6 and back.read(query).ids() == program.read(query).ids()
    data = program.to_dict()
    data["architecture"]["params"] = {"retrieve.top_k": 0}
    with pytest.raises(DataError, match="knob-value|outside"):
        MemoryProgram.from_dict(data, resources=hash_resources)


def test_evaluate_reads_with_the_architecture_top_k_and_ranks_the_lost_gold(hash_resources):
    bench = GeneratedConversations(seed=1, conversations=2)
    arch = BASE.replace(params={"retrieve.top_k": 2})
    result = evaluate(arch, bench, split="search", resources=hash_resources, limit=20, context_budget=None)
    assert not result.failed and result.metadata["top_k"] == 2 and result.architecture == arch
    assert all(len(o.retrieved_ids) <= 2 for o in result.outcomes)
    ranked = [o for o in result.outcomes if o.attribution == "retrieve"]
    assert ranked and all(o.evidence["top_k"] == 2 and o.evidence["rank_depth"] == 20 for o in ranked)
    assert all(o.evidence["gold_rank"] is None or o.evidence["gold_rank"] > 2 for o in ranked)
    default = evaluate(BASE, bench, split="search", resources=hash_resources, limit=20, context_budget=None)
    assert default.metadata["top_k"] == 20 and default.score >= result.score  # B/10 of the default 200


# -- the full Optuna space --------------------------------------------------------------------------

def test_categorical_mode_is_unchanged(conv):
    cat = ParamSpace(conv)
    assert cat.knob_table() == [] and cat.all_distributions() == cat.distributions()
    assert "mode" not in cat.describe() and set(cat.to_params(BASE)) == set(cat.distributions())
    with pytest.raises(ValueError, match="categorical space"):
        cat.to_params(BASE.replace(params={"retrieve.top_k": 8}))


def test_full_space_maps_params_both_ways_and_a_preset_stays_the_preset(full):
    params = full.to_params(BASE)
    assert params["retrieve:hybrid.top_k"] == 20 and params["encode:turn.window"] == 1
    assert "retrieve:mmr.top_k" not in params and "manage:json_full.decay" not in params
    assert full.from_params(params) == BASE  # defaults are left out of params
    params["retrieve:hybrid.top_k"] = 8
    assert full.from_params(params).param_dict == {"retrieve.top_k": 8}
    custom = ParamSpace(full.space, "full", defaults={"retrieve.top_k": 8})
    assert custom.from_params(params) == BASE and custom.describe()["mode"] == "full"


def _synthetic(arch: Architecture) -> TrialResult:
    """Quality peaks at top_k 8 and window 3; retrieve failures carry gold ranks past top_k."""
    p = arch.param_dict
    top_k, window = p.get("retrieve.top_k", 20), p.get("encode:turn.window", 1)
    score = 1.0 - abs(top_k - 8) / 64 - abs(window - 3) / 16 - 0.05 * (arch.retrieve != "hybrid")
    n_fail = max(0, min(20, round((1 - score) * 20)))
    outcomes = [QueryOutcome(f"q{i}", 0.0 if i < n_fail else 1.0, i >= n_fail,
                             attribution="retrieve" if i < n_fail else None,
                             evidence={"gold_rank": top_k + 1 + i % top_k, "read_items": top_k, "top_k": top_k}
                             if i < n_fail else {}) for i in range(20)]
    return TrialResult(arch, "synthetic", "search", score, outcomes=outcomes,
                       attribution={"retrieve": n_fail})


def _run(space: ParamSpace, sampler, n: int, enqueue: list[Architecture] = ()) -> optuna.Study:
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for arch in enqueue:
        study.enqueue_trial(space.to_params(arch))

    def objective(trial):
        arch = space.suggest(trial)
        if not space.is_valid(arch):
            raise optuna.TrialPruned("invalid")
        return memarch.record_result(trial, arch, _synthetic(arch))

    study.optimize(objective, n_trials=n)
    return study


def _check_conditional(space: ParamSpace, study: optuna.Study) -> set[str]:
    seen = set()
    for t in study.trials:
        knobs = {n for n in t.params if "." in n}
        chosen = {name for name, _, _ in space.chosen_knobs(t.params)}
        assert knobs == chosen, (t.number, knobs ^ chosen)  # exactly the chosen modules' knobs
        for name in knobs:
            field, module = name.split(".")[0].split(":")
            assert t.params[field] in (module, True) if field != "encode" else t.params[f"encode:{module}"]
        seen |= knobs
    return seen


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_conditional_params_appear_only_with_their_module(full, sampler):
    made = optuna.samplers.RandomSampler(seed=0) if sampler == "random" else \
        optuna.samplers.TPESampler(seed=0, n_startup_trials=5)
    study = _run(full, made, 30)
    seen = _check_conditional(full, study)
    retrievers = {n.split(".")[0] for n in seen if n.startswith("retrieve:")}
    assert len(retrievers) >= 2 and any(n.startswith("manage:") for n in seen)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert any(Architecture.from_dict(t.user_attrs[ARCH_ATTR]).params for t in done)


def test_guided_proposes_numeric_moves_that_map_onto_the_trials(full):
    sampler = memarch.GuidedSampler(full, seed=0, k=3)
    start = [BASE, BASE.replace(retrieve="mmr"), BASE.replace(manage="json_full")]
    study = _run(full, sampler, 15, enqueue=start)
    _check_conditional(full, study)
    moves = [r["numeric_move"] for r in sampler.rounds if r.get("numeric_move")]
    assert moves and moves[0]["text"].startswith("retrieve.top_k 20 -> 40: ")
    history = History.from_study(study)
    proposed = [r for r in history.records if r.role in ("exploit", "explore")]
    numeric = [r for r in proposed if r.architecture.params]
    assert numeric, [r.edit for r in proposed]
    for t in study.trials:  # what the sampler proposed is what the trial evaluated
        if t.state == optuna.trial.TrialState.COMPLETE and t.system_attrs.get("memarch:role"):
            assert full.from_params(t.params).canonical() == Architecture.from_dict(t.user_attrs[ARCH_ATTR]).canonical()
    assert any(r.architecture.param_dict.get("retrieve.top_k") == 40 and r.edit == "retrieve.top_k: 20 -> 40"
               for r in proposed)


# -- the CLI ----------------------------------------------------------------------------------------

TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking"]


def test_cli_compile_full_space_and_evaluate_an_architecture_with_params(tmp_path, capsys):
    import json

    from memarch.cli import main

    storage = f"sqlite:///{tmp_path}/optuna.db"
    args = ["compile", *TINY, "--budget", "5", "--strategies", "random", "--storage", storage, "--study-name", "s",
            "--out", str(tmp_path), "--output", str(tmp_path / "p.json")]
    assert main(args + ["--space", "full"]) == 0
    out = capsys.readouterr().out
    assert "search space: full (conversation" in out and "numeric knobs, conditional on their module" in out
    study = optuna.load_study(study_name="s", storage=storage)
    assert any("." in name for t in study.trials for name in t.params)  # knobs were drawn
    saved = json.loads((tmp_path / "p.json").read_text())
    assert MemoryProgram.load(tmp_path / "p.json").architecture == Architecture.from_dict(saved["architecture"])
    assert saved["evaluation"]["top_k"] == saved["top_k"]  # the record says what the trials read with
    # A study of the full space is not resumed as a categorical one.
    assert main(args + ["--resume"]) == 2
    assert "another space" in capsys.readouterr().err
    arch = tmp_path / "arch.json"
    arch.write_text(json.dumps({**BASE.to_dict(), "params": {"retrieve.top_k": 2}}))
    assert main(["evaluate", "--architecture", str(arch), "--benchmark", "generated", "--limit", "8",
                 "--embedder", "hash"]) == 0
    assert "turn|vector|hybrid|lightweight|retrieve.top_k=2" in capsys.readouterr().out
    arch.write_text(json.dumps({**BASE.to_dict(), "params": {"retrieve.topk": 2}}))
    assert main(["validate", str(arch)]) == 2
    err = capsys.readouterr().err.strip()
    assert "[knob-known]" in err and "retrieve.topk" in err and len(err.splitlines()) == 1


def test_bruteforce_in_the_full_space_enumerates_at_default_knobs(full):
    from memarch.optimizers.samplers.strategies import make_sampler

    study = _run(full, make_sampler("bruteforce", full, seed=0), 8)
    done = [Architecture.from_dict(t.user_attrs[ARCH_ATTR]) for t in study.trials
            if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 8 and all(not a.params for a in done) and len({a.key() for a in done}) == 8


def test_compiled_program_and_its_record_read_with_the_pick_top_k(hash_resources):
    from types import SimpleNamespace

    from memarch.optimizers.compile import MemarchOptimizer
    from memarch.optimizers.evaluators import BenchmarkEvaluator

    metric = BenchmarkEvaluator(GeneratedConversations(seed=1, conversations=1), resources=hash_resources)
    opt = MemarchOptimizer(metric, strategy="random", budget=1, resources=hash_resources, space_mode="full")
    best = SimpleNamespace(score=0.5, result=SimpleNamespace(metadata={"metric": "answer_span"}))
    program = opt._program(BASE.replace(params={"retrieve.top_k": 8}), best, 0.4, None)
    assert program.top_k == 8 and program.evaluation.top_k == 8
    assert opt._program(BASE, best, 0.4, None).evaluation.top_k == 20
    assert opt.param_space(ArchitectureSpace("conversation", lm_available=False)).defaults == {"retrieve.top_k": 20}
