"""Numeric moves of the guided search in the full space: a textual gradient on a knob read from the
per-query traces ("retrieve.top_k 4 -> 8: 31% of the retrieve failures had the gold item at rank
5-8"; "retrieve.pack items -> sentences: the gold was ranked but cut by the budget"; "retrieve.fusion
rrf -> zscore: dense and lexical disagreed on the gold"; "retrieve.time_weight 0 -> 1: the failures
asked about a time"; "retrieve.recency_weight 0 -> 0.5: the failures asked about the present";
"retrieve.stem 0 -> 1: a question word matched the gold only as a stem"; "retrieve.dense_weight 1 -> 2:
the dense side had the gold, the lexical side not"; and the module move "retrieve: hybrid -> session"
of session_move.py), and, without such evidence, one coordinate step of a knob of the leader. A step the ledger refuted is
never repeated from another parent, and the knob's next step goes the other way first."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarch.optimizers.samplers.guided.edits import describe
from memarch.optimizers.samplers.guided.moves import NumericMove, backed
from memarch.optimizers.samplers.guided.session_move import session_move, with_session_reading
from memarch.optimizers.search.proposal import Proposal
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace
    from memarch.pipeline.knobs import Knob

def _knob(space: "ParamSpace", arch: Architecture, key: str) -> tuple[str, "Knob"] | None:
    """(optuna name, Knob) of ``key`` on the modules ``arch`` chooses."""
    params = space.to_params(arch)
    return next(((name, knob) for name, k, knob in space.chosen_knobs(params) if k == key), None)


def top_k_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.top_k t -> 2t`` when at least `MIN_SHARE` of the retrieve failures had their gold
    at rank t+1..2t of a deeper read, in reads that ``top_k`` (not the context budget) cut short.

    Reads the ``gold_rank`` / ``read_items`` / ``top_k`` evidence the evaluation records for
    retrieve failures (`memarch.benchmarks.evaluation.attribution.gold_rank`); None without it.
    """
    arch = result.architecture
    if arch is None or space.mode != "full":
        return None
    found = _knob(space, arch, "retrieve.top_k")
    if found is None:
        return None
    _, knob = found
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_rank" in o.evidence]
    if not failures:
        return None
    top_k = int(failures[0].evidence["top_k"])
    after = min(int(knob.high), 2 * top_k)
    if after <= top_k:
        return None
    hits = [o for o in failures if o.evidence["read_items"] >= top_k and o.evidence["gold_rank"] is not None
            and top_k < o.evidence["gold_rank"] <= after]
    return backed("retrieve.top_k", top_k, after, hits, failures, f"retrieve.top_k {top_k} -> {after}",
                   f"had the gold item at rank {top_k + 1}-{after}")


def pack_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.pack 0 -> 1`` (whole items -> best sentences), or once it packs sentences
    ``retrieve.pack_compact 0 -> 1`` (shorter headers, no repeats, one lead per line), when at least
    `MIN_SHARE` of the retrieve failures had their gold ranked within ``top_k`` but below the items
    that filled the context: ranked, then cut by the word budget (issue 23: on LoCoMo most lost
    evidence is).

    Reads the same ``gold_rank`` / ``read_items`` / ``top_k`` evidence as `top_k_move`; None when
    the retriever already packs compact sentences, or another packer, or the evidence is missing.
    """
    arch = result.architecture
    if arch is None or space.mode != "full":
        return None
    packer = arch.param_dict.get("retrieve.pack", 0)
    key, move = (("retrieve.pack", "retrieve.pack items -> sentences") if packer == 0 else
                 ("retrieve.pack_compact", "retrieve.pack_compact 0 -> 1 (compact lines)"))
    if (packer not in (0, 1) or arch.param_dict.get("retrieve.pack_compact", 0)
            or _knob(space, arch, key) is None):
        return None
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_rank" in o.evidence]
    if not failures:
        return None
    hits = [o for o in failures if o.evidence["gold_rank"] is not None
            and o.evidence["read_items"] < o.evidence["gold_rank"] <= o.evidence["top_k"]]
    return backed(key, 0, 1, hits, failures, move,
                   "had the gold item ranked within top_k but cut by the context budget")


def fusion_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.fusion 0 -> 1`` (reciprocal rank -> weighted z-scores) when at least `MIN_SHARE`
    of the retrieve failures had the two sides disagree on the gold: one side ranked it within
    ``top_k`` and the other did not (z-scores let the confident side's lead count, where RRF averages
    ranks). Reads ``gold_dense_rank`` / ``gold_lexical_rank`` of the deeper read (`gold_rank`); None
    when the retriever does not fuse by RRF or the evidence is missing."""
    arch = result.architecture
    if arch is None or space.mode != "full" or arch.param_dict.get("retrieve.fusion", 0):
        return None
    if _knob(space, arch, "retrieve.fusion") is None:
        return None
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_dense_rank" in o.evidence]
    if not failures:
        return None

    def within(rank: Any, top_k: int) -> bool:
        return rank is not None and rank <= top_k

    hits = [o for o in failures if within(o.evidence["gold_dense_rank"], o.evidence["top_k"])
            != within(o.evidence["gold_lexical_rank"], o.evidence["top_k"])]
    return backed("retrieve.fusion", 0, 1, hits, failures, "retrieve.fusion rrf -> zscore",
                   "had one side rank the gold within top_k and the other not")


def _question_move(result: TrialResult, space: "ParamSpace", key: str, after: float, asks: Any,
                   why: str) -> NumericMove | None:
    """``key 0 -> after`` (a query-aware side switched on) when at least `MIN_SHARE` of the retrieve
    failures asked a question ``asks(text)`` recognises; None when the side is on already or the
    leader's retriever has no such knob."""
    arch = result.architecture
    if arch is None or space.mode != "full" or arch.param_dict.get(key, 0) or _knob(space, arch, key) is None:
        return None
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"]
    hits = [o for o in failures if asks(str(o.evidence.get("question", "")))]
    return backed(key, 0, after, hits, failures, f"{key} 0 -> {after:g}", why)


def time_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.time_weight 0 -> 1`` (the time-aware side on) when at least `MIN_SHARE` of the
    retrieve failures were questions about a time: a when-question ("When did ...") or one that
    names a period ("in May 2023", "last week"). Reads the question text of the failures; None when
    the retriever is time-aware already."""
    from memarch.modules.retrievers import asks_about_time

    return _question_move(result, space, "retrieve.time_weight", 1.0, asks_about_time,
                          "asked about a time (when, or a named period)")


def recency_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.recency_weight 0 -> 0.5`` (the recency prior on) when at least `MIN_SHARE` of the
    retrieve failures asked about the present ("my current score", "do I still", "so far"): where
    a later mention updates an earlier one (LongMemEval's knowledge updates), the newest should win.
    Reads the question text of the failures; None when the retriever has the prior on already."""
    from memarch.modules.retrievers import asks_about_present

    return _question_move(result, space, "retrieve.recency_weight", 0.5, asks_about_present,
                          "asked about the present (current, still, so far, latest)")


DENSE_REACH = 3  # a side "has" the gold when it ranks it this high


def dense_weight_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.dense_weight w -> 2w`` when at least `MIN_SHARE` of the retrieve failures had the
    dense side rank the gold in its top `DENSE_REACH` and the lexical side not (a request that
    shares no words with what it recalls: "suggest a hotel" against "I prefer boutique places";
    LongMemEval's preferences), or ``w -> w/2`` when the lexical side had it and the dense side not,
    whichever more failures back. Reads ``gold_dense_rank`` / ``gold_lexical_rank`` of the deeper
    read (`gold_rank`); None without that evidence or at the knob's bound."""
    arch = result.architecture
    if arch is None or space.mode != "full":
        return None
    found = _knob(space, arch, "retrieve.dense_weight")
    if found is None:
        return None
    knob = found[1]
    weight = float(arch.param_dict.get("retrieve.dense_weight", knob.default))
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_dense_rank" in o.evidence]

    def has(rank: Any) -> bool:
        return rank is not None and rank <= DENSE_REACH

    dense = [o for o in failures if has(o.evidence["gold_dense_rank"]) and not has(o.evidence["gold_lexical_rank"])]
    lexical = [o for o in failures if has(o.evidence["gold_lexical_rank"]) and not has(o.evidence["gold_dense_rank"])]
    up, down = knob.coerce(min(float(knob.high), 2 * weight)), knob.coerce(max(float(knob.low), weight / 2))
    hits, after, (side, other) = ((dense, up, ("dense", "lexical")) if len(dense) >= len(lexical)
                                  else (lexical, down, ("lexical", "dense")))
    if after == weight:
        return None
    return backed("retrieve.dense_weight", weight, after, hits, failures, f"retrieve.dense_weight {weight:g} -> {after:g}",
                  f"had the {side} side rank the gold in its top {DENSE_REACH} and the {other} side not")


def stem_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve.stem 0 -> 1`` (BM25 over Snowball stems) when at least `MIN_SHARE` of the
    retrieve failures had a question word that matches the gold item only in another form ("paintings"
    against "painted": a BM25 over plain terms scores nothing for it). Reads ``gold_stem_only`` of the
    deeper read (`gold_rank`); None when the leader's retriever has no ``stem`` knob or stems already."""
    arch = result.architecture
    if arch is None or space.mode != "full" or arch.param_dict.get("retrieve.stem", 0):
        return None
    if _knob(space, arch, "retrieve.stem") is None:
        return None
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_stem_only" in o.evidence]
    hits = [o for o in failures if o.evidence["gold_stem_only"] > 0]
    return backed("retrieve.stem", 0, 1, hits, failures, "retrieve.stem 0 -> 1",
                  "had a question word matching the gold item only as a stem (another word form)")


def with_knob(space: "ParamSpace", arch: Architecture, key: str, value: float | int) -> Architecture | None:
    """``arch`` with one knob set (dropped from params when it is the default); None if not its knob."""
    found = _knob(space, arch, key)
    if found is None:
        return None
    params = space.to_params(arch)
    params[found[0]] = found[1].coerce(value)
    return space.from_params(params).canonical()


def numeric_proposals(space: "ParamSpace", leader: TrialResult, blocked: set[str], *, primary: str = "",
                      inert: set[str] = frozenset(), inert_knobs: set[str] = frozenset(),
                      dead_ends: set[str] = frozenset()) -> tuple[NumericMove | None, list[Proposal]]:
    """The round's numeric proposal (at most one) for the leader: the trace-backed move when there
    is one (a knob's, or ``retrieve -> session``), else one untried coordinate step of a knob
    (modules the gradient points at first, then the shared levers still off, then the other shared
    knobs; knobs of inert modules, and ``inert_knobs`` whose moves changed nothing measured, never).
    ``blocked``: keys already tried, running or queued. ``dead_ends``: the ledger's edits that hurt
    (or changed nothing): never proposed again from another parent, and a knob steps away from a
    change of it that hurt first (`_away_from_harm`)."""
    arch = leader.architecture
    if arch is None or space.mode != "full":
        return None, []
    parent = arch.key()
    move = None
    for found in (top_k_move(leader, space), pack_move(leader, space), fusion_move(leader, space),
                  time_move(leader, space), recency_move(leader, space), session_move(leader, space),
                  stem_move(leader, space), dense_weight_move(leader, space)):
        move = move or found
        if found is None:
            continue
        head = f"{found.key}: {found.before} -> {found.after}"
        if found.key == "retrieve":  # a module move: the edit text also names any knob it drops
            cand = with_session_reading(space, arch)
            edit = describe(arch, cand) if cand is not None else head
        else:
            cand, edit = with_knob(space, arch, found.key, found.after), head
        if cand is not None and cand.key() not in blocked and not {head, edit} & dead_ends:
            return found, [Proposal(cand, role="exploit", edit=edit, parent=parent, reason=found.text)]
    params = space.to_params(arch)
    chosen = [(key, knob) for _, key, knob in space.chosen_knobs(params)
              if key.split(".", 1)[0].split(":", 1)[0] not in inert and key not in inert_knobs
              and not _idle_packing_knob(key, arch, space)]
    # The gradient's module first; then the shared levers still switched off (packing, time-aware,
    # recency, entity-keyed: a group knob whose default 0 is "off"), then the other shared ones.
    current_of = {key: arch.param_dict.get(key, space.default(key, knob)) for key, knob in chosen}
    chosen.sort(key=lambda kk: (not kk[0].startswith(primary) if primary else False,
                                not (kk[1].group and kk[1].default == 0 and current_of[kk[0]] == 0),
                                not kk[1].group))
    for key, knob in chosen:
        current = current_of[key]
        for value in _away_from_harm(key, current, space.knob_steps(key, knob, current), dead_ends):
            edit = f"{key}: {current} -> {value}"
            cand = with_knob(space, arch, key, value)
            if cand is not None and cand.key() not in blocked and edit not in dead_ends:
                return move, [Proposal(cand, role="explore", edit=edit, parent=parent,
                                       reason="one coordinate step of a knob")]
    return move, []


def _away_from_harm(key: str, current: Any, values: list, dead_ends: set[str]) -> list:
    """A knob's steps from ``current``, the direction of no step that hurt first: when the ledger
    refuted ``key: current -> v`` (from any parent) the steps on v's side come last, so the search
    rolls back towards the other side instead of repeating the change that hurt."""
    hurt = [_number(e.rsplit(" -> ", 1)[1]) for e in dead_ends if e.startswith(f"{key}: {current} -> ")]
    hurt = [v for v in hurt if v is not None]
    if not hurt or not isinstance(current, (int, float)):
        return values

    def towards_harm(value: Any) -> bool:
        return any((h - current) * (value - current) > 0 for h in hurt)
    return sorted(values, key=towards_harm)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _idle_packing_knob(key: str, arch: Any, space: "ParamSpace") -> bool:
    """A packer's knob while the retriever uses another packer (`pack_window` unless ``pack`` is 2,
    the sentence packer's pool and weights unless it is 1): a step there changes nothing
    (`memarch/modules/retrievers/_packing.py`), so it is never proposed. ``pack_order``
    and ``pack_compact`` apply to every packer, so they are never idle."""
    if not key.startswith("retrieve.pack_") or key in ("retrieve.pack_order", "retrieve.pack_compact"):
        return False
    packer = int(arch.param_dict.get("retrieve.pack", 0) or 0)
    return packer != (2 if key == "retrieve.pack_window" else 1)
