"""The `summary` encoder: one summary per session — written by the LM, or extractive without one
(the session's most central sentences by TF-IDF cosine centrality, within a word budget)."""
from __future__ import annotations

import math
from collections import Counter
from typing import Any

import dspy
import numpy as np

from memarch.pipeline.dates import format_date
from memarch.modules.encoders._conversation_lm import ask_session, known_turn_ids
from memarch.modules.encoders._conversation_text import Sentence, content_words, session_anchor, session_sentences
from memarch.modules.encoders._conversation_encoder import ConversationEncoder
from memarch.modules.signatures.conversation import SummarizeSession
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources


def central_sentences(sentences: list[Sentence], max_words: int, *, min_content: int = 3,
                      redundancy: float = 0.5) -> list[Sentence]:
    """Extractive summary: sentences ranked by degree centrality (sum of TF-IDF cosine similarity
    to the other sentences of the session), picked greedily within ``max_words``, skipping near
    duplicates of a picked one; returned in dialogue order."""
    bags = [content_words(s.text) for s in sentences]
    # Questions ask rather than tell: they are never part of the summary.
    keep = [i for i, b in enumerate(bags) if len(b) >= min_content and not sentences[i].text.endswith("?")]
    if not keep:
        return []
    vocab: dict[str, int] = {}
    for i in keep:
        for w in bags[i]:
            vocab.setdefault(w, len(vocab))
    df = Counter(w for i in keep for w in set(bags[i]))
    n = len(keep)
    matrix = np.zeros((n, len(vocab)))
    for row, i in enumerate(keep):
        for w, tf in Counter(bags[i]).items():
            matrix[row, vocab[w]] = (1 + math.log(tf)) * math.log((1 + n) / (1 + df[w]) + 1)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    sim = matrix @ matrix.T
    np.fill_diagonal(sim, 0.0)
    centrality = sim.sum(axis=1)
    picked: list[int] = []
    used = 0
    for row in np.argsort(-centrality, kind="stable"):
        length = len(sentences[keep[row]].text.split())
        if used + length > max_words:
            continue
        if any(sim[row, p] > redundancy for p in picked):
            continue
        picked.append(int(row))
        used += length
    return sorted((sentences[keep[r]] for r in picked), key=lambda s: s.position)


@register("encoder", "summary", families="conversation", uses_lm=True, rank=2,
          description="one session summary (LM) or its most central sentences (LM-free)")
class SummaryEncoder(ConversationEncoder):
    """One item per session summarising it, citing the turns it draws on.

    Example::

        [item] = SummaryEncoder(resources, max_words=80).encode(session)

    Args:
        max_words: word budget of the summary (default 80).
    """

    def __init__(self, resources: Resources | None = None, *, max_words: int = 80, **config: Any):
        if max_words < 10:
            raise ValueError("max_words must be >= 10")
        super().__init__(resources, max_words=max_words, **config)
        self.max_words = max_words
        self.summarize = dspy.Predict(SummarizeSession)

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        picked = central_sentences(session_sentences(episode), self.max_words)
        if not picked:
            return []
        body = " ".join(f"{s.speaker}: {s.text}" for s in picked)
        turn_ids = list(dict.fromkeys(s.turn_id for s in picked))
        return [self._item(episode, body, turn_ids, method="extractive")]

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def check(pred: dspy.Prediction) -> None:
            if not pred.summary or not pred.summary.strip():
                raise ValueError("the summary is empty")
            if len(pred.summary.split()) > 2 * self.max_words:
                raise ValueError(f"the summary is longer than {self.max_words} words")
            known_turn_ids(episode, pred.key_turn_ids, "the summary")

        pred = ask_session(self.summarize, self.resources, episode, check, max_words=self.max_words)
        turn_ids = known_turn_ids(episode, pred.key_turn_ids, "the summary")
        return [self._item(episode, pred.summary.strip(), turn_ids, method="lm")]

    def _item(self, episode: Episode, body: str, turn_ids: list[str], method: str) -> MemoryItem:
        day = session_anchor(episode)
        speakers = " and ".join(dict.fromkeys(t.speaker for t in episode.turns))
        when = f" on {format_date(day)}" if day else ""
        text = f"Session{when} ({speakers}): {body}"
        return MemoryItem(text=text, kind=self.name, id=make_item_id(self.name, episode.id, text),
                          fields={"summary": body, "method": method, "speakers": speakers},
                          episode_id=episode.id, source_ids=turn_ids,
                          event_time=day.isoformat() if day else None)
