"""LongMemEval on the real published files (../shared/data/longmemeval: ``longmemeval_s.json.gz``,
498 instances; ``longmemeval_oracle.json.gz``, 500): gz and plain slices, both variants, the
variant knob, a short read that parses only what it keeps, the split by instance (the same
whichever instances are loaded), the golds the official harness forms, the LM-free rule per type,
and an evaluate on three _S instances with the official report beside memarch's."""
from __future__ import annotations

import gzip
import json
import time

import pytest

import memarch.pipeline.json_list as json_list
from memarch.benchmarks import get_benchmark
from memarch.benchmarks.base import SPLITS
from memarch.benchmarks.longmemeval import LongMemEval
from memarch.benchmarks.metrics.span_or_evidence import is_short_span, lm_free_rule, span_or_evidence
from memarch.errors import DataError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lme_dir(data_dir):
    return data_dir / "longmemeval"


@pytest.fixture(scope="module")
def oracle(lme_dir) -> LongMemEval:
    return LongMemEval(lme_dir, variant="oracle")


def _slice(path, n: int) -> list[dict]:
    return json_list.read_json_list(path, limit=n)


def test_a_short_read_of_s_parses_only_what_it_keeps(lme_dir, monkeypatch):
    chunks = []
    more = json_list._Stream.more

    def counted(self):
        chunks.append(1)
        return more(self)

    monkeypatch.setattr(json_list._Stream, "more", counted)
    t0 = time.perf_counter()
    bench = LongMemEval(lme_dir, instances=3)
    took = time.perf_counter() - t0
    assert bench.stats()["units"] == 3 and bench.path.name == "longmemeval_s.json.gz"
    # 257 MB of JSON in the file: three instances read a few chunks of it (8 MiB each)
    assert len(chunks) * json_list.CHUNK < 0.1 * 257e6 and took < 10
    assert dict(bench.knobs) == {"variant": "s", "instances": 3}


def test_gz_and_plain_slices_read_alike(lme_dir, tmp_path):
    for variant in ("s", "oracle"):
        rows = _slice(lme_dir / f"longmemeval_{variant}.json.gz", 3)
        plain = tmp_path / variant / f"longmemeval_{variant}.json"
        plain.parent.mkdir()
        plain.write_text(json.dumps(rows), encoding="utf-8")
        packed = tmp_path / variant / f"longmemeval_{variant}_cleaned.json.gz"
        packed.write_bytes(gzip.compress(json.dumps(rows).encode()))
        from_gz = LongMemEval(lme_dir / f"longmemeval_{variant}.json.gz", instances=3)
        from_plain, from_packed = LongMemEval(plain), LongMemEval(packed)
        assert from_plain.dialogues == from_gz.dialogues == from_packed.dialogues
        assert from_plain.variant == from_gz.variant == variant  # the file's name says it
        assert LongMemEval(plain.parent, variant=variant).path == plain  # plain before gz in a directory


def test_variants_and_the_knob(lme_dir, oracle):
    assert oracle.path.name == "longmemeval_oracle.json.gz" and dict(oracle.knobs) == {"variant": "oracle"}
    assert oracle.stats()["categories"] == {"knowledge-update": 78, "multi-session": 133,
                                            "single-session-assistant": 56, "single-session-preference": 30,
                                            "single-session-user": 70, "temporal-reasoning": 133}
    assert max(len(d.sessions) for d in oracle.dialogues) <= 6
    s = get_benchmark("longmemeval", lme_dir, instances=2)
    assert s.variant == "s" and len(s.dialogues[0].sessions) > 30
    with pytest.raises(DataError, match="the oracle variant's file, but variant=s"):
        LongMemEval(lme_dir / "longmemeval_oracle.json.gz", variant="s")
    with pytest.raises(DataError, match="longmemeval_m.json"):
        LongMemEval(lme_dir, variant="m")  # not published in this mirror


def test_the_official_averages_count_as_the_harness_does(oracle):
    qs = oracle.questions()
    # run_retrieval.py on the published 500: 30 abstention, 51 more without user-side gold
    assert sum(q.metadata["official_scored"] for q in qs) == 419
    assert sum(not q.metadata["abstention"] for q in qs) == 470
    for q in qs:
        meta = q.metadata
        assert set(meta["official_session_gold"]) <= set(meta["answer_sessions"])
        assert bool(meta["official_turn_gold"]) == bool(meta["official_session_gold"])
        if meta["official_scored"]:
            assert meta["lm_free_evidence"] == meta["official_turn_gold"]


def test_the_split_is_by_instance_and_stable(lme_dir, oracle):
    full = {d.namespace: oracle.split_of(d, d.questions[0]) for d in oracle.dialogues}
    assert oracle.split_unit == "instance" and set(full.values()) == set(SPLITS)
    counts = oracle.split_settings()["units"]
    assert sum(counts.values()) == 500 and all(abs(counts[n] / 500 - f) < 0.06 for n, f in oracle.fractions.items())
    # the first N, another subset, the _S file: each instance lands where the full oracle file puts it
    part = LongMemEval(lme_dir, variant="oracle", instances=40)
    assert {d.namespace: part.split_of(d, d.questions[0]) for d in part.dialogues} == \
        {ns: full[ns] for ns in list(full)[:40]}
    s = LongMemEval(lme_dir, instances=5)
    assert all(s.split_of(d, d.questions[0]) == full[d.namespace] for d in s.dialogues)
    test_ids = {q.id for q in oracle.split("test").questions()}
    assert {q.id for q in part.split("test").questions()} <= test_ids
    other = LongMemEval(lme_dir, variant="oracle", instances=40, seed=1)
    assert [other.split_of(d, d.questions[0]) for d in other.dialogues] != \
        [part.split_of(d, d.questions[0]) for d in part.dialogues]


def test_the_lm_free_rule_per_type(oracle):
    assert lm_free_rule("single-session-user", "Luna") == "answer_span"
    assert lm_free_rule("knowledge-update", "under my bed") == "answer_span"
    assert lm_free_rule("knowledge-update", "25") == "evidence" and lm_free_rule("knowledge-update", 25) == "evidence"
    assert lm_free_rule("temporal-reasoning", "7 days") == "evidence"  # derived
    assert lm_free_rule("multi-session", "$5,850") == "evidence"
    assert lm_free_rule("single-session-preference", "The user would prefer ...") == "evidence"
    assert lm_free_rule("single-session-assistant", "I recommended using a Pilsner or Lager for it.") == "evidence"
    assert not is_short_span("") and is_short_span("9 months")
    rules = {}
    for q in oracle.questions():
        if q.answerable:
            rules.setdefault(q.category, set()).add(q.metadata["lm_free_rule"])
    assert rules["single-session-preference"] == rules["temporal-reasoning"] == rules["multi-session"] == {"evidence"}
    assert rules["single-session-user"] == {"answer_span", "evidence"}
    q = next(q for q in oracle.questions() if q.metadata.get("lm_free_rule") == "evidence")
    assert span_or_evidence(q, "", q.metadata["lm_free_evidence"], 200) == 1.0
    assert span_or_evidence(q, "", [], 200) == 0.0
    span = next(q for q in oracle.questions() if q.metadata.get("lm_free_rule") == "answer_span")
    assert span_or_evidence(span, f"we said {span.answer} then", [], 200) == 1.0


def test_evaluate_three_s_instances_reports_per_type_and_the_official_metrics(lme_dir):
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    bench = LongMemEval(lme_dir, instances=3)
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, bench, split="all", resources=Resources(embedder=Embedder("hash")))
    assert not result.failed and result.metadata["metric"] == "span_or_evidence"
    assert result.metadata["knobs"] == {"variant": "s", "instances": 3}
    table = result.metadata["category_report"]
    assert sum(row["n"] for row in table["per_type"].values()) == table["n"] == result.scores["questions"]
    assert table["abstention"]["skipped"] == sum(1 for q in bench.questions() if not q.answerable)
    official = result.metadata["official"]
    scored = sum(q.metadata["official_scored"] for q in bench.questions())
    assert official["strict"]["n"] == scored and official["vendor"]["n"] == 3
    for level in ("session", "turn", "turn2session", "user_turn", "user_turn2session"):
        assert 0.0 <= official["strict"][level]["recall_any@5"] <= official["strict"][level]["recall_any@50"] <= 1.0
    assert set(official["vendor"]) == {"n", "vendor_session"}


def test_cli_evaluate_with_the_variant_knob(lme_dir, tmp_path, capsys, monkeypatch):
    from memarch.cli import main

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    argv = ["evaluate", "--benchmark", "longmemeval", "--data", str(lme_dir), "--knob", "variant=oracle",
            "--limit", "5", "--embedder", "hash", "--architecture", "none", "--json", str(tmp_path / "r.json")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("longmemeval (variant=oracle) [test]") and "task-averaged" in out
    assert "official retrieval metrics" in out and "vendor rule" in out
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["metadata"]["knobs"] == {"variant": "oracle"} and saved["metadata"]["official"]["vendor"]["n"] >= 5
