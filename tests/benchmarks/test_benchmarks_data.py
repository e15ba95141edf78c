"""Loaders on the shared data (../shared/data): LoCoMo and bAbI counts, evidence, dates, and one
trial over a slice of each with the fast embedder."""
from __future__ import annotations

import shutil

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.babi import BAbI
from memarch.benchmarks.locomo import LoCoMo
from memarch.errors import DataError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def locomo(data_dir):
    return LoCoMo(data_dir / "locomo")


def test_locomo_counts(locomo):
    s = locomo.stats()
    assert (s["units"], s["sessions"], s["turns"], s["questions"]) == (10, 272, 5882, 1986)
    assert s["categories"] == {"multi-hop": 282, "temporal": 321, "open-domain": 96, "single-hop": 841,
                               "adversarial": 446}


def test_locomo_evidence_and_dates(locomo):
    qs = locomo.questions()
    assert sum(1 for q in qs if not q.evidence) == 4
    turn_ids = {d.namespace: {t.id for s in d.sessions for t in s.turns} for d in locomo.dialogues}
    dangling = [(d.namespace, e) for d in locomo.dialogues for q in d.questions for e in q.evidence
                if e not in turn_ids[d.namespace]]
    assert len(dangling) < 10  # a handful of ids in the dataset point at turns that do not exist
    first = locomo.dialogues[0].sessions[0]
    assert first.time == "2023-05-08T13:56" and first.turns[0].date == "2023-05-08"
    assert all(q.answer is None for q in qs if q.category == "adversarial")
    assert all(s.time for d in locomo.dialogues for s in d.sessions)


def test_locomo_path_forms_and_errors(data_dir, tmp_path, monkeypatch):
    assert LoCoMo(data_dir / "locomo" / "locomo10.json", conversations=1).stats()["units"] == 1
    assert LoCoMo(data_dir, conversations=1).stats()["units"] == 1  # the data root also works
    monkeypatch.setenv("MEMARCH_DATA_DIR", str(data_dir))
    assert get_benchmark("locomo", conversations=2).stats()["units"] == 2
    with pytest.raises(DataError, match="not found"):
        LoCoMo(tmp_path / "missing.json")
    bad = tmp_path / "locomo10.json"
    bad.write_text("[{\"conversation\": {\"session_1\": [{\"text\": \"hi\"}]}}]")
    with pytest.raises(DataError, match="malformed LoCoMo conversation"):
        LoCoMo(bad)


def test_locomo_download_is_checked_offline(tmp_path, data_dir, monkeypatch):
    """No network here: the checked path is exercised with a local URL, both ways."""
    from memarch.benchmarks import locomo as mod

    src = tmp_path / "src.json"
    shutil.copy(data_dir / "locomo" / "locomo10.json", src)
    target = mod.fetch_official(tmp_path / "dl", url=src.as_uri())
    assert target.exists() and LoCoMo(tmp_path / "dl").stats()["questions"] == 1986
    src.write_text("[]")
    with pytest.raises(DataError, match="sha256"):
        mod.fetch_official(tmp_path / "dl2", url=src.as_uri())
    assert not (tmp_path / "dl2" / "locomo10.json").exists()


def test_babi_counts(data_dir):
    bench = BAbI(data_dir / "babi")
    s = bench.stats()
    assert s["questions"] == 20 * 1000 and len(s["categories"]) == 20
    one = BAbI(data_dir / "babi", tasks=[1])
    assert one.stats()["questions"] == 1000 and one.stats()["units"] == 200


def test_babi_supporting_facts_are_gold_evidence(data_dir):
    bench = BAbI(data_dir / "babi" / "en", tasks=[1, 2], stories=5)
    story = bench.dialogues[0]
    assert story.sessions[0].turns[0].text == "John travelled to the hallway."
    q = story.questions[0]
    assert (q.text, q.answer, q.evidence, q.ask_after) == ("Where is John?", "hallway", ["L1"], 0)
    for d in bench.dialogues:
        for i, q in enumerate(d.questions):
            seen = {t.id for s in d.sessions[: q.ask_after + 1] for t in s.turns}
            assert set(q.evidence) <= seen  # supporting facts were written before the question
    with pytest.raises(DataError, match="task"):
        BAbI(data_dir / "babi", tasks=[21])


def test_one_trial_on_each_slice(data_dir, hash_resources):
    from memarch.pipeline.architecture import Architecture
    from memarch.benchmarks.evaluation.evaluate import evaluate

    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    for bench in (LoCoMo(data_dir / "locomo", conversations=1), BAbI(data_dir / "babi", tasks=[1], stories=20)):
        result = evaluate(arch, bench, split="test", resources=hash_resources)
        assert not result.failed, result.error
        assert result.outcomes and 0.0 < result.score <= 1.0
        assert result.scores["evidence_recall"] > 0.0
