"""Recording a program's memory-module calls while it runs: each encoder call (the episode in,
the items written), each manager conflict decision and each retriever LM call (per read), as
fine-tuning `Pair`s. The hooks shadow
methods on the instances for the length of the run and change no behaviour."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarch.optimizers.finetune.labels import (CONFLICT_PREDICTOR, ENCODER_PREDICTORS, RETRIEVER_PREDICTORS,
                                                Pair, conflict_pair, encoder_pairs, has_signature,
                                                retriever_pair)

if TYPE_CHECKING:
    from memarch.pipeline.program import MemoryProgram


class CallRecorder:
    """Collects the `Pair`s of a program's encoder calls and manager conflict decisions.

    Example::

        with CallRecorder(program) as recorder:
            evaluate(program, "generated", split="search")
        recorder.pairs        # one per encoder call (or per item), conflict decision, retriever LM call
        recorder.unsupported  # module -> calls that made no signature call, e.g. {"retriever:cbr_rerank": 9}

    Args:
        program: the `MemoryProgram` whose modules are recorded.
    """

    def __init__(self, program: "MemoryProgram"):
        self.program = program
        self.pairs: list[Pair] = []
        self.unsupported: dict[str, int] = {}
        self._hooked: list[tuple[Any, str]] = []

    def __enter__(self) -> "CallRecorder":
        for enc in self.program.encoders:
            if enc.name in ENCODER_PREDICTORS and has_signature(enc, ENCODER_PREDICTORS[enc.name]):
                self._hook(enc, "encode", self._encoder_hook(enc))
            else:
                self._hook(enc, "encode", self._unsupported_hook(enc, f"encoder:{enc.name}"))
        manager = self.program.manager
        if has_signature(manager, CONFLICT_PREDICTOR):
            self._hook(manager, "resolve_conflict", self._conflict_hook(manager))
        retriever = self.program.retriever
        attribute = RETRIEVER_PREDICTORS.get(retriever.name)
        if attribute is not None and has_signature(retriever, attribute):
            asked: list[tuple[dict, Any]] = []
            predictor = getattr(retriever, attribute)
            self._hook(predictor, "forward", self._asked_hook(predictor, asked))
            self._hook(retriever, "retrieve", self._retrieve_hook(retriever, asked))
        return self

    def __exit__(self, *exc: object) -> None:
        for obj, name in self._hooked:
            obj.__dict__.pop(name, None)
        self._hooked.clear()

    def _hook(self, obj: Any, name: str, fn: Any) -> None:
        obj.__dict__[name] = fn
        self._hooked.append((obj, name))

    def _lm_answered(self, module: Any, fallbacks_before: int) -> bool:
        """The module's LM path answered (an LM is set, the module has one and did not fall back)."""
        return self.program.resources.lm is not None and getattr(module, "fallbacks", 0) == fallbacks_before

    def _encoder_hook(self, enc: Any):
        original = type(enc).encode.__get__(enc)

        def encode(episode):
            before = getattr(enc, "fallbacks", 0)
            items = original(episode)
            if enc.applies_to(episode):  # a gated episode was never a call of the module
                self.pairs.extend(encoder_pairs(enc, episode, items, lm=self._lm_answered(enc, before)))
            return items

        return encode

    def _unsupported_hook(self, enc: Any, module: str):
        original = type(enc).encode.__get__(enc)

        def encode(episode):
            self.unsupported[module] = self.unsupported.get(module, 0) + 1
            return original(episode)

        return encode

    @staticmethod
    def _asked_hook(predictor: Any, asked: list):
        original = type(predictor).forward.__get__(predictor)

        def forward(**inputs):
            prediction = original(**inputs)
            asked.append(({k: v for k, v in inputs.items() if k != "feedback"}, prediction))
            return prediction

        return forward

    def _retrieve_hook(self, retriever: Any, asked: list):
        original = type(retriever).retrieve.__get__(retriever)
        module = f"retriever:{retriever.name}"

        def retrieve(query, store, **kwargs):
            asked.clear()
            before = getattr(retriever, "fallbacks", 0)
            retrieval = original(query, store, **kwargs)
            if asked and self._lm_answered(retriever, before):  # the last answer is the one it used
                inputs, prediction = asked[-1]
                self.pairs.append(retriever_pair(retriever, inputs, prediction, query=retrieval.query.text,
                                                 read_ids=retrieval.ids(), namespace=retrieval.query.namespace))
            else:  # the LM-free path (or a fallback): no signature answer to learn from
                self.unsupported[module] = self.unsupported.get(module, 0) + 1
            return retrieval

        return retrieve

    def _conflict_hook(self, manager: Any):
        from memarch.modules.managers import describe

        original = type(manager).resolve_conflict.__get__(manager)

        def resolve_conflict(new, old, store, sim):
            existing, incoming = describe(old), describe(new)
            old_stored = store.get(old.id, old.namespace) is not None
            judge = getattr(manager, "_resolver", None)
            before = getattr(judge, "fallbacks", 0)
            asked = getattr(judge, "lm_requests", 0)
            logged = len(new.lineage)
            kept_new = original(new, old, store, sim)
            old_kept = old.active and (store.get(old.id, old.namespace) is not None or not old_stored)
            decision = "keep_old" if not kept_new else ("keep_both" if old_kept else "keep_new")
            reason = next((e.reason for e in reversed(new.lineage[logged:]) if e.actor == manager.actor), "")
            lm = getattr(judge, "lm_requests", 0) > asked and getattr(judge, "fallbacks", 0) == before
            kept = {"keep_new": [new.id], "keep_old": [old.id], "keep_both": [new.id, old.id]}[decision]
            self.pairs.append(conflict_pair(manager, existing, incoming, decision, reason, kept=kept,
                                            namespace=new.namespace, episode_id=new.episode_id, lm=lm))
            return kept_new

        return resolve_conflict
