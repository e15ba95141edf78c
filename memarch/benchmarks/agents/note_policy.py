"""The LM-free agent's fixed memory policy on TextWorldExpress: a map note per room (exits seen,
moves made and where they led, items taken), read back to steer away from moves already made."""
from __future__ import annotations

import re
from typing import Sequence

from memarch.benchmarks.agents.memory_skill import NoteSession

ROOM = re.compile(r"You are in the ([a-z ]+?)\.", re.I)
EXIT = re.compile(r"To the (north|south|east|west) you see the ([a-z ]+?)\.", re.I)
TOOK = re.compile(r"^You take the ([a-z ]+?)\.", re.I)
MOVE_MADE = re.compile(r"\bmove (north|south|east|west)\b")


class NotePolicy:
    """Which memory actions the LM-free agent takes, step by step, under the session's scaffold.

    After each step it writes what the step showed: entering a room writes the room and its exits
    under the room's key; a move writes, under the room left, where it led; taking an item writes
    it. Before each step it reads the current room's note and returns a penalty for every move the
    note says was already made from here while another exit is untried. The writes go through
    `NoteSession.write`, so the vocabulary, schema and search-before-write are the scaffold's.

    Example::

        policy = NotePolicy(NoteSession(store, "textworld/ep1"))
        policy.observe("", first_observation)
        agent.act(admissible, history, guides, hints=policy.hints(admissible))
        policy.observe(action, observation)

    Args:
        session: the note actions of this episode.
        penalty: subtracted from the score of a move already made from the current room.
    """

    def __init__(self, session: NoteSession, penalty: float = 0.5):
        self.session = session
        self.penalty = penalty
        self.room: str | None = None
        self.kv = bool(session.scaffold.get("kv_schema", 1))

    def _fact(self, kv: str, free: str) -> str:
        return kv if self.kv else free

    def observe(self, action: str, observation: str) -> None:
        """Write what ``action`` and its ``observation`` showed."""
        seen = ROOM.search(observation)
        here = seen.group(1).lower() if seen else None
        if action.startswith("move ") and self.room and here:
            way = action.split(" ", 1)[1]
            self.session.write(self.room, self._fact(f"move {way}: {here}",
                                                     f"From the {self.room}, move {way} leads to the {here}."))
        took = TOOK.search(observation.strip())
        if took and self.room:
            self.session.write(self.room, self._fact(f"took: {took.group(1)}", f"Took the {took.group(1)} here."))
        if here:
            self.room = here
            lines = [self._fact(f"room: {here}", f"You are in the {here}.")]
            lines += [self._fact(f"exit {d.lower()}: {r.lower()}", f"To the {d.lower()} is the {r.lower()}.")
                      for d, r in EXIT.findall(observation)]
            self.session.write(here, "\n".join(lines))

    def hints(self, admissible: Sequence[str]) -> dict[str, float]:
        """Score adjustments from the current room's note: moves made from here, when another
        exit is still untried."""
        if self.room is None:
            return {}
        made = set(MOVE_MADE.findall(self.session.read(self.room)))
        moves = [a for a in admissible if a.startswith("move ")]
        if not made or all(a.split(" ", 1)[1] in made for a in moves):
            return {}
        return {a: -self.penalty for a in moves if a.split(" ", 1)[1] in made}
