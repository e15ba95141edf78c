"""`read_json_list`: a JSON list read element by element (plain or gzip), equal to ``json.load``
whatever the chunk boundaries, stopping after ``limit`` elements without reading the rest, and
one-line `DataError`s for what is not JSON."""
from __future__ import annotations

import gzip
import json
import random

import pytest

import memarch.pipeline.json_list as json_list
from memarch.errors import DataError
from memarch.pipeline.json_list import read_json_list


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([0, -7, 12345678901234, 3.25, -1e-9, 1e21])
    if kind == 1:
        return rng.choice(["", "a b", "é\u2603 \"quoted\" \\ back", "x" * rng.randint(0, 40)])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind == 3:
        return rng.randint(0, 10 ** rng.randint(1, 12))
    if kind == 4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {f"k{i}": _value(rng, depth + 1) for i in range(rng.randint(0, 4))}


@pytest.mark.parametrize("seed", range(40))
def test_equal_to_json_loads_at_any_chunk_size(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    data = [_value(rng) for _ in range(rng.randint(0, 30))]
    text = json.dumps(data, indent=rng.choice([None, 1, 2]), ensure_ascii=rng.random() < 0.5)
    plain, packed = tmp_path / "d.json", tmp_path / "d.json.gz"
    plain.write_text(text, encoding="utf-8")
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    monkeypatch.setattr(json_list, "CHUNK", rng.choice([1, 2, 3, 7, 64]))  # values cut anywhere, numbers too
    for path in (plain, packed):
        assert read_json_list(path) == data
        n = rng.randint(0, len(data))
        assert read_json_list(path, limit=n) == data[:n]


def test_a_limit_never_reads_the_rest(tmp_path, monkeypatch):
    f = tmp_path / "d.json.gz"
    f.write_bytes(gzip.compress(b'[{"a": 1}, {"b": [2, 3]}, {"c": 4}' + b" " * 10_000 + b"this is not json"))
    monkeypatch.setattr(json_list, "CHUNK", 64)
    assert read_json_list(f, limit=2) == [{"a": 1}, {"b": [2, 3]}]
    with pytest.raises(DataError) as err:
        read_json_list(f)
    assert "malformed JSON" in str(err.value) and "in element 3" in str(err.value) and "\n" not in str(err.value)


def test_values_that_are_not_lists_and_a_bom(tmp_path):
    f = tmp_path / "d.json"
    f.write_text('{"question_id": "x"}')
    assert read_json_list(f, limit=1) == {"question_id": "x"}  # the caller says what it got
    f.write_text("  [ ] ")
    assert read_json_list(f) == []
    f.write_bytes(b"\xef\xbb\xbf[1, 2]")
    assert read_json_list(f) == [1, 2]


@pytest.mark.parametrize("content, needle", [
    ("[{", "malformed JSON"), ("[1,]", "in element 1"), ("[1 2]", "Expecting ',' delimiter or ']'"),
    ("", "malformed JSON"), ("[1, 2", "Expecting ',' delimiter or ']'"), ('{"a": }', "malformed JSON"),
])
def test_malformed_json_is_one_line(tmp_path, content, needle):
    f = tmp_path / "d.json"
    f.write_text(content)
    with pytest.raises(DataError) as err:
        read_json_list(f, what="LongMemEval file")
    message = str(err.value)
    assert needle in message and "expected a LongMemEval file" in message and "\n" not in message


def test_missing_unreadable_and_broken_gzip(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_json_list(tmp_path / "missing.json")
    with pytest.raises(DataError, match="cannot read"):
        read_json_list(tmp_path)
    bad = tmp_path / "d.json.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="cannot read"):
        read_json_list(bad)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps(list(range(10_000))).encode())[:200])
    with pytest.raises(DataError, match="cannot read|malformed"):
        read_json_list(cut)
