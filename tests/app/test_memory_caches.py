"""Who owns the caches of a served memory (issue 48): each `Memory` its own memos of texts
(`Resources.texts`) and its store its derived indexes (``store.caches``), so deleting a user empties
that memory's caches and leaves every other memory's warm — and no module-level memo of memarch
holds a text a memory was given."""
from __future__ import annotations

import sys

from memarch import Architecture, Memory
from memarch.modules.retrievers import hybrid

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
SECRET = "My zanzibarite vault code is quetzalcoatl-7781."

# The module-level memos a memory may fill: none holds a text. Every other memo of texts belongs to a
# `Resources` (`TextCaches`) or an `Embedder`.
NOT_TEXTS = {
    "memarch.modules.retrievers.hybrid._reciprocal": "a side's RRF terms: numbers",
    "memarch.modules.stores.lexical._STEMMER": "the Snowball stemmer, one object",
    "memarch.modules.retrievers._aware._date": "ISO dates (10 characters) parsed: no text",
}


def test_deleting_a_user_empties_that_memorys_caches_and_leaves_another_memorys_warm(program_file, tmp_path):
    with Memory.load(program_file, path=tmp_path / "a") as a, Memory.load(program_file, path=tmp_path / "b") as b:
        a.add(SECRET, user_id="victim")
        a.add("I like green tea.", user_id="keeper")
        b.add("Ann moved to Lisbon in May.", user_id="ann")
        assert "zanzibarite" in a.search("where is the zanzibarite vault?", user_id="victim")[0].text
        b.search("where did Ann move?", user_id="ann")
        assert a.resources.texts is not b.resources.texts  # each memory owns its memos
        assert a.resources.texts.sizes()["Terms.terms"] > 0 and "victim" in a.program.store.namespaces()
        assert hybrid.__name__ in a.program.store.caches.owners()
        b_sizes, b_store = b.resources.texts.sizes(), b.program.store
        b_parts = {owner: dict(b_store.caches.part(owner)) for owner in b_store.caches.owners()}
        assert b_sizes["Terms.terms"] > 0 and b_parts[hybrid.__name__]

        assert a.delete(user_id="victim") == 1

        # The deleted user's memory: every memo of texts empty (the keeper's items were loaded back
        # into a fresh store, which has derived nothing yet), the embedder's vectors gone.
        assert not any(a.resources.texts.sizes().values()), a.resources.texts.sizes()
        assert a.program.store.caches.owners() == [] and "victim" not in a.program.store.namespaces()
        assert not any("zanzibarite" in text for text in a.resources.embedder._memo)
        # The other memory: its memos and its store's caches as they were...
        assert b.resources.texts.sizes() == b_sizes and b.program.store is b_store
        assert {owner: dict(b_store.caches.part(owner)) for owner in b_store.caches.owners()} == b_parts
        # ...and warm: the same search again finds its lines in the memos (hits, no new miss).
        before = b.resources.texts.info()
        b.search("where did Ann move?", user_id="ann")
        after = b.resources.texts.info()
        assert sum(i.hits for i in after.values()) > sum(i.hits for i in before.values())
        assert sum(i.misses for i in after.values()) == sum(i.misses for i in before.values())
        # The deleted user's memory serves its other user as before, from memos made anew.
        assert "tea" in a.search("what does the keeper drink?", user_id="keeper")[0].text
        assert a.resources.texts.sizes()["Terms.terms"] > 0


def _module_memos() -> dict[str, object]:
    """Every `functools.lru_cache` defined at the top of a loaded memarch module, by qualified name."""
    out = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "memarch" or name.startswith("memarch.")):
            continue
        for attr, value in list(vars(module).items()):
            if callable(getattr(value, "cache_info", None)) and getattr(value, "__module__", None) == name:
                out[f"{name}.{attr}"] = value
    return out


def test_a_memory_fills_no_module_level_memo_with_its_texts(program_file, tmp_path):
    """Add, search and update through a `Memory`: the process-wide memos it fills are those of
    `NOT_TEXTS` only (its texts stay in its own `Resources.texts`, which a delete empties)."""
    with Memory.load(program_file, path=tmp_path / "m") as memory:
        for memo in _module_memos().values():
            memo.cache_clear()
        memory.add(SECRET, user_id="victim", timestamp="2026-05-03")
        [hit] = memory.search("zanzibarite vault", user_id="victim", limit=1)
        memory.update(hit.id, "My zanzibarite vault code changed to quetzalcoatl-9.", user_id="victim")
        memory.search("zanzibarite vault code", user_id="victim")
        filled = {name for name, memo in _module_memos().items() if memo.cache_info().currsize}
        assert filled <= set(NOT_TEXTS), filled - set(NOT_TEXTS)
        assert memory.resources.texts.sizes()["Terms.terms"] > 0  # the texts went to the memory's own
