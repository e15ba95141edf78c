"""Human-designed memory systems as points of the space (ANCHORS section 1), per family, plus the
no-memory baseline: the hand-designed competition every search result is reported beside.

Manager operations map to the closest manager: forget / none -> lightweight; update, merge,
reflect, delete -> json_full; validate -> tool_manager; merge+evolve on a graph -> graph_consolidate.
"No retriever" maps to hybrid. The conversation family has its own encoders; the experience
encoders map to their closest conversational role: trajectory -> turn, insight -> summary,
tip -> fact, workflow -> event, shortcut -> entity.
"""
from __future__ import annotations

import logging

from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)

NO_MEMORY = "no-memory"

# name -> (encoders, store, retriever, manager) in the experience family's vocabulary.
EXPERIENCE_PRESETS: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "generative_agents": (("trajectory", "insight"), "vector", "cbr_rerank", "json_full"),
    "memgpt": (("trajectory",), "vector", "hybrid", "lightweight"),
    "mem0": (("tip",), "vector", "hybrid", "json_full"),
    "a_mem": (("trajectory",), "graph", "graph", "graph_consolidate"),
    "zep": (("trajectory",), "llm_graph", "graph", "graph_consolidate"),
    "memorybank": (("trajectory",), "vector", "hybrid", "lightweight"),
    "reflexion": (("insight",), "json", "hybrid", "lightweight"),
    "expel": (("tip", "insight"), "hybrid", "contrastive", "json_full"),
    "voyager": (("shortcut",), "vector", "hybrid", "tool_manager"),
    "awm": (("workflow",), "json", "hybrid", "json_full"),
    "agent_kb": (("tip", "workflow"), "hybrid", "cbr_rerank", "tool_manager"),
    "dynamic_cheatsheet": (("tip", "shortcut"), "json", "hybrid", "tool_manager"),
    "memp": (("trajectory", "workflow"), "vector", "hybrid", "json_full"),
}

CONVERSATION_ENCODER = {"trajectory": "turn", "insight": "summary", "tip": "fact",
                        "workflow": "event", "shortcut": "entity"}


def preset_architectures(family: str) -> dict[str, Architecture]:
    """Every preset of ``family`` (valid or not in the current registry)."""
    out = {}
    for name, (enc, s, r, m) in EXPERIENCE_PRESETS.items():
        if family == "conversation":
            enc = tuple(dict.fromkeys(CONVERSATION_ENCODER[e] for e in enc))
        out[name] = Architecture(enc, s, r, m)
    return out


def presets_for(space: ArchitectureSpace) -> dict[str, Architecture]:
    """The presets that are valid in ``space`` (an LM-free space drops the ones needing an LM)."""
    out = {}
    for name, arch in preset_architectures(space.family).items():
        v = space.violations(arch)
        if v:
            logger.info("preset %s is not in this %s space: %s", name, space.family, v[0])
        else:
            out[name] = arch.canonical()
    return out


def warm_start_architectures(space: ArchitectureSpace, seed: int | None, k: int) -> list[Architecture]:
    """Round 0 of every strategy: ``k`` distinct presets valid in ``space``, chosen by ``seed``
    (random valid architectures fill up when the space has fewer presets). Every strategy run with
    the same seed starts from the same round 0, so strategies are compared on equal terms.

    Example::

        warm_start_architectures(ArchitectureSpace("conversation", lm_available=False), 0, 3)
    """
    import random

    uniq = list({a.key(): a for a in presets_for(space).values()}.values())
    rng = random.Random(seed)
    rng.shuffle(uniq)
    chosen = uniq[:k]
    if len(chosen) < k:
        keys = {a.key() for a in chosen}
        pool = [a for a in space.enumerate() if a.key() not in keys]
        chosen += rng.sample(pool, min(k - len(chosen), len(pool)))
    return chosen


def get_preset(name: str, space: ArchitectureSpace) -> Architecture:
    key = name.lower().replace("-", "_")
    presets = preset_architectures(space.family)
    if key not in presets:
        raise MemarchError(f"unknown preset {name!r}; known: {', '.join(presets)}")
    return space.validate(presets[key]).canonical()
