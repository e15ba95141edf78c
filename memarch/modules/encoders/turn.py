"""The `turn` encoder: every dialogue turn kept verbatim with its speaker and absolute date, plus
optional overlapping n-turn chunks (the best LM-free unit on LoCoMo, see ANCHORS section 6)."""
from __future__ import annotations

import datetime as dt
from typing import Any

import dspy

from memarch.modules.encoders._conversation_lm import ask_session, known_turn_ids
from memarch.modules.encoders._conversation_text import render_turn, session_anchor, turn_anchor
from memarch.modules.encoders._conversation_encoder import ConversationEncoder
from memarch.modules.signatures.conversation import RewriteTurns
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.knobs import Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources


@register("encoder", "turn", families="conversation", uses_lm=True, rank=1,
          description="each turn verbatim with speaker and absolute date (+ optional n-turn chunks)",
          knobs=(Knob("window", "int", 1, 8, default=1, description="turns per chunk (1: turns only, no chunks)"),
                 Knob("overlap", "float", 0.0, 0.875, default=0.5,
                      description="share of a chunk repeated by the next (stride = window x (1 - overlap))")))
class TurnEncoder(ConversationEncoder):
    """Each turn verbatim: "Caroline (7 May 2023): I went to the support group.".

    With an LM each turn also gets a standalone rewrite (names for pronouns, absolute dates).

    Example::

        items = TurnEncoder(resources, window=4).encode(session)  # turns + 4-turn chunks

    Args:
        window: also emit chunks of ``window`` consecutive turns when > 1 (default 1: turns only).
        stride: turns between chunk starts (default ``max(1, int(window x (1 - overlap)))``).
        overlap: share of a chunk the next one repeats when ``stride`` is not given (default 0.5:
            stride ``window // 2``, chunks overlap by half).
        captions: keep image captions (LoCoMo ``blip_caption``) in the text (default True).
    """

    def __init__(self, resources: Resources | None = None, *, window: int = 1, stride: int | None = None,
                 overlap: float = 0.5, captions: bool = True, **config: Any):
        window = int(window)
        if window < 1 or (stride is not None and stride < 1) or not 0.0 <= overlap < 1.0:
            raise ValueError("window and stride must be >= 1 and overlap in [0, 1)")
        # overlap joins the config (and so the encoder cache key) only when set, so the cache
        # entries written before the knob existed stay valid.
        extra = {"overlap": float(overlap)} if overlap != 0.5 else {}
        super().__init__(resources, window=window, stride=stride, captions=captions, **extra, **config)
        self.window, self.captions = window, captions
        self.stride = int(stride) if stride else max(1, int(window * (1.0 - float(overlap))))
        self.rewrite = dspy.Predict(RewriteTurns)

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        return self._items(episode, rewrites={})

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def check(pred: dspy.Prediction) -> None:
            known_turn_ids(episode, [r.turn_id for r in pred.rewrites], "a rewrite")
            if any(not r.standalone.strip() for r in pred.rewrites):
                raise ValueError("a rewrite is empty")

        pred = ask_session(self.rewrite, self.resources, episode, check)
        return self._items(episode, rewrites={r.turn_id.strip("[] "): r.standalone.strip() for r in pred.rewrites})

    def _items(self, episode: Episode, rewrites: dict[str, str]) -> list[MemoryItem]:
        session = session_anchor(episode)
        lines: list[str] = []
        items: list[MemoryItem] = []
        for turn in episode.turns:
            day = turn_anchor(turn, session)
            line = render_turn(turn, day, captions=self.captions)
            standalone = rewrites.get(turn.id)
            text = f"{line} (i.e. {standalone})" if standalone and standalone != turn.text.strip() else line
            lines.append(line)
            fields = {"speaker": turn.speaker, "turn_text": turn.text, "unit": "turn"}
            if standalone:
                fields["standalone"] = standalone
            items.append(MemoryItem(
                text=text, kind=self.name, id=make_item_id(self.name, episode.id, text, turn.id),
                fields=fields, episode_id=episode.id, source_ids=[turn.id],
                event_time=day.isoformat() if day else None))
        if self.window > 1:
            items.extend(self._chunks(episode, lines, session))
        return items

    def _chunks(self, episode: Episode, lines: list[str], session: dt.date | None) -> list[MemoryItem]:
        turns = episode.turns
        if len(turns) <= 1:
            return []
        starts = list(range(0, max(1, len(turns) - self.window + 1), self.stride))
        if starts[-1] + self.window < len(turns):  # the tail of the session gets a chunk too
            starts.append(len(turns) - self.window)
        out = []
        for start in starts:
            span = turns[start:start + self.window]
            if len(span) < 2:
                continue
            text = "\n".join(lines[start:start + self.window])
            ids = [t.id for t in span]
            out.append(MemoryItem(
                text=text, kind=self.name, id=make_item_id(self.name, episode.id, text, *ids),
                fields={"unit": "chunk", "speakers": sorted({t.speaker for t in span})},
                episode_id=episode.id, source_ids=ids,
                event_time=session.isoformat() if session else None))
        return out
