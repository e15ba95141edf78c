"""Memory budgets: the hard limit after every write over random streams (every manager), the
tombstones that account for every item that left, each manager's own policy, the LM path with its
counted fallback, and ``--memory-budget`` on the command line."""
from __future__ import annotations

import random

import pytest
from manager_helpers import MANAGERS, fact, with_lm

from memarch.benchmarks.evaluation.memory_budget import MemoryBudget, raw_turn_words
from memarch.cli import main
from memarch.errors import MemarchError
from memarch.modules.managers._budget import active_words, extractive_summary, parse_budget
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Step, Turn
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.retrieval import count_words

WORDS = ("alice bob carol paris lyon rome bought sold red blue car bike house job teacher nurse painter dog "
         "cat garden piano guitar marathon trip birthday sister brother cousin likes hates visited").split()
NAMES = ("lightweight", "json_full", "tool_manager", "graph_consolidate")


def _sentence(rng: random.Random, lo: int = 3, hi: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))).capitalize() + "."


def _conversation(rng: random.Random, e: int, ns: str, repeat: list[str]) -> Episode:
    turns = []
    for i in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.15 and repeat:  # near-duplicates and repeats of earlier turns
            text = rng.choice(repeat) + (" " + rng.choice(WORDS) if rng.random() < 0.5 else "")
        elif roll < 0.2:
            text = " ".join(_sentence(rng, 20, 40) for _ in range(4))  # sometimes longer than the budget
        else:
            text = " ".join(_sentence(rng) for _ in range(rng.randint(1, 3)))
        repeat.append(text)
        turns.append(Turn(id=f"{ns}-e{e}-t{i}", speaker=rng.choice("AB"), text=text, date=f"2023-01-{e % 28 + 1:02d}"))
    return Episode(id=f"{ns}-e{e}", turns=turns, time=f"2023-01-{e % 28 + 1:02d}", namespace=ns)


def _experience(rng: random.Random, e: int, ns: str) -> Episode:
    objs = ("mug", "apple", "key", "book")
    steps = [Step(id=f"{ns}-e{e}-s{i}", action=f"{rng.choice(('take', 'open', 'go to', 'put'))} {rng.choice(objs)}",
                  observation=_sentence(rng, 2, 8)) for i in range(rng.randint(2, 6))]
    return Episode(id=f"{ns}-e{e}", task=f"find the {rng.choice(objs)}", steps=steps,
                   outcome=rng.choice(("success", "failure")), namespace=ns)


def _program(name: str, family: str, budget: int, resources) -> MemoryProgram:
    encoder = "turn" if family == "conversation" else "trajectory"
    store, retriever = ("graph", "graph") if name == "graph_consolidate" else ("hybrid", "hybrid")
    return MemoryProgram(Architecture((encoder,), store, retriever, name), resources=resources,
                         config={"manager": {"memory_budget": budget, "period": 3}})


def _check_accounting(program: MemoryProgram, admitted: set[str]) -> None:
    """Every item ever admitted is active, or a tombstone with its reason; one that a budget rewrite
    superseded is named in its survivor's lineage."""
    store = program.store
    records = {it.id: it for ns in store.namespaces() for it in store.list(ns, include_deleted=True)}
    for item_id in admitted:
        it = records[item_id]
        if it.active:
            continue
        last = it.lineage[-1]
        assert last.reason, (it.id, last)
        if it.status == "superseded" and last.reason.startswith("budget:"):
            survivor = records[last.related[0]]
            assert any(e.action in ("merged_from", "supersedes") and it.id in e.related
                       for e in survivor.lineage), it.id


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("family", ["conversation", "experience"])
def test_budget_never_exceeded_and_every_item_accounted_for(name, family, hash_res):
    done = {"lightweight": "pruned", "json_full": "merged", "tool_manager": "compressed",
            "graph_consolidate": "generalised"}[name]
    rewrites = 0
    for seed in range(6):
        rng = random.Random(seed)
        budget = rng.randint(15, 120)
        program = _program(name, family, budget, hash_res)
        admitted: set[str] = set()
        repeats: dict[str, list[str]] = {}
        for e in range(rng.randint(6, 14)):
            ns = rng.choice(("u1", "u2"))
            episode = _conversation(rng, e, ns, repeats.setdefault(ns, [])) if family == "conversation" \
                else _experience(rng, e, ns)
            admitted |= {it.id for it in program.write(episode)}
            for ns_written in program.store.namespaces():
                assert active_words(program.store, ns_written) <= budget, (name, seed, e)
            admitted |= {it.id for ns_ in program.store.namespaces() for it in program.store.list(ns_)}
        _check_accounting(program, admitted)
        rewrites += program.manager.budget_stats[done]
        for ns in program.store.namespaces():
            for it in program.store.tombstones(ns):
                if it.lineage[-1].actor == program.manager.actor and "budget" in it.lineage[-1].reason:
                    assert it.lineage[-1].reason.startswith("budget:")
    assert rewrites > 0 or (family == "experience" and name != "tool_manager")  # the policy's own step ran


def _loaded(manager, items, store=None):
    store = store or JsonStore(manager.resources)
    store.add(manager.on_insert(items, store))
    return store


def test_an_item_longer_than_the_budget_is_refused_not_truncated(hash_res):
    manager = MANAGERS[0](hash_res, memory_budget=5)
    long = fact("one two three four five six seven")
    store = _loaded(manager, [long, fact("short fact here")])
    manager.enforce_budget(store, "default")
    kept = store.get(long.id, include_deleted=True)
    assert not kept.active and kept.text == long.text and "more than the whole budget of 5" in kept.lineage[-1].reason
    assert manager.budget_stats["refused"] == 1 and active_words(store, "default") == 3


def test_lightweight_prunes_the_lowest_utility_first_ties_oldest(hash_res):
    manager = MANAGERS[0](hash_res, memory_budget=8)
    a, b, c = fact("apples grow on trees", when="2023-01-01"), fact("the sky looks blue", when="2023-01-02"), \
        fact("cats chase small mice", when="2023-01-03")
    store = _loaded(manager, [a, b, c])
    b.usage.strength = 2.0
    manager.enforce_budget(store, "default")  # 12 words -> 8: one goes, the oldest of the weakest
    assert [it.id for it in store.list()] == [b.id, c.id]
    assert store.get(a.id, include_deleted=True).lineage[-1].reason.startswith("budget: pruned lowest utility")


def _near_dups():
    return [fact("alice works as a teacher in paris", when="2023-01-01"),
            fact("alice works as a teacher in paris now", when="2023-01-02"),
            fact("bob sold his red car", when="2023-01-03")]


def test_json_full_merges_near_duplicates_before_it_drops(hash_res):
    items = _near_dups()
    budget = sum(count_words(it.text) for it in items) - 3
    full = MANAGERS[1](hash_res, memory_budget=budget, dedup_threshold=0.99)
    store = _loaded(full, [it.copy() for it in items])
    full.enforce_budget(store, "default")
    assert full.budget_stats["merged"] == 1 and full.budget_stats["pruned"] == 0
    survivor = next(it for it in store.list() if "teacher" in it.text)
    gone = next(it for it in store.tombstones() if "teacher" in it.text)
    assert gone.status == "superseded" and gone.lineage[-1].reason.startswith("budget: near-duplicates")
    assert any(e.action == "merged_from" and gone.id in e.related for e in survivor.lineage)
    light = MANAGERS[0](hash_res, memory_budget=budget)  # same stream: it drops instead
    store = _loaded(light, [it.copy() for it in items])
    light.enforce_budget(store, "default")
    assert light.budget_stats["pruned"] >= 1 and light.budget_stats["merged"] == 0


def test_json_full_resolves_key_conflicts_keeping_the_newest(hash_res):
    manager = MANAGERS[1](hash_res, memory_budget=6)
    old, new = fact("alice lives in paris", key="alice|city", when="2023-01-01"), \
        fact("alice lives in rome", key="alice|city", when="2023-02-01")
    store = JsonStore(hash_res)
    store.add([old, new])  # written around the insert-time upsert, as a reloaded bank might hold them
    manager.enforce_budget(store, "default")
    assert [it.id for it in store.list()] == [new.id] and "newest value kept" in old.lineage[-1].reason


def test_tool_manager_compresses_a_session_into_a_summary_with_lineage(hash_res):
    manager = MANAGERS[2](hash_res, memory_budget=40, family="conversation")
    turns = [fact(f"Hi there. Carol bought a blue piano for her sister number {i}. Okay thanks.", ep="s1",
                  kind="turn", when="2023-01-01") for i in range(4)]
    store = _loaded(manager, turns)
    manager.enforce_budget(store, "default")
    summary = next(it for it in store.list() if it.fields.get("compressed"))
    assert set(summary.fields["merged_from"]) <= {t.id for t in turns} and len(summary.fields["merged_from"]) >= 2
    assert "piano" in summary.text and "Okay thanks." not in summary.text  # content words kept
    assert set(summary.source_ids) == {s for t in turns if t.id in summary.fields["merged_from"] for s in t.source_ids}
    assert manager.budget_stats["compressed"] >= 2 and active_words(store, "default") <= 40


def test_tool_manager_compresses_a_trajectory_to_its_actions(hash_res):
    traj = fact("> take mug -> You take the mug from the kitchen table carefully\n> open fridge -> The fridge is "
                "open and cold inside", kind="trajectory", outcome="success")
    tip = fact("check the fridge first", kind="tip")
    manager = MANAGERS[2](hash_res, memory_budget=count_words(traj.text) + 2, family="experience")
    store = _loaded(manager, [traj, tip])
    manager.enforce_budget(store, "default")
    (short,) = [it for it in store.list() if it.kind == "trajectory"]
    assert short.fields.get("compressed") and "take mug; open fridge" in short.text
    assert short.fields["merged_from"] == [traj.id] and store.get(traj.id, include_deleted=True).status == "superseded"


def test_graph_consolidate_generalises_a_cluster_into_one_node(hash_res):
    manager = MANAGERS[3](hash_res, memory_budget=20, generalise=False)
    items = [fact("alice plays the guitar every sunday evening", ep=f"e{i}", when=f"2023-01-0{i + 1}")
             for i in range(3)]
    items[1].text += " again"
    items[2].text += " with bob"
    store = GraphStore(hash_res)
    for it in items:
        store.add(manager.on_insert([it], store))
    manager.enforce_budget(store, "default")
    general = next(it for it in store.list() if it.fields.get("generalised"))
    assert len(general.fields["merged_from"]) >= 2 and manager.budget_stats["generalised"] >= 2
    assert all(store.get(i, include_deleted=True).status == "superseded" for i in general.fields["merged_from"])


def test_lm_rewrites_the_summary_and_a_bad_answer_is_a_counted_fallback(hash_res):
    turns = [fact(f"Carol bought a blue piano for her sister {i}. It was expensive and lovely.", ep="s1",
                  kind="turn") for i in range(3)]
    resources, _ = with_lm(hash_res, [{"general_memory": "Carol bought blue pianos."}])
    manager = MANAGERS[2](resources, memory_budget=20, family="conversation")
    store = _loaded(manager, [it.copy() for it in turns])
    manager.enforce_budget(store, "default")
    assert manager.budget_stats["lm_texts"] == 1
    assert any(it.text == "Carol bought blue pianos." for it in store.list())
    long_answer = {"general_memory": " ".join(["word"] * 60)}  # longer than allowed: rejected twice
    resources, _ = with_lm(hash_res, [long_answer, long_answer])
    manager = MANAGERS[2](resources, memory_budget=20, family="conversation")
    store = _loaded(manager, [it.copy() for it in turns])
    manager.enforce_budget(store, "default")
    assert manager._compressor.fallbacks == 1 and manager.budget_stats["lm_texts"] == 0
    assert active_words(store, "default") <= 20


@pytest.mark.parametrize("index", [1, 3])
def test_json_full_and_graph_consolidate_write_merged_text_with_the_lm(hash_res, index):
    items = [fact("alice plays the guitar every sunday evening", ep=f"e{i}", when=f"2023-01-0{i + 1}")
             for i in range(3)]
    items[1].text += " again"
    items[2].text += " now"
    resources, _ = with_lm(hash_res, [{"general_memory": "Alice plays guitar on Sundays."}] * 4)
    manager = MANAGERS[index](resources, memory_budget=20, dedup_threshold=0.99, generalise=False,
                              budget_merge_threshold=0.7)
    store = GraphStore(resources)
    for it in items:
        store.add(manager.on_insert([it], store))
    manager.enforce_budget(store, "default")
    merged = next(it for it in store.list() if it.text == "Alice plays guitar on Sundays.")
    assert manager.budget_stats["lm_texts"] == 1 and len(merged.fields["merged_from"]) >= 2
    assert manager.budget_judge.lm_requests == 1 and manager.budget_judge.fallbacks == 0


def test_budget_config_and_saved_program_round_trip(hash_res, tmp_path):
    with pytest.raises(ValueError):
        parse_budget(0)
    arch = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
    program = MemoryProgram(arch, resources=hash_res, config={"manager": {"memory_budget": 50}})
    program.save(tmp_path / "p.json", include_memory=False)
    assert MemoryProgram.load(tmp_path / "p.json", resources=hash_res).manager.memory_budget == 50
    assert extractive_summary(["Okay. Alice moved to Rome in May."], 10) == "Alice moved to Rome in May."


@pytest.mark.parametrize("spec, expect", [("2000", (None, 2000)), ("10%", (0.1, None)), (" 2.5 % ", (0.025, None))])
def test_budget_spec_parsing(spec, expect):
    assert MemoryBudget.parse(spec) == expect


@pytest.mark.parametrize("spec", ["0", "-5", "abc", "150%", "0%", "1.5", "10 words"])
def test_bad_budget_specs(spec):
    with pytest.raises(MemarchError):
        MemoryBudget.parse(spec)


def test_percentage_is_of_the_search_split_mean(capsys):
    from memarch.benchmarks import get_benchmark

    bench = get_benchmark("generated", None, conversations=3, sessions=3)
    raw = raw_turn_words(bench.split("search"))
    budget = MemoryBudget.resolve("10%", bench)
    assert budget.words == round(0.1 * sum(raw.values()) / len(raw)) and f"{budget.words} words" in budget.describe()


TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking"]


def test_cli_evaluate_and_compile_name_the_budget(tmp_path, capsys):
    arch = tmp_path / "a.json"
    Architecture(("turn",), "hybrid", "hybrid", "tool_manager").save(arch)
    assert main(["evaluate", "--benchmark", "generated", "--architecture", str(arch), "--embedder", "hash",
                 "--limit", "10", "--memory-budget", "10%"]) == 0
    out = capsys.readouterr().out
    assert "= 10% of the mean raw turn words" in out and "memory budget" in out and "pruned" in out
    assert main(["compile", *TINY, "--budget", "2", "--storage", "memory", "--memory-budget", "40",
                 "--out", str(tmp_path), "--output", str(tmp_path / "p.json")]) == 0
    assert "memory budget: 40 words per namespace" in capsys.readouterr().out
    assert MemoryProgram.load(tmp_path / "p.json").module_config["manager"]["memory_budget"] == 40


@pytest.mark.parametrize("bad", ["abc", "0", "150%"])
def test_cli_bad_budget_is_one_line_exit_2(bad, capsys):
    assert main(["evaluate", "--benchmark", "generated", "--embedder", "hash", "--memory-budget", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memarch: error: --memory-budget") and "\n" not in err
