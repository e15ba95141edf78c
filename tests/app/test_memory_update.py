"""`Memory.update`: one wrong memory corrected — re-encoded through the program, the old item
superseded (never deleted) with both ends of the lineage, the manager's rules applied, across a
restart; a missing or already-replaced item is a NotFoundError naming its successor."""
from __future__ import annotations

import pytest

from memarch import Architecture, Memory, MemarchError
from memarch.errors import NotFoundError
from memarch.pipeline.episodes import Episode, Step
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")


@pytest.fixture
def memory(program_file, mem_path):
    with Memory.load(program_file, path=mem_path) as mem:
        yield mem


def test_update_supersedes_with_lineage_both_ways(memory):
    old = memory.add([{"role": "ana", "content": "I moved to Lisbon in May."}], user_id="ana",
                     timestamp="2026-05-03")[0]
    memory.add("My sister Rita plays the cello.", user_id="ana", timestamp="2026-05-03")
    new = memory.update(old.id, "I moved to Porto in May.", user_id="ana", timestamp="2026-05-10")
    assert len(new) == 1 and new[0].text == "ana (10 May 2026): I moved to Porto in May."  # same speaker
    assert new[0].updated_from == old.id and new[0].fields["updated_from"] == old.id
    entry = new[0].lineage[-1]
    assert entry["action"] == "updated_from" and entry["data"]["text"] == old.text
    gone = memory.get(old.id, user_id="ana")
    assert gone.status == "superseded"  # kept, listable, never deleted
    last = memory.history(old.id, user_id="ana")[-1]
    assert (last["action"], last["actor"], last["related"]) == ("superseded_by", "app", [new[0].id])
    texts = [h.text for h in memory.search("where did she move?", user_id="ana", limit=5)]
    assert any("Porto" in t for t in texts) and not any("Lisbon" in t for t in texts)
    assert memory.count(user_id="ana") == 2
    assert memory.source(new[0].id, user_id="ana") == [
        {"turn_id": new[0].source_ids[0], "speaker": "ana", "text": "I moved to Porto in May."}]


def test_update_survives_a_restart(memory, tmp_path, mem_path):
    old = memory.add("The wifi password is tulip42.", user_id="bo")[0]
    new = memory.update(old.id, "The wifi password is orchid77.", user_id="bo")[0]
    memory.close()
    with Memory.load(tmp_path / "program.json", path=mem_path) as again:
        assert again.get(old.id, user_id="bo").status == "superseded"
        assert again.get(new.id, user_id="bo").updated_from == old.id
        assert "orchid77" in again.search("wifi password", user_id="bo", limit=1)[0].text


def test_update_into_an_existing_text_points_at_it(memory):
    """The correction says what another item says already: the manager merges it there, and the
    old item points at that survivor instead of nothing."""
    keep = memory.add("I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")[0]
    wrong = memory.add("I adopted a dog named Rex.", user_id="ana", timestamp="2026-05-04")[0]
    new = memory.update(wrong.id, "I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")
    # same words, but another date in the turn's text: a new item or a merge; either way linked
    successors = memory.history(wrong.id, user_id="ana")[-1]["related"]
    assert successors and all(memory.get(s, user_id="ana").status == "active" for s in successors)
    assert successors == ([r.id for r in new] or [keep.id])


def test_update_refusals_write_nothing(memory):
    item = memory.add("I like tea.", user_id="ana")[0]
    before = memory.stats()
    with pytest.raises(NotFoundError, match="no active memory item 'nope' of user 'ana'"):
        memory.update("nope", "x", user_id="ana")
    with pytest.raises(NotFoundError):  # another user's item is not found, not changed
        memory.update(item.id, "I like coffee.", user_id="bo")
    with pytest.raises(MemarchError, match="text: expected a non-empty string"):
        memory.update(item.id, "  ", user_id="ana")
    assert memory.stats() == before and memory.get(item.id, user_id="ana").status == "active"
    new = memory.update(item.id, "I like coffee.", user_id="ana")[0]
    with pytest.raises(NotFoundError, match=f"it is superseded; its successor is {new.id}"):
        memory.update(item.id, "I like juice.", user_id="ana")


def test_get_and_delete_of_a_missing_item_are_not_found(memory):
    with pytest.raises(NotFoundError):
        memory.get("nope", user_id="ana")
    with pytest.raises(NotFoundError):
        memory.delete(user_id="ana", item_id="nope")


def test_update_in_an_experience_program_replaces_the_text(tmp_path, hash_resources):
    arch = Architecture(("trajectory",), "vector", "hybrid", "lightweight")
    with Memory.load(MemoryProgram(arch, resources=hash_resources), path=tmp_path / "exp") as memory:
        ep = Episode(id="t1", task="heat the soup", steps=[Step("s0", "open the fridge", "you see soup")],
                     outcome="success", time="2026-05-03")
        old = memory.add_episode(ep, user_id="agent")[0]
        new = memory.update(old.id, "To heat soup: take it from the fridge, use the stove.", user_id="agent")
        assert [r.text for r in new] == ["To heat soup: take it from the fridge, use the stove."]
        assert new[0].encoder == old.encoder and new[0].updated_from == old.id
        assert memory.get(old.id, user_id="agent").status == "superseded"
