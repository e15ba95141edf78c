"""LongMemEval's published layout read by its loader: a fixture written to the documented schema
(invented content; the real files are not reachable here), path forms, malformed files, and the
answer-span objective and attribution through `evaluate` and the CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.base import SPLITS
from memarch.benchmarks.longmemeval import QUESTION_TYPES, LongMemEval, parse_date
from memarch.errors import DataError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "longmemeval"
FILE = FIXTURE / "longmemeval_s.json"


@pytest.fixture(scope="module")
def bench() -> LongMemEval:
    return LongMemEval(FIXTURE)


def _by_ns(bench: LongMemEval) -> dict:
    return {d.namespace: d for d in bench.dialogues}


def _instances() -> list[dict]:
    return json.loads(FILE.read_text(encoding="utf-8"))


def test_fixture_counts_and_categories(bench):
    s = bench.stats()
    assert (s["units"], s["sessions"], s["turns"], s["questions"]) == (7, 18, 39, 7)
    assert set(s["categories"]) == set(QUESTION_TYPES) and s["categories"]["multi-session"] == 2
    assert all(len(d.questions) == 1 and d.questions[0].ask_after == len(d.sessions) - 1 for d in bench.dialogues)
    assert bench.load_notes == {"reordered": 0, "abstention": 1, "session_level_evidence": 1,
                                "no_evidence": 0, "answer_sessions_missing": 0}


def test_dates_are_iso_and_the_question_is_dated(bench):
    d = _by_ns(bench)["7f3a91c2"]
    assert [s.time for s in d.sessions] == ["2023-05-10T09:12", "2023-05-14T16:05", "2023-05-20T11:30"]
    assert {t.date for t in d.sessions[1].turns} == {"2023-05-14"}
    assert d.questions[0].time == "2023-06-02T18:40"
    assert parse_date("2023/05/20 (Sat) 02:21") == "2023-05-20T02:21"
    assert parse_date("2023/05/20") == "2023-05-20" and parse_date("2023-05-20") == "2023-05-20"
    assert parse_date("20 May") is None and parse_date("2023/13/01 (Mon) 10:00") is None


def test_evidence_turn_level_session_level_and_abstention(bench):
    ns = _by_ns(bench)
    text = {d.namespace: {t.id: t for s in d.sessions for t in s.turns} for d in bench.dialogues}
    user_q = ns["7f3a91c2"].questions[0]
    assert user_q.evidence == ["S2:1"] and "border collie" in text["7f3a91c2"]["S2:1"].text
    assistant_q = ns["b20c44de"].questions[0]
    assert [text["b20c44de"][e].speaker for e in assistant_q.evidence] == ["assistant"]
    assert ns["gpt4_c1e8a5f0"].questions[0].answer == "3"  # a JSON number in the file
    pref = ns["0a7c3e55"].questions[0]  # no has_answer flags: every turn of its answer session
    assert pref.evidence == ["S2:1", "S2:2"] and pref.metadata["evidence_level"] == "session"
    abstain = ns["gpt4_5be2d8aa_abs"].questions[0]
    assert abstain.category == "multi-session" and abstain.answer is None and not abstain.answerable
    assert abstain.evidence == [] and abstain.metadata["abstention_answer"].startswith("The information")
    dangling = [(d, e) for d in ns for q in ns[d].questions for e in q.evidence if e not in text[d]]
    assert dangling == []


def test_published_session_ids_never_reach_what_memory_reads(bench):
    """Evidence sessions are named ``answer_...`` in the file: an id shown to an encoder would
    give the gold away, so ids are positional and the published ones stay in dialogue metadata."""
    for d in bench.dialogues:
        for s in d.sessions:
            assert "answer" not in s.id and "answer" not in json.dumps(s.metadata)
            assert all("answer" not in t.id and not t.metadata for t in s.turns)
    assert _by_ns(bench)["7f3a91c2"].metadata["session_ids"][1] == "answer_7f3a91c2_1"


def test_unsorted_haystack_is_written_in_time_order(tmp_path):
    inst = _instances()[3]  # knowledge-update: old job first, new job last
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        inst[key] = inst[key][::-1]  # as in longmemeval_oracle.json, which is not sorted
    f = tmp_path / "longmemeval_oracle.json"
    f.write_text(json.dumps([inst]))
    bench = LongMemEval(tmp_path, variant="oracle")
    d = bench.dialogues[0]
    assert [s.time[:10] for s in d.sessions] == ["2023-03-08", "2023-06-15", "2023-10-30"]
    assert "Harbor Analytics" in d.sessions[-1].turns[0].text and d.questions[0].evidence == ["S1:1", "S3:1"]
    assert bench.load_notes["reordered"] == 1


def test_path_forms_knobs_and_splits(tmp_path, monkeypatch):
    assert LongMemEval(FILE, instances=2).stats()["units"] == 2
    nested = tmp_path / "longmemeval"
    nested.mkdir()
    (nested / "longmemeval_s_cleaned.json").write_text(FILE.read_text(encoding="utf-8"))
    monkeypatch.setenv("MEMARCH_DATA_DIR", str(tmp_path))
    assert get_benchmark("longmemeval").stats()["questions"] == 7
    with pytest.raises(DataError, match="longmemeval_m.json"):
        LongMemEval(tmp_path, variant="m")
    bench = get_benchmark("longmemeval", FIXTURE, seed=3)
    seen = [q.id for name in SPLITS for q in bench.split(name).questions()]
    assert sorted(seen) == sorted(q.id for q in bench.questions())  # disjoint and complete


def _broken(mutate) -> list[dict]:
    data = _instances()
    mutate(data)
    return data


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d[2].pop("question_id"), "instance 2: field question_id: missing"),
    (lambda d: d[2].__setitem__("question_id", " "), "instance 2 ( ): field question_id: empty"),
    (lambda d: d[1].__setitem__("answer", None), "instance 1 (b20c44de): field answer: missing"),
    (lambda d: d[0]["haystack_dates"].pop(), "instance 0 (7f3a91c2): field haystack_dates: has 2 entries"),
    (lambda d: d[4]["haystack_dates"].__setitem__(1, "last Tuesday"), "field haystack_dates[1]: unparseable"),
    (lambda d: d[3].__setitem__("question_date", "soon"), "instance 3 (4d9e0b7a): field question_date"),
    (lambda d: d[5]["haystack_sessions"][1][0].pop("content"), "field haystack_sessions[1][0]: expected an object"),
    (lambda d: d[6].__setitem__("haystack_sessions", "none"), "field haystack_sessions: expected a list"),
    (lambda d: d.__setitem__(1, ["not", "an", "object"]), "instance 1: field (instance): expected an object"),
    (lambda d: d.append(dict(d[0])), "instance 7 (7f3a91c2): field question_id: duplicate of instance 0"),
])
def test_malformed_instance_names_index_and_field(tmp_path, mutate, needle):
    f = tmp_path / "longmemeval_s.json"
    f.write_text(json.dumps(_broken(mutate)))
    with pytest.raises(DataError) as err:
        LongMemEval(f)
    assert needle in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("content, needle", [
    ('{"question_id": "x"}', "not a LongMemEval file.*got dict"),
    ("[]", "got an empty list"),
    ("[{", "malformed JSON"),
])
def test_malformed_file(tmp_path, content, needle):
    f = tmp_path / "longmemeval_s.json"
    f.write_text(content)
    with pytest.raises(DataError, match=needle):
        LongMemEval(f)
    with pytest.raises(DataError, match="not found"):
        LongMemEval(tmp_path / "missing.json")


def test_answer_span_and_attribution_on_the_fixture(bench, hash_res):
    from memarch.pipeline.architecture import Architecture
    from memarch.benchmarks.evaluation.evaluate import evaluate

    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    wide = evaluate(arch, bench, split="all", resources=hash_res, context_budget=200)
    assert not wide.failed and wide.scores["questions"] == 6  # the abstention question needs an LM
    assert wide.scores["evidence_recall"] == 1.0  # every haystack is shorter than the budget
    assert set(wide.per_category) == set(QUESTION_TYPES)
    narrow = evaluate(arch, bench, split="all", resources=hash_res, context_budget=10, top_k=1)
    assert narrow.scores["evidence_recall"] < 1.0 and narrow.attribution["retrieve"] > 0


def test_cli_evaluate_on_the_fixture(tmp_path, capsys, monkeypatch):
    from memarch.cli import main
    from memarch.pipeline.architecture import Architecture

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    arch = tmp_path / "arch.json"
    Architecture(("turn", "fact"), "vector", "hybrid", "lightweight").save(arch)
    argv = ["evaluate", "--benchmark", "longmemeval", "--data", str(FIXTURE), "--architecture", str(arch),
            "--embedder", "hash", "--split", "all"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # the benchmark's declared LM-free metric is the default; its variant is shown (and recorded)
    assert "longmemeval (variant=s) [all]" in out and "score (span_or_evidence)" in out and "temporal-reasoning" in out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_broken(lambda d: d[0].pop("haystack_sessions"))))
    assert main([*argv[:4], str(bad), *argv[5:]]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "instance 0 (7f3a91c2): field haystack_sessions: missing" in err[0]


def test_an_abstention_question_is_right_when_the_reader_abstains(bench, hash_res):
    """Scored as LoCoMo's adversarial questions are (1 iff the answer abstains), under its own type."""
    from memarch.pipeline.architecture import Architecture
    from memarch.benchmarks.evaluation.evaluate import evaluate

    abstain = bench._view(dialogues=[d for d in bench.dialogues if d.namespace.endswith("_abs")])
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    for answer, expected in (("Kayaks were not mentioned.", 1.0), ("You own two kayaks.", 0.0)):
        result = evaluate(arch, abstain, split="all", resources=hash_res, reader=lambda ctx, q, a=answer: a)
        assert result.scores["qa_f1"] == expected and set(result.per_category) == {"multi-session"}


def test_the_declared_lm_free_metric_is_the_default_and_a_named_one_wins(bench, hash_res):
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.optimizers.evaluators.benchmark import BenchmarkEvaluator
    from memarch.pipeline.architecture import Architecture

    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    default = evaluate(arch, bench, split="all", resources=hash_res)
    assert default.metadata["metric"] == LongMemEval.lm_free_metric == "span_or_evidence"
    assert default.score == default.scores["span_or_evidence"]
    named = evaluate(arch, bench, split="all", resources=hash_res, metric="answer_span")
    assert named.metadata["metric"] == "answer_span" and named.score == named.scores["answer_span"]
    assert BenchmarkEvaluator(bench, resources=hash_res).metric == "span_or_evidence"
    assert BenchmarkEvaluator("generated", resources=hash_res, knobs={"conversations": 1}).metric == "answer_span"
    with_reader = evaluate(arch, bench, split="all", resources=hash_res, reader=lambda ctx, q: "no idea")
    assert with_reader.metadata["metric"] == "qa_f1"


def test_the_per_type_table_counts_abstention_in_its_type_and_apart(bench, hash_res):
    """print_qa_metrics.py's bookkeeping: with a reader the ``_abs`` question is scored inside
    multi-session and on its own line; without one it is counted as skipped."""
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.architecture import Architecture

    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    read = evaluate(arch, bench, split="all", resources=hash_res, reader=lambda ctx, q: "It was not mentioned.")
    table = read.metadata["category_report"]
    assert table["per_type"]["multi-session"]["n"] == 2 and table["n"] == 7
    assert table["abstention"] == {"score": 1.0, "n": 1, "skipped": 0}
    assert table["task_averaged"] == pytest.approx(sum(r["score"] for r in table["per_type"].values()) / 6)
    lm_free = evaluate(arch, bench, split="all", resources=hash_res).metadata["category_report"]
    assert lm_free["n"] == 6 and lm_free["abstention"] == {"score": None, "n": 0, "skipped": 1}
    # the official averages read the abstention question too (the vendor rule counts it)
    official = evaluate(arch, bench, split="all", resources=hash_res).metadata["official"]
    assert official["vendor"]["n"] == 7 and official["non_abs"]["n"] == 6
