"""What an ``--lm`` string means (none, the embedded model, a litellm model, a base URL), the
timeouts and retries every endpoint gets, and where DSPy's on-disk LM cache lives."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memarch.errors import MemarchError
from memarch.pipeline.cache import default_cache_dir

log = logging.getLogger(__name__)

SpecKind = Literal["none", "local", "model", "url"]

NONE_WORDS = ("", "none", "no", "off", "false")
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_RETRIES = 2
DEFAULT_MAX_TOKENS = 1024
LOCAL_MAX_TOKENS = 512  # >= 256: a weak model can pad constrained JSON until it is cut off


@dataclass(frozen=True)
class LMSpec:
    """A parsed ``--lm`` value.

    Example::

        >>> LMSpec.parse("http://localhost:11434/v1#llama3")
        LMSpec(kind='url', model='openai/llama3', api_base='http://localhost:11434/v1')

    Kinds: ``none`` (no LM: the LM-free space), ``local`` (the embedded SmolLM2 model), ``model``
    (a litellm string such as ``openai/gpt-4o-mini`` or ``ollama_chat/llama3``) and ``url`` (an
    OpenAI-compatible server — Ollama, vLLM, LM Studio, llama.cpp — by base URL; the model name
    comes after ``#`` or from ``--lm-model``).
    """

    kind: SpecKind
    model: str | None = None
    api_base: str | None = None

    @classmethod
    def parse(cls, spec: "str | LMSpec | None", model: str | None = None) -> "LMSpec":
        if isinstance(spec, LMSpec):
            return spec
        text = (spec or "").strip()
        if text.lower() in NONE_WORDS:
            return cls("none")
        if text.lower() == "local":
            return cls("local", model="local/smollm2-135m")
        if text.startswith(("http://", "https://")):
            base, _, name = text.partition("#")
            name = name or model
            if not name:
                raise MemarchError(f"--lm {text}: name the served model as URL#model or with --lm-model")
            # litellm's openai/ prefix means "OpenAI-compatible chat API at api_base".
            return cls("url", model=name if name.startswith("openai/") else f"openai/{name}",
                       api_base=base.rstrip("/"))
        if "/" not in text:
            raise MemarchError(f"--lm {text}: expected none, local, provider/model (e.g. openai/gpt-4o-mini) "
                               "or a base URL (e.g. http://localhost:11434/v1#llama3)")
        return cls("model", model=text)

    @property
    def enabled(self) -> bool:
        return self.kind != "none"

    def __str__(self) -> str:
        if self.kind == "none":
            return "none"
        if self.kind == "local":
            return "local"
        return f"{self.api_base}#{self.model}" if self.api_base else str(self.model)


def lm_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """The LM cache directory: the given one, ``$MEMARCH_LM_CACHE_DIR``, or ``<cache dir>/lm``."""
    if cache_dir:
        return Path(cache_dir)
    env = os.environ.get("MEMARCH_LM_CACHE_DIR")
    return Path(env) if env else default_cache_dir() / "lm"


def configure_lm_cache(cache_dir: str | Path | None = None, enabled: bool = True) -> Path:
    """Point DSPy's response cache at a project directory, so a rerun is cheap and deterministic."""
    import dspy

    path = lm_cache_dir(cache_dir)
    path.mkdir(parents=True, exist_ok=True)
    dspy.configure_cache(enable_disk_cache=enabled, enable_memory_cache=True, disk_cache_dir=str(path))
    log.info("LM cache: %s (disk %s)", path, "on" if enabled else "off")
    return path


def offline_model_metadata() -> None:
    """Use DSPy's bundled model metadata instead of fetching it (there may be no network)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")
