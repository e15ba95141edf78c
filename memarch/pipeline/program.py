"""`MemoryProgram`: an architecture made runnable — encoders write episodes into the store
through the manager, the retriever reads scored items and a context back. A `dspy.Module`,
saved and loaded as JSON (architecture, module instructions and few-shot demos, the reader's
prompt when one was optimised, how it was scored, optionally the memory bank)."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import dspy

from memarch.pipeline.module_attributes import lean_getattribute
from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Query
from memarch.pipeline.evaluation_record import EvaluationRecord
from memarch.pipeline.files import atomic_write_json, read_json
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.prompt_state import apply_prompt
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import DEFAULT_TOP_K, Retrieval
from memarch.pipeline.space import ArchitectureSpace

FORMAT = "memarch.program/1"
log = logging.getLogger(__name__)


class MemoryProgram(dspy.Module):
    """A memory architecture, built and ready to write and read.

    Example::

        arch = Architecture(("trajectory",), "vector", "hybrid", "lightweight")
        program = MemoryProgram(arch)
        program.write(episode)
        program.read("how do I open the fridge?").context

    Args:
        architecture: an `Architecture` (or its dict form); validated against the registry.
        resources: embedder, LM and caches (default: bundled embedder, no LM).
        top_k: items per read (`DEFAULT_TOP_K`: 4, as in AutoMem); the architecture's
            ``retrieve.top_k`` knob wins.
        context_budget: context budget in words (None: unlimited).
        config: per-module keyword arguments, ``{"store": {...}, "retriever": {...},
            "manager": {...}, "encoder:tip": {...}}``; the architecture's ``params`` (module knobs)
            are applied over it; ``{"manager": {"memory_budget": N}}`` caps every namespace at N
            words of active memory after each write.

    ``evaluation`` (an `EvaluationRecord`, set by compile) says how the program's reported scores
    were measured; ``memarch evaluate --program FILE`` reproduces them from it. ``reader_prompts``
    (``{"answer": {"instructions", "demos"}}``, set by prompt optimisation) is the prompt of the
    `MemoryReader` the scores were read with (see `memarch.optimizers.prompts.optimize`).
    """

    # dspy's check of direct `forward` calls for `forward` only (pipeline/module_attributes.py)
    __getattribute__ = lean_getattribute

    def __init__(self, architecture: Architecture | dict, *, resources: Resources | None = None,
                 top_k: int = DEFAULT_TOP_K, context_budget: int | None = None, config: dict[str, Any] | None = None):
        super().__init__()
        arch = architecture if isinstance(architecture, Architecture) else Architecture.from_dict(architecture)
        self.resources = resources or Resources()
        family = arch.family
        if family is None:
            space = ArchitectureSpace("experience", lm_available=self.resources.lm_available)
        else:
            space = ArchitectureSpace(family, lm_available=self.resources.lm_available)
        space.validate(arch)
        self._space = space
        self.architecture = arch.canonical()
        self.family = family
        # The architecture's knob wins over the argument: it is what the search chose.
        self.top_k = int(arch.param_dict.get("retrieve.top_k", top_k))
        self.context_budget = context_budget
        self.module_config = dict(config or {})
        cfg = with_params(self.module_config, arch, space)
        self.encoders = [REGISTRY.get("encoder", e).cls(self.resources, **cfg.get(f"encoder:{e}", {}))
                         for e in self.architecture.encode]
        self.store = REGISTRY.get("store", arch.store).cls(self.resources, **cfg.get("store", {}))
        self.retriever = REGISTRY.get("retriever", arch.retrieve).cls(self.resources, **cfg.get("retriever", {}))
        self.manager = REGISTRY.get("manager", arch.manage).cls(self.resources, **cfg.get("manager", {}))
        self.episodes_written: dict[str, int] = {}
        self.evaluation: EvaluationRecord | None = None
        self.reader_prompts: dict[str, dict[str, Any]] | None = None
        # knob -> the default it had when the program was saved, where today's differs (kept)
        self.pinned_defaults: dict[str, Any] = {}

    # -- write / read ----------------------------------------------------------------------------
    def encode(self, episode: Episode) -> list[MemoryItem]:
        """What the encoders would write for ``episode`` (before the manager sees it)."""
        items: list[MemoryItem] = []
        for enc in self.encoders:
            items.extend(enc.encode(episode))
        return items

    def write(self, episode: Episode, *, items: list[MemoryItem] | None = None) -> list[MemoryItem]:
        """Encode ``episode``, let the manager curate, store what survives; returns the stored items.
        ``items``: what `encode` returned for it, when the caller encoded it already (a bulk write
        encodes and embeds a whole batch first)."""
        items = self.encode(episode) if items is None else items
        kept = self.manager.on_insert(items, self.store) if items else []
        if kept:
            self.store.add(kept)
        self.manager.after_episode(episode, self.store)
        ns = episode.namespace
        self.episodes_written[ns] = self.episodes_written.get(ns, 0) + 1
        if self.manager.period and self.episodes_written[ns] % self.manager.period == 0:
            self.manager.periodic(self.store, ns)
        # The memory budget is a hard limit after every write, whatever the passes above added.
        for written in dict.fromkeys([ns, *(it.namespace for it in kept)]):
            self.manager.enforce_budget(self.store, written)
        return kept

    def write_many(self, episodes: list[Episode]) -> int:
        return sum(len(self.write(ep)) for ep in episodes)

    def read(self, query: Query | str, *, top_k: int | None = None,
             context_budget: int | None = None) -> Retrieval:
        if isinstance(query, str):
            query = Query(text=query)
        return self.retriever.retrieve(query, self.store, top_k=top_k or self.top_k,
                                       context_budget=context_budget if context_budget is not None else self.context_budget)

    def feedback(self, retrieval: Retrieval, success: bool | None) -> None:
        """Tell the manager whether what was read helped (boost / penalise, edge weights)."""
        self.manager.feedback(retrieval, success, self.store)

    def forward(self, query: str, episode_id: str | None = None, namespace: str = "default") -> dspy.Prediction:
        r = self.read(Query(text=query, episode_id=episode_id, namespace=namespace))
        return dspy.Prediction(context=r.context, items=r.items, retrieval=r)

    # -- persistence -----------------------------------------------------------------------------
    def instructions(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for role, mod in self._modules():
            ins = {n: p.signature.instructions for n, p in mod.named_predictors()}
            if ins:
                out[role] = ins
        return out

    def demos(self) -> dict[str, dict[str, list[dict]]]:
        """Few-shot demos per module and predictor (only predictors that have some)."""
        from memarch.pipeline.prompt_state import prompt_of

        out: dict[str, dict[str, list[dict]]] = {}
        for role, mod in self._modules():
            demos = {n: prompt_of(p)["demos"] for n, p in mod.named_predictors() if p.demos}
            if demos:
                out[role] = demos
        return out

    def _modules(self):
        for enc in self.encoders:
            yield f"encoder:{enc.name}", enc
        yield "store", self.store
        yield "retriever", self.retriever
        yield "manager", self.manager

    def to_dict(self, *, include_memory: bool = True) -> dict:
        return {
            "format": FORMAT,
            "architecture": self.architecture.to_dict(),
            "top_k": self.top_k,
            "context_budget": self.context_budget,
            "config": self.module_config,
            # What the knobs the architecture leaves at their defaults meant when it was saved: a
            # later release that changes a default does not change this program (`from_dict`).
            "knob_defaults": knob_defaults(self.architecture, self._space, self.module_config),
            "embedder": self.resources.embedder.model,
            "instructions": self.instructions(),
            # Only when set, so files of programs that were never prompt-optimised are unchanged.
            **({"demos": demos} if (demos := self.demos()) else {}),
            **({"reader": self.reader_prompts} if self.reader_prompts else {}),
            "episodes_written": self.episodes_written,
            "memory": self._memory_state() if include_memory else None,
            "evaluation": self.evaluation.to_dict() if self.evaluation is not None else None,
        }

    def _memory_state(self) -> dict:
        with tempfile.TemporaryDirectory() as tmp:
            self.store.save(tmp)
            return read_json(Path(tmp) / "store.json")

    def save(self, path: str | Path, *, include_memory: bool = True) -> Path:
        """Save as one JSON file (atomic). Never pickle; nothing executable is stored."""
        path = Path(path)
        atomic_write_json(path, self.to_dict(include_memory=include_memory))
        return path

    @classmethod
    def from_dict(cls, data: Any, *, resources: Resources | None = None, source: str = "program") -> "MemoryProgram":
        if not isinstance(data, dict) or data.get("format") != FORMAT or "architecture" not in data:
            raise DataError(f"{source}: not a saved memarch program (expected format {FORMAT!r})")
        saved_embedder = data.get("embedder")
        from memarch.pipeline.embed import DEFAULT_MODEL, Embedder

        if resources is None and saved_embedder and saved_embedder != DEFAULT_MODEL:
            # its memory was embedded with it ("hash", "e5-small", a local model directory)
            resources = Resources(embedder=Embedder(str(saved_embedder)))
        # Files saved before the record existed have none; a malformed one is one DataError line.
        evaluation = None if data.get("evaluation") is None \
            else EvaluationRecord.from_dict(data["evaluation"], source=source)
        try:
            budget = saved_context_budget(data)
            if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
                raise ValueError(f"context_budget must be an integer or null, not {budget!r}")
            arch, config = Architecture.from_dict(data["architecture"]), data.get("config") or {}
            top_k = int(data.get("top_k", DEFAULT_TOP_K))
            program = cls(arch, resources=resources, top_k=top_k, context_budget=budget, config=config)
            pinned = _pinned_defaults(program, data.get("knob_defaults"), source)
            if pinned:  # built again with the saved defaults as explicit config
                program = cls(arch, resources=resources, top_k=top_k, context_budget=budget,
                              config=_with_knob_values(config, arch, program._space, pinned))
                program.pinned_defaults = pinned
            for role, mod in program._modules():
                for pname, text in (data.get("instructions") or {}).get(role, {}).items():
                    for n, p in mod.named_predictors():
                        if n == pname:
                            p.signature = p.signature.with_instructions(text)
            for role, mod in program._modules():
                for pname, demos in (data.get("demos") or {}).get(role, {}).items():
                    for n, p in mod.named_predictors():
                        if n == pname:
                            apply_prompt(p, {"demos": demos})
            reader = data.get("reader")
            if reader is not None and not (isinstance(reader, dict)
                                           and all(isinstance(v, dict) for v in reader.values())):
                raise ValueError("reader prompts must be an object of predictor name -> prompt")
            program.reader_prompts = reader or None
            if data.get("memory"):
                program.store.load_state(data["memory"])
            program.episodes_written = dict(data.get("episodes_written") or {})
        except MemarchError as exc:
            raise DataError(f"{source}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{source}: corrupt saved program ({exc.__class__.__name__}: {exc})") from None
        program.evaluation = evaluation
        return program

    @classmethod
    def load(cls, path: str | Path, *, resources: Resources | None = None) -> "MemoryProgram":
        return cls.from_dict(read_json(path, what="saved memarch program"), resources=resources, source=str(path))


def saved_context_budget(data: dict[str, Any]) -> int | None:
    """The context budget a saved program reads with (``budget_tokens``: the key of earlier releases)."""
    return data["context_budget"] if "context_budget" in data else data.get("budget_tokens")


def knob_defaults(arch: Architecture, space: ArchitectureSpace, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Today's default (for the architecture's family) of every knob that neither the architecture
    nor the per-module ``config`` sets."""
    from memarch.pipeline.knobs import PROGRAM_KNOBS

    chosen, config = arch.param_dict, config or {}
    return {key: knob.default_for(arch.family) for key, (role, module, knob) in space.knobs_of(arch).items()
            if key not in chosen and (role, knob.name) not in PROGRAM_KNOBS
            and knob.name not in config.get(_slot(role, module), {})}


def _slot(role: str, module: str) -> str:
    """A module's key in a program's per-module config."""
    return f"encoder:{module}" if role == "encoder" else role


def _pinned_defaults(program: MemoryProgram, saved: Any, source: str) -> dict[str, Any]:
    """The saved knob defaults that differ from today's (each kept, one warning line); a saved
    default of a knob that no longer exists cannot be kept and is named in a warning too."""
    if saved is None:  # saved before knob defaults were recorded
        return {}
    if not isinstance(saved, dict):
        raise ValueError(f"knob_defaults must be an object of knob -> value, not {type(saved).__name__}")
    today = knob_defaults(program.architecture, program._space, program.module_config)
    pinned = {k: v for k, v in saved.items() if k in today and v != today[k]}
    knobs = program._space.knobs_of(program.architecture)
    gone = sorted(k for k in saved if k not in knobs)
    if pinned:
        log.warning("%s: saved when %s; the saved values are kept", source,
                    ", ".join(f"{k} defaulted to {v!r} (today {today[k]!r})" for k, v in sorted(pinned.items())))
    if gone:
        log.warning("%s: no longer knobs here, so today's behaviour applies: %s", source, ", ".join(gone))
    return pinned


def _with_knob_values(config: dict[str, Any], arch: Architecture, space: ArchitectureSpace,
                      values: dict[str, Any]) -> dict[str, Any]:
    """``config`` with these knob values set in their modules' slots (as `with_params` would)."""
    knobs = space.knobs_of(arch)
    out = {slot: dict(v) for slot, v in config.items()}
    for key, value in values.items():
        role, module, knob = knobs[key]
        out.setdefault(_slot(role, module), {})[knob.name] = knob.coerce(value)
    return out


def with_params(config: dict[str, Any], arch: Architecture, space: ArchitectureSpace) -> dict[str, Any]:
    """Per-module config with the architecture's knob values applied over it (``retrieve.top_k``
    is the program's, not the retriever's)."""
    if not arch.params:
        return config
    from memarch.pipeline.knobs import PROGRAM_KNOBS

    knobs = space.knobs_of(arch)
    return _with_knob_values(config, arch, space, {key: value for key, value in arch.params
                                                   if (knobs[key][0], knobs[key][2].name) not in PROGRAM_KNOBS})
