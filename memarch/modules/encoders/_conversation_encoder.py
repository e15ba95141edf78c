"""`ConversationEncoder`: the base of the conversation family's encoders (a session in, items out)."""
from __future__ import annotations

from memarch.modules.encoders.base import Encoder
from memarch.pipeline.episodes import Episode


class ConversationEncoder(Encoder):
    """An encoder of dialogue sessions; an agent trajectory has nothing to say to it."""

    def applies_to(self, episode: Episode) -> bool:
        return bool(episode.turns)
