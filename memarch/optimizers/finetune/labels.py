"""Fine-tuning pairs from module calls: what a memory module's DSPy Signature would have been asked
(its input fields) and what the module answered (its output fields), rebuilt from the items it
wrote or the decision it took. An LM-free module's output stands as a teacher label."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from memarch.pipeline.episodes import Episode
    from memarch.pipeline.items import MemoryItem

# The predictor attribute of each encoder that has an LM path (its one Signature).
ENCODER_PREDICTORS = {"turn": "rewrite", "summary": "summarize", "fact": "extract", "entity": "profile",
                      "event": "extract", "tip": "extract", "insight": "diagnose", "trajectory": "compress",
                      "workflow": "induce", "shortcut": "write_macro"}
CONFLICT_PREDICTOR = "resolve"  # a manager's ResolveConflict judge
RETRIEVER_PREDICTORS = {"hyde": "write_passage", "cbr_rerank": "rerank"}  # called per read, with an LM only
_ENTITY_KINDS = {"speaker": "person", "named": "other"}  # the LM-free encoder's kinds, in the Literal's terms


class NoLabel(ValueError):
    """The module's output cannot be stated in its Signature's output fields."""


@dataclass
class Pair:
    """One module call as a fine-tuning pair, before the provenance filter.

    Example::

        pair = Pair("encoder:fact", encoder.extract, {"session_date": "8 May 2023", ...},
                    {"facts": [...]}, credited=["fact-1a2b"], episode_id="conv-1:s1")

    Args:
        module: ``encoder:<name>`` or ``manager:<name>``.
        predictor: the module's ``dspy.Predict`` (its signature, instructions and demos make the prompt).
        inputs: the signature's input fields as the module would fill them.
        outputs: the signature's output fields; None when ``no_label`` says why there is none.
        credited: ids of the memory items whose retrieval for a query credits this call.
        read: for a retriever's call, (query text, ids the read returned): the query it served.
        episode_id: the episode the call was about (None for a manager decision without one).
        namespace: the memory namespace written.
        label: ``lm`` (the module's LM answered) or ``lm-free`` (a teacher label from the LM-free path).
        no_label: why no output could be stated (e.g. the LM-free turn encoder does not rewrite).
    """

    module: str
    predictor: Any
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None
    credited: list[str] = field(default_factory=list)
    episode_id: str | None = None
    namespace: str = "default"
    label: str = "lm-free"
    no_label: str | None = None
    read: tuple[str, list[str]] | None = None

    @property
    def signature_name(self) -> str:
        return self.predictor.signature.__name__


# -- encoder outputs -> signature outputs -----------------------------------------------------------
def _turn(items: list["MemoryItem"]) -> dict[str, Any]:
    turns = [it for it in items if it.fields.get("unit") == "turn"]
    if not any("standalone" in it.fields for it in turns):
        raise NoLabel("the LM-free turn encoder stores turns verbatim (no rewrite to learn)")
    return {"rewrites": [{"turn_id": it.source_ids[0], "standalone": it.fields.get("standalone")
                          or it.fields.get("turn_text", it.text)} for it in turns]}


def _summary(items: list["MemoryItem"]) -> dict[str, Any]:
    it = items[0]
    return {"summary": it.fields["summary"], "key_turn_ids": list(it.source_ids)}


def _facts(items: list["MemoryItem"]) -> dict[str, Any]:
    return {"facts": [{"subject": it.fields["subject"], "attribute": it.fields["attribute"],
                       "value": it.fields["value"], "turn_ids": list(it.source_ids)} for it in items]}


def _profiles(items: list["MemoryItem"]) -> dict[str, Any]:
    return {"profiles": [{"name": it.fields["name"],
                          "kind": _ENTITY_KINDS.get(it.fields.get("entity_kind"), it.fields.get("entity_kind")),
                          "notes": list(it.fields["notes"]), "turn_ids": list(it.source_ids)} for it in items]}


def _events(items: list["MemoryItem"]) -> dict[str, Any]:
    if any(it.fields.get("date") is None for it in items):
        raise NoLabel("an event without a date (the signature asks for an ISO date)")
    # "session" (no time expression: dated by the session) is a day in the signature's terms.
    return {"events": [{"description": it.fields["description"], "date": it.fields["date"],
                        "granularity": "day" if it.fields["granularity"] == "session" else it.fields["granularity"],
                        "time_expression": it.fields.get("time_expression") or "",
                        "turn_ids": list(it.source_ids)} for it in items]}


_TIP_FIELDS = ("topic", "principle", "micro_example", "counterfactual", "use_when", "avoid_when")


def _tips(items: list["MemoryItem"]) -> dict[str, Any]:
    return {"tips": [{k: str(it.fields[k]) for k in _TIP_FIELDS} for it in items
                     if all(k in it.fields for k in _TIP_FIELDS)]}


def _insight(it: "MemoryItem") -> dict[str, Any]:
    if not it.source_ids:
        raise NoLabel("an insight without the failing step")
    return {"insight": {k: it.fields[k] for k in ("failure_pattern", "root_cause", "corrective_strategy",
                                                  "detection_signal")} | {"failing_step_id": it.source_ids[0]}}


def _trajectory(it: "MemoryItem") -> dict[str, Any]:
    return {"compressed": {"steps": list(it.fields["steps"]), "kept_step_ids": list(it.source_ids),
                           "key_decision": it.fields["key_decision"], "anchor": it.fields["anchor"]}}


def _workflow(it: "MemoryItem") -> dict[str, Any]:
    return {"workflow": {"task_template": it.fields["task_template"], "steps": list(it.fields["steps"])}}


def _described(schema: Any) -> dict[str, str]:
    """A JSON schema's properties back as the signature's ``{name: "type: meaning"}``."""
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    return {n: str(p.get("description") or p.get("type", "string")) if isinstance(p, dict) else str(p)
            for n, p in props.items()}


def _shortcut(it: "MemoryItem") -> dict[str, Any]:
    f = it.fields
    invocation = f.get("test_invocation") or {}
    return {"shortcut": {"name": f["name"], "parameters": list(f["parameters"]),
                         "input_schema": _described(f.get("input_schema")),
                         "output_schema": _described(f.get("output_schema")), "steps": list(f["steps"]),
                         "test_invocation": {k: str(v) for k, v in (invocation.get("arguments") or {}).items()}}}


# A list-valued signature answers once per call; a single-object one once per item it describes.
PER_CALL: dict[str, Callable[[list["MemoryItem"]], dict[str, Any]]] = {
    "turn": _turn, "summary": _summary, "fact": _facts, "entity": _profiles, "event": _events, "tip": _tips}
PER_ITEM: dict[str, Callable[["MemoryItem"], dict[str, Any]]] = {
    "insight": _insight, "trajectory": _trajectory, "workflow": _workflow, "shortcut": _shortcut}


def encoder_inputs(encoder: Any, episode: "Episode") -> dict[str, Any]:
    """The input fields the encoder's LM path fills for ``episode`` (first attempt: no feedback)."""
    from memarch.modules.encoders import session_inputs

    if episode.turns:
        values: dict[str, Any] = session_inputs(episode, iso_date=encoder.name == "event")
        if hasattr(encoder, "max_words"):
            values["max_words"] = encoder.max_words
    else:
        values = {"task": episode.task, "outcome": episode.outcome, "trajectory": encoder.trajectory_text(episode)}
    values["feedback"] = ""
    wanted = getattr(encoder, ENCODER_PREDICTORS[encoder.name]).signature.input_fields
    return {k: v for k, v in values.items() if k in wanted}


def encoder_pairs(encoder: Any, episode: "Episode", items: list["MemoryItem"], *, lm: bool) -> list[Pair]:
    """The pairs of one ``encoder.encode(episode)`` call that wrote ``items``."""
    name = encoder.name
    predictor = getattr(encoder, ENCODER_PREDICTORS[name])
    base = {"module": f"encoder:{name}", "predictor": predictor, "inputs": encoder_inputs(encoder, episode),
            "episode_id": episode.id, "namespace": episode.namespace, "label": "lm" if lm else "lm-free"}
    if not items:
        return [Pair(**base, outputs=None, no_label="wrote no items")]
    calls = [(items, PER_CALL[name])] if name in PER_CALL else [([it], PER_ITEM[name]) for it in items]
    out = []
    for group, build in calls:
        credited = [it.id for it in group]
        try:
            outputs = build(group) if name in PER_CALL else build(group[0])
        except NoLabel as exc:
            out.append(Pair(**base, outputs=None, credited=credited, no_label=str(exc)))
            continue
        except (KeyError, IndexError, TypeError) as exc:  # an item without the fields its path writes
            out.append(Pair(**base, outputs=None, credited=credited,
                            no_label=f"item fields do not give the signature's outputs ({type(exc).__name__})"))
            continue
        out.append(Pair(**base, outputs=outputs, credited=credited))
    return out


def conflict_pair(manager: Any, existing: str, new: str, decision: str, reason: str, *, kept: list[str],
                  namespace: str, episode_id: str | None, lm: bool) -> Pair:
    """A manager's ResolveConflict decision (``keep_new`` / ``keep_old`` / ``keep_both``) as a pair;
    ``kept`` are the ids of the memories the decision kept (they earn or lose it credit)."""
    predictor = getattr(manager, CONFLICT_PREDICTOR)
    return Pair(f"manager:{manager.name}", predictor,
                {"existing_memory": existing, "new_memory": new, "feedback": ""},
                {"decision": decision, "reason": reason or f"rule: {decision}"}, credited=list(kept),
                episode_id=episode_id, namespace=namespace, label="lm" if lm else "lm-free")


def retriever_pair(retriever: Any, inputs: dict[str, Any], prediction: Any, *, query: str,
                   read_ids: list[str], namespace: str) -> Pair:
    """A retriever's LM call for one read (first-try form: no feedback), credited to that read."""
    predictor = getattr(retriever, RETRIEVER_PREDICTORS[retriever.name])
    outputs = {name: prediction.get(name) for name in predictor.signature.output_fields}
    return Pair(f"retriever:{retriever.name}", predictor, {**inputs, "feedback": ""}, outputs,
                namespace=namespace, label="lm", read=(query, list(read_ids)))


def has_signature(module: Any, attribute: str) -> bool:
    """Whether ``module`` carries a ``dspy.Predict`` under ``attribute``."""
    import dspy

    return isinstance(getattr(module, attribute, None), dspy.Predict)


__all__ = ["CONFLICT_PREDICTOR", "ENCODER_PREDICTORS", "RETRIEVER_PREDICTORS", "NoLabel", "Pair", "conflict_pair",
           "encoder_inputs", "encoder_pairs", "has_signature", "retriever_pair"]
