"""Context packing (the retrievers' ``pack`` knobs): every option keeps the context within B words
and every line under its item's dated header; sentence packing keeps the query's sentence of a long
item over the filler of a better-ranked one, with the speaker/date lead; the default is today's
item packing, so presets, old architecture files and saved programs read the same."""
from __future__ import annotations

import pytest

from memarch.modules.retrievers._packing import PACKING, pack_context, pack_sentences, split_sentences
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.retrieval import ScoredItem, count_tokens, pack

FILLER = ("Hey, how are you doing today? I hope the week treats you well. The weather was grey again. "
          "We watched a film and ate popcorn. It was a quiet evening.")


def _turn(i: int, text: str, when: str) -> MemoryItem:
    return MemoryItem(f"Ann ({when}): {text}", "turn", episode_id=f"s{i}", source_ids=[f"D1:{i}"],
                      event_time=when)


def _ranked() -> list[ScoredItem]:
    items = [_turn(0, FILLER, "2023-05-01"),
             _turn(1, FILLER + " By the way, I moved to Lisbon last spring for my new job.", "2023-05-08"),
             _turn(2, "Nothing new here. " * 6, "2023-05-15")]
    return [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate(items)]


@pytest.mark.parametrize("budget", [12, 20, 35, 60, 200])
@pytest.mark.parametrize("packer", [0, 1])
def test_every_packer_fits_the_budget_and_keeps_each_items_dated_header(budget, packer, hash_resources):
    r = pack_context(Query("Where did Ann move for her job?"), _ranked(), top_k=3, budget_tokens=budget,
                     config={"pack": packer}, embedder=hash_resources.embedder, trace={})
    assert count_tokens(r.context) <= budget
    lines = [line for line in r.context.splitlines() if line.strip()]
    assert len(lines) == len(r.items)
    for line, scored in zip(lines, r.items):
        assert line.startswith(f"[turn {scored.item.event_time}]"), line


def test_sentence_packing_keeps_the_answer_of_a_long_item_and_its_lead(hash_resources):
    query = Query("Where did Ann move for her new job?")
    ranked = _ranked()
    items = pack(query, ranked, top_k=3, budget_tokens=40)
    assert "Lisbon" not in items.context  # the better-ranked filler turn eats the budget
    sent = pack_sentences(query, ranked, budget_tokens=20, embedder=hash_resources.embedder,
                          rank_weight=1.0, lexical_weight=1.0)
    assert "moved to Lisbon" in sent.context and count_tokens(sent.context) <= 20
    line = next(line for line in sent.context.splitlines() if "Lisbon" in line)
    assert line.startswith("[turn 2023-05-08] Ann (2023-05-08): ")  # header, then the speaker/date lead
    kept = next(s for s in sent.items if s.item.source_ids == ["D1:1"])
    assert kept.trace["truncated"] and kept.trace["sentences"] == [len(split_sentences(kept.item.text)) - 1]
    assert sent.trace["packer"] == "sentences"


def test_items_is_the_default_and_equals_todays_packing(hash_resources):
    store = VectorStore(hash_resources)
    store.add([_turn(i, f"{FILLER} Detail number {i}.", f"2023-05-{i + 1:02d}") for i in range(8)])
    query = Query("detail number 3")
    default = HybridRetriever(hash_resources).retrieve(query, store, top_k=5, budget_tokens=60)
    ranked = HybridRetriever(hash_resources).rank(query, store, 5)
    assert default.context == pack(query, ranked, top_k=5, budget_tokens=60).context
    sentences = HybridRetriever(hash_resources, pack=1).retrieve(query, store, top_k=5, budget_tokens=60)
    assert sentences.trace["packer"] == "sentences" and sentences.trace["candidates"] == 8  # pool 2 x 5, 8 exist
    assert count_tokens(sentences.context) <= 60


def test_packing_knobs_are_on_every_retriever_default_items_and_an_old_file_loads():
    names = {k.name for k in PACKING}
    for spec in REGISTRY.specs("retriever"):
        assert names <= {k.name for k in spec.knobs}, spec.name
        assert next(k for k in spec.knobs if k.name == "pack").default == 0
    old = Architecture.from_dict({"schema_version": "1", "encode": ["turn"], "store": "vector",
                                  "retrieve": "hybrid", "manage": "lightweight"})
    assert old.params == () and old.key() == "turn|vector|hybrid|lightweight"
    packed = Architecture.from_dict({**old.to_dict(), "params": {"retrieve.pack": 1}})
    assert packed.key().endswith("|retrieve.pack=1")


def test_the_registry_table_shows_the_pack_knobs():
    from memarch.cli.space import knob_table

    rows = [r for r in knob_table().splitlines() if "pack" in r]
    assert any("`retrieve.pack`" in r and "sentences" in r for r in rows), rows
