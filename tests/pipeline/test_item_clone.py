"""`MemoryItem.clone`: equal to `copy` (the dict round trip), nothing mutable shared; the encoder's
in-process memo hands out clones, never the remembered items; `BoundedMemo` keeps its size."""
from __future__ import annotations

from memarch.modules.encoders.turn import TurnEncoder
from memarch.pipeline.cache import BoundedMemo
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.items import MemoryItem


def _item() -> MemoryItem:
    it = MemoryItem("Ana moved to Lisbon.", "fact", episode_id="s1", source_ids=["s1:0"], event_time="2026-05-03",
                    fields={"subject": "ana", "entities": ["Ana", "Lisbon"], "nested": {"a": [1, 2]}}, key="ana|home")
    it.log("created", "encoder:fact", at="2026-05-03", absorbed={"x": "y"})
    it.usage.retrieved = 3
    return it


def test_clone_equals_copy_and_shares_nothing_mutable():
    it = _item()
    twin = it.clone()
    assert twin == it.copy() == it and twin is not it
    assert twin.to_dict() == it.to_dict()
    twin.fields["entities"].append("Porto")
    twin.fields["nested"]["a"].append(3)
    twin.source_ids.append("s1:1")
    twin.usage.retrieved += 1
    twin.lineage[0].related.append("other")
    twin.lineage[0].data["absorbed"]["z"] = "w"
    twin.log("merged_from", "manager:lightweight")
    assert it.to_dict() == _item().to_dict()  # the original is untouched


def test_encoder_hands_out_clones_of_what_it_remembers(hash_resources):
    ep = Episode(id="s1", time="2026-05-03", namespace="ana",
                 turns=[Turn("s1:0", "Ana", "I moved to Lisbon in May.", "2026-05-03"),
                        Turn("s1:1", "Rui", "How is the new job?", "2026-05-03")])
    enc = TurnEncoder(hash_resources)
    first = enc.encode(ep)  # computed, written to the disk cache
    second = enc.encode(ep)  # read from disk, remembered decoded
    third = enc.encode(ep)  # from the memo
    assert len(hash_resources.encoded) == 1
    assert [i.to_dict() for i in first] == [i.to_dict() for i in second] == [i.to_dict() for i in third]
    second[0].text = "changed"
    second[0].lineage.append(second[0].lineage[0].clone())
    assert [i.to_dict() for i in enc.encode(ep)] == [i.to_dict() for i in first]
    assert all(a is not b for a, b in zip(third, enc.encode(ep)))


def test_bounded_memo_drops_the_oldest_entry_first():
    memo = BoundedMemo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    memo.put("a", 3)  # put again: now the newest
    memo.put("c", 4)
    assert memo.get("b") is None and memo.get("a") == 3 and memo.get("c") == 4 and len(memo) == 2
