"""Memory as an agent skill: the note actions (read, search, upsert, append, delete) bound to one
namespace of a `files` store under a scaffold, with the behaviour counts the runs report."""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

SKILL_COUNTS = ("memory_actions", "reads", "searches", "empty_searches", "writes", "duplicate_writes",
                "refused", "deletes", "stored_duplicate_lines", "steps", "stuck_moves", "back_and_forth_moves")


def _lines(text: str | None) -> list[str]:
    return [ln.strip() for ln in (text or "").splitlines() if ln.strip()]


def _field(line: str) -> str | None:
    head, sep, _ = line.partition(":")
    return head.strip().lower() if sep and head.strip() else None


class NoteSession:
    """The memory actions of one agent in one namespace, as tools; each call is counted.

    The scaffold decides the vocabulary and the schema: append-only (``upsert=0``) refuses
    ``upsert``; under the ``key: value`` schema an upsert replaces the lines of the fields it
    names and keeps the others, under free text it replaces the note. A write is a *duplicate*
    when every line it writes is already in the note.

    Example::

        session = NoteSession(store, "textworld/ep1")   # scaffold: the store's
        session.upsert("kitchen", "exit south: corridor")
        session.read("kitchen"); session.search("corridor"); session.counts["duplicate_writes"]

    Args:
        store: a `FilesStore`.
        namespace: the notes' namespace (one agent, one episode).
        scaffold: ``{"upsert", "kv_schema", "search_before_write"}`` 0/1 (default: the store's).
    """

    def __init__(self, store: Any, namespace: str, scaffold: dict[str, int] | None = None):
        self.store = store
        self.namespace = namespace
        self.scaffold = dict(scaffold or store.scaffold)
        self.counts: Counter = Counter()

    # -- the tools ---------------------------------------------------------------------------------
    def read(self, key: str) -> str:
        """Return the note stored under ``key`` ("" when there is none)."""
        self.counts.update(memory_actions=1, reads=1)
        return self.store.read_note(key, self.namespace) or ""

    def search(self, query: str) -> list[str]:
        """Return up to 3 notes matching ``query``, each as "key: text" ([] when nothing matches)."""
        self.counts.update(memory_actions=1, searches=1)
        hits = self.store.search_notes(query, self.namespace, k=3)
        if not hits:
            self.counts["empty_searches"] += 1
        return [f"{key}: {text}" for key, text, _ in hits]

    def upsert(self, key: str, text: str) -> str:
        """Create note ``key`` or replace it (key: value notes: replace the fields written)."""
        self.counts["memory_actions"] += 1
        if not self.scaffold.get("upsert", 1):
            self.counts["refused"] += 1
            return "refused: this memory is append-only; use append"
        old = self.store.read_note(key, self.namespace)
        self._count_write(old, text)
        new = self._merge(old, text) if self.scaffold.get("kv_schema", 1) else text
        self.store.upsert_note(key, new, self.namespace)
        return "ok"

    def append(self, key: str, text: str) -> str:
        """Add ``text`` at the end of note ``key`` (created when missing)."""
        self.counts["memory_actions"] += 1
        self._count_write(self.store.read_note(key, self.namespace), text)
        self.store.append_note(key, text, self.namespace)
        return "ok"

    def delete(self, key: str) -> str:
        """Delete note ``key``."""
        self.counts.update(memory_actions=1, deletes=1)
        return "ok" if self.store.delete_note(key, self.namespace) else "no such note"

    def tools(self) -> list:
        """The actions the scaffold offers (append-only memory has no ``upsert``)."""
        offered = [self.read, self.search, self.append, self.delete]
        if self.scaffold.get("upsert", 1):
            offered.insert(2, self.upsert)
        return offered

    # -- helpers -----------------------------------------------------------------------------------
    def _count_write(self, old: str | None, text: str) -> None:
        self.counts["writes"] += 1
        have = set(_lines(old))
        if _lines(text) and all(ln in have for ln in _lines(text)):
            self.counts["duplicate_writes"] += 1

    @staticmethod
    def _merge(old: str | None, text: str) -> str:
        """``key: value`` upsert: lines of a field written now replace that field's old lines."""
        new = _lines(text)
        fields = {_field(ln) for ln in new} - {None}
        kept = [ln for ln in _lines(old) if _field(ln) is None or _field(ln) not in fields]
        return "\n".join(kept + [ln for ln in new if ln not in kept])

    def write(self, key: str, text: str) -> None:
        """Write with the scaffold's action; with ``search_before_write`` search first and write
        only the lines the note does not already hold (nothing at all when it holds them all)."""
        if self.scaffold.get("search_before_write", 1):
            hits = self.search(key)
            have = {ln for hit in hits if hit.startswith(f"{key}: ") for ln in _lines(hit[len(key) + 2:])}
            fresh = [ln for ln in _lines(text) if ln not in have]
            if not fresh:
                return
            if have and self.scaffold.get("upsert", 1) and not self.scaffold.get("kv_schema", 1):
                fresh = [ln for hit in hits if hit.startswith(f"{key}: ") for ln in _lines(hit[len(key) + 2:])] + fresh
            text = "\n".join(fresh)
        (self.upsert if self.scaffold.get("upsert", 1) else self.append)(key, text)

    def stored_duplicate_lines(self) -> int:
        """Lines held more than once in the same note: what duplicate writes leave behind."""
        extra = 0
        for item in self.store.list(self.namespace):
            lines = _lines(item.text)
            extra += len(lines) - len(set(lines))
        return extra

    def report(self, steps: int) -> dict[str, float]:
        return {**{k: float(self.counts.get(k, 0)) for k in SKILL_COUNTS},
                "stored_duplicate_lines": float(self.stored_duplicate_lines()), "steps": float(steps)}


def move_counts(actions: Sequence[str], observations: Sequence[str]) -> dict[str, float]:
    """Stuck moves (an action repeated with the observation it already produced) and back-and-forth
    moves (a move that undoes the one before: A, B, A)."""
    seen: set[tuple[str, str]] = set()
    stuck = back = 0
    for i, (a, o) in enumerate(zip(actions, observations)):
        if (a, o) in seen:
            stuck += 1
        seen.add((a, o))
        if i >= 2 and a.startswith("move ") and a == actions[i - 2] and actions[i - 1] != a:
            back += 1
    return {"stuck_moves": float(stuck), "back_and_forth_moves": float(back)}


def skill_costs(totals: dict[str, float]) -> dict[str, float]:
    """A trial's behaviour counts as cost entries: moves for every agent-played run; memory
    actions, duplicate writes and empty searches when the agent kept notes."""
    out = {k: float(totals[k]) for k in ("stuck_moves", "back_and_forth_moves") if k in totals}
    if "memory_actions" in totals:
        out.update({k: float(totals.get(k, 0)) for k in ("writes", "duplicate_writes", "empty_searches",
                                                          "searches", "stored_duplicate_lines")})
        out["memory_actions_per_step"] = round(totals["memory_actions"] / max(totals.get("steps", 0), 1), 4)
    return out
