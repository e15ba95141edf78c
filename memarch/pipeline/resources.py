"""`Resources`: what every module is built with — the embedder, the LM (or None), the cache dir —
and the in-memory memos its modules keep of texts (`texts`) and of encoded episodes (`encoded`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memarch.pipeline.cache import BoundedMemo, DiskCache, default_cache_dir
from memarch.pipeline.embed import DEFAULT_MODEL, Embedder
from memarch.pipeline.text_caches import TextCaches


ENCODED_EPISODES = 8192  # encoded episodes kept decoded in memory (`Resources.encoded`)


@dataclass
class Resources:
    """Shared by the modules of a program (and by the programs of a search: its trials share the
    memos, so a warm trial finds the texts of the last one worked on).

    Args:
        embedder: text embedder (default: bundled all-MiniLM-L6-v2 with the shared disk cache).
        lm: a ``dspy.LM`` for the task role (LM encoders, llm_graph, hyde, cbr_rerank, LM managers),
            or None for the LM-free paths.
        cache_dir: root of the on-disk caches (embeddings, encoder outputs).
        use_encoder_cache: cache encoder outputs on disk (keyed by encoder, config, instructions,
            episode content and LM identity).
    """

    embedder: Embedder | None = None
    lm: Any = None
    cache_dir: Path | None = None
    use_encoder_cache: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cache_dir = Path(self.cache_dir) if self.cache_dir else default_cache_dir()
        if self.embedder is None:
            self.embedder = Embedder(DEFAULT_MODEL, cache_dir=self.cache_dir)
        self._encoder_cache: DiskCache | None = None
        # Encoder cache hits decoded into items once per process: episode key -> the items
        # (`Encoder.encode` clones them; ~1 KB an item, LoCoMo's LM-free encoders ~20k items).
        self.encoded = BoundedMemo(ENCODED_EPISODES)
        # This owner's memos of texts (terms, stems, sentences, context lines...): `TextCaches`.
        self.texts = TextCaches()

    def forget_texts(self) -> None:
        """Empty what this `Resources` keeps of texts in memory — its memos and decoded episodes —
        and nothing of anyone else's (the embedder's vectors are the embedder's: `Embedder.forget`)."""
        self.texts.forget()
        self.encoded.clear()

    @property
    def lm_available(self) -> bool:
        return self.lm is not None

    @property
    def lm_id(self) -> str:
        if self.lm is None:
            return "none"
        return str(getattr(self.lm, "model", type(self.lm).__name__))

    @property
    def encoder_cache(self) -> DiskCache | None:
        if not self.use_encoder_cache:
            return None
        if self._encoder_cache is None:
            self._encoder_cache = DiskCache(Path(self.cache_dir) / "encoders.sqlite", table="enc")
        return self._encoder_cache

    def lm_context(self, **kwargs: Any):
        """``dspy.context`` with this LM and the JSON adapter (robust structured output)."""
        import dspy

        return dspy.context(lm=self.lm, adapter=kwargs.pop("adapter", dspy.JSONAdapter()), **kwargs)
