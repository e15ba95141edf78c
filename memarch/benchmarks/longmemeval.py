"""LongMemEval (Wu et al., ICLR 2025) read from its published files (``longmemeval_s.json``,
``_m``, ``_oracle``, plain or ``.json.gz``): each instance is one dialogue (its haystack of dated
user-assistant sessions) and one question asked after the last session.

The layout, as the official README (github.com/xiaowu0162/LongMemEval, "Dataset Format") documents
it: a JSON list of instances with ``question_id``, ``question_type`` (single-session-user,
single-session-assistant, single-session-preference, temporal-reasoning, knowledge-update,
multi-session; a ``question_id`` ending in ``_abs`` is an abstention question), ``question``,
``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions``
(sessions of ``{"role", "content"}`` turns; evidence turns carry ``"has_answer": true``) and
``answer_session_ids`` (the evidence sessions). Dates read "2023/05/20 (Sat) 02:21". Its retrieval
code (src/retrieval/run_retrieval.py) numbers a session's turns from 1 and takes as gold the USER
turns with ``has_answer`` in sessions named ``answer_...`` (turn level) and those sessions (session
level); its metrics (src/evaluation/print_qa_metrics.py) count an ``_abs`` question under its type
and report abstention apart. The loader keeps both golds, the vendors' (``answer_session_ids``) and
the LM-free rule of each question in ``Question.metadata`` (`parse_instance`); the official metrics
are `memarch.benchmarks.metrics.longmemeval_official`, the LM-free score `span_or_evidence`."""
from __future__ import annotations

import logging
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from memarch.benchmarks.base import Benchmark, Dialogue, Question, data_root
from memarch.benchmarks.metrics.span_or_evidence import lm_free_rule
from memarch.errors import DataError
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.json_list import read_json_list

log = logging.getLogger(__name__)

QUESTION_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                  "multi-session", "knowledge-update", "temporal-reasoning")
VARIANTS = ("s", "m", "oracle")
ABSTENTION_SUFFIX = "_abs"
# "2023/05/20 (Sat) 02:21" as published; the weekday is redundant and not checked.
_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?")
# A published file's name says its variant: longmemeval_s.json, longmemeval_oracle_cleaned.json.gz, ...
_FILE = re.compile(r"longmemeval_(s|m|oracle)(?:_cleaned)?\.json(?:\.gz)?")


class _Malformed(Exception):
    """A field of one instance is malformed: ``field`` names it, the message says what was expected."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def parse_date(text: Any) -> str | None:
    """``"2023/05/20 (Sat) 02:21"`` -> ``"2023-05-20T02:21"``; ``"2023/05/20"`` or an ISO date ->
    ``"2023-05-20"`` (None when unparseable)."""
    s = " ".join(str(text).split())
    m = _DATE.fullmatch(s)
    try:
        if m:
            y, mo, d, hh, mm = m.groups()
            when = datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0))
            return when.strftime("%Y-%m-%dT%H:%M" if hh is not None else "%Y-%m-%d")
        when = datetime.fromisoformat(s)
    except ValueError:
        return None
    return when.strftime("%Y-%m-%dT%H:%M" if "T" in s or " " in s else "%Y-%m-%d")


def file_variant(path: Path) -> str | None:
    """The variant a published file's name says (``longmemeval_oracle.json.gz`` -> ``oracle``)."""
    m = _FILE.fullmatch(path.name)
    return m.group(1) if m else None


def resolve_path(data: str | os.PathLike | None, variant: str | None = None) -> tuple[Path, str]:
    """The instance file and its variant: ``data`` as a file (its variant from its name, else
    ``variant``, else ``s``), or a directory holding ``longmemeval_<variant>.json`` (or its
    ``_cleaned`` release, either as ``.json.gz`` too, or any of them under ``longmemeval/``);
    default ``$MEMARCH_DATA_DIR/longmemeval``, variant ``s``."""
    if variant is not None and variant not in VARIANTS:
        raise DataError(f"longmemeval: variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    path = data_root(data, "longmemeval", "--data PATH to longmemeval_s.json(.gz) or its directory")
    if not path.is_dir():
        named = file_variant(path)
        if variant is not None and named is not None and named != variant:
            raise DataError(f"{path}: the {named} variant's file, but variant={variant} was asked "
                            "(pass the directory with variant=..., or the file alone)")
        return path, named or variant or "s"
    variant = variant or "s"
    names = [f"longmemeval_{variant}{cleaned}.json{gz}" for cleaned in ("", "_cleaned") for gz in ("", ".gz")]
    for d in (path, path / "longmemeval"):
        for name in names:
            if (d / name).is_file():
                return d / name, variant
    raise DataError(f"{path}: no {', '.join(names)} in it or in its longmemeval/ subdirectory "
                    "(pass the instance file itself, or variant=s|m|oracle)")


def _text(inst: dict, field: str, *, numbers: bool = False) -> str:
    value = inst.get(field)
    if isinstance(value, str) or (numbers and isinstance(value, (int, float)) and not isinstance(value, bool)):
        return str(value)  # a few published answers are counts (JSON numbers)
    raise _Malformed(field, "missing" if value is None else f"expected a string, got {type(value).__name__}")


def _list(inst: dict, field: str, length: int | None = None, *, required: bool = True) -> list:
    value = inst.get(field)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise _Malformed(field, "missing" if value is None else f"expected a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise _Malformed(field, f"has {len(value)} entries but haystack_sessions has {length}")
    return value


def _turns(raw: Any, field: str, label: str, day: str | None) -> tuple[list[Turn], list[str]]:
    """A session's turns (ids ``<label>:<n>``, n from 1 as in the official retrieval code) and the
    ids of its ``has_answer`` turns."""
    if not isinstance(raw, list):
        raise _Malformed(field, f"expected a list of turns, got {type(raw).__name__}")
    turns, marked = [], []
    for n, t in enumerate(raw, 1):
        if not isinstance(t, dict) or not isinstance(t.get("role"), str) or not isinstance(t.get("content"), str):
            raise _Malformed(f"{field}[{n - 1}]", "expected an object with string 'role' and 'content'")
        turns.append(Turn(id=f"{label}:{n}", speaker=t["role"], text=t["content"], date=day))
        if t.get("has_answer") is True:
            marked.append(turns[-1].id)
    return turns, marked


def _golds(sessions: list[Episode], published: list[str], answer_ids: list[str], marked: set[str]) -> dict[str, Any]:
    """A question's golds as memarch ids: run_retrieval.py's (the user turns with ``has_answer`` in
    sessions named ``answer...``, and those sessions), whether any user turn of the haystack is
    marked (the strict average's rule), and the vendors' (``answer_session_ids``)."""
    turn_gold: list[str] = []
    session_gold: list[str] = []
    user_marked, episode_of = False, {}
    for session, pid in zip(sessions, published):
        episode_of.setdefault(pid, session.id)
        hits = [t.id for t in session.turns if t.speaker == "user" and t.id in marked]
        user_marked = user_marked or bool(hits)
        if "answer" in pid and hits:
            turn_gold += hits
            session_gold.append(session.id)
    return {"official_turn_gold": turn_gold, "official_session_gold": session_gold, "user_gold": user_marked,
            "answer_sessions": [episode_of[a] for a in answer_ids if a in episode_of]}


def parse_instance(inst: Any) -> Dialogue:
    """One instance -> a dialogue (namespace: the question id) with its one question.

    Sessions are written in time order (the oracle file is not sorted). Turn and episode ids are
    positional (``S3:5``: session 3 in time order, turn 5), never the published session ids: those
    name evidence sessions ``answer_...`` and an LM encoder shown turn ids would read the gold.

    The question's metadata, beside its type and the published ids: ``official_turn_gold`` and
    ``official_session_gold`` (run_retrieval.py's gold, memarch ids), ``official_scored`` (in the
    official strict average: not ``_abs`` and a user turn marked), ``answer_sessions`` (the
    vendors' gold), and for an answerable question ``lm_free_rule`` (`lm_free_rule` of its type
    and answer) with ``lm_free_evidence``: the official turn gold, else the marked turns of any
    role (single-session-assistant), else every turn of the answer sessions.
    """
    if not isinstance(inst, dict):
        raise _Malformed("(instance)", f"expected an object, got {type(inst).__name__}")
    qid = _text(inst, "question_id")
    if not qid.strip():
        raise _Malformed("question_id", "empty (it names the dialogue)")
    qtype = _text(inst, "question_type")
    question, answer = _text(inst, "question"), _text(inst, "answer", numbers=True)
    asked = parse_date(_text(inst, "question_date"))
    if asked is None:
        raise _Malformed("question_date", f"unparseable date {inst['question_date']!r} (expected e.g. "
                                          "'2023/05/20 (Sat) 02:21')")
    raw_sessions = _list(inst, "haystack_sessions")
    ids = [str(s) for s in _list(inst, "haystack_session_ids", len(raw_sessions))]
    dates = _list(inst, "haystack_dates", len(raw_sessions))
    answer_ids = [str(s) for s in _list(inst, "answer_session_ids", required=False)]
    parsed = []
    for j, raw in enumerate(dates):
        when = parse_date(raw)
        if when is None:
            raise _Malformed(f"haystack_dates[{j}]",
                             f"unparseable date {raw!r} (expected e.g. '2023/05/20 (Sat) 02:21')")
        parsed.append(when)
    order = sorted(range(len(raw_sessions)), key=lambda j: (parsed[j], j))
    sessions, marked, by_session = [], [], {}
    for k, j in enumerate(order, 1):
        turns, hits = _turns(raw_sessions[j], f"haystack_sessions[{j}]", f"S{k}", parsed[j][:10])
        sessions.append(Episode(id=f"{qid}/S{k}", turns=turns, time=parsed[j], namespace=qid,
                                metadata={"date_time": dates[j]}))
        marked += hits
        by_session.setdefault(ids[j], []).extend(t.id for t in turns)
    abstention = qid.endswith(ABSTENTION_SUFFIX)
    meta: dict[str, Any] = {"question_id": qid, "question_type": qtype, "abstention": abstention,
                            "answer_session_ids": answer_ids,
                            "answer_sessions_missing": [s for s in answer_ids if s not in by_session]}
    meta.update(_golds(sessions, [ids[j] for j in order], answer_ids, set(marked)))
    meta["official_scored"] = not abstention and meta.pop("user_gold")
    if abstention:
        # No gold location (the official retrieval metrics skip these): scored only with an LM.
        evidence, meta["abstention_answer"], answer_or_none = [], answer, None
    else:
        evidence = marked or [t for s in answer_ids for t in by_session.get(s, [])]
        answer_or_none = answer
        meta["lm_free_rule"] = lm_free_rule(qtype, inst["answer"])
        meta["lm_free_evidence"] = meta["official_turn_gold"] or evidence
    meta["evidence_level"] = "turn" if marked and evidence else "session" if evidence else "none"
    q = Question(id=f"{qid}/q", text=question, answer=answer_or_none, evidence=evidence, category=qtype,
                 time=asked, ask_after=len(sessions) - 1, metadata=meta)
    return Dialogue(namespace=qid, sessions=sessions, questions=[q],
                    metadata={"session_ids": [ids[j] for j in order], "reordered": order != sorted(order)})


class LongMemEval(Benchmark):
    """LongMemEval's published instance files as a stream benchmark, one dialogue per question.

    Example::

        bench = LongMemEval("../shared/data/longmemeval", variant="oracle", instances=5)
        bench.stats()["categories"]   # {'knowledge-update': 1, 'multi-session': 2, ...}

    Args:
        data: an instance file (``.json`` or ``.json.gz``), or a directory holding
            ``longmemeval_<variant>.json(.gz)`` (default ``$MEMARCH_DATA_DIR/longmemeval``).
        variant: which file of a directory: ``s`` (the default, ~48 sessions per question), ``m``
            (~500) or ``oracle`` (evidence sessions only); a file's name says its own.
        instances: read only the first N instances (quick runs; each one is a whole haystack): the
            rest of the file is never parsed.
        split_options: ``seed``, ``split_by`` (default ``instance``: each instance's split a hash
            of its question id, the same whichever instances are loaded), ``fractions``.

    Declares ``lm_free_metric = "span_or_evidence"`` (an LM-free evaluation's default: the answer
    span only where the answer is a short stated span, else the evidence turns in the context;
    `memarch.benchmarks.metrics.span_or_evidence`) and ``official_report = "longmemeval"`` (the
    official retrieval metrics and per-type table beside memarch's;
    `memarch.benchmarks.metrics.longmemeval_official`).
    """

    name = "longmemeval"
    categories = QUESTION_TYPES
    lm_free_metric = "span_or_evidence"
    official_report = "longmemeval"

    def __init__(self, data: str | os.PathLike | None = None, *, variant: str | None = None,
                 instances: int | None = None, **split_options: Any):
        if instances is not None and int(instances) < 1:
            raise ValueError(f"instances must be a positive integer, not {instances}")
        path, variant = resolve_path(data, variant)
        raw = read_json_list(path, limit=None if instances is None else int(instances),
                             what="LongMemEval file (a JSON list of instances, e.g. longmemeval_s.json)")
        if not isinstance(raw, list) or not raw:
            got = "an empty list" if isinstance(raw, list) else type(raw).__name__
            raise DataError(f"{path}: not a LongMemEval file (expected a JSON list of instances, got {got})")
        dialogues: list[Dialogue] = []
        first: dict[str, int] = {}
        for i, inst in enumerate(raw):
            qid = inst.get("question_id") if isinstance(inst, dict) else None
            where = f"{path}: instance {i}" + (f" ({qid})" if isinstance(qid, str) else "")
            try:
                dialogues.append(parse_instance(inst))
            except _Malformed as exc:
                raise DataError(f"{where}: field {exc.field}: {exc}") from None
            if qid in first:
                raise DataError(f"{where}: field question_id: duplicate of instance {first[qid]}")
            first[qid] = i
        self.path = path
        self.variant = variant
        self.knobs = {"variant": variant, **({} if instances is None else {"instances": int(instances)})}
        self._report(dialogues)
        super().__init__(dialogues, **{"split_by": "instance", **split_options})

    def _report(self, dialogues: list[Dialogue]) -> None:
        """Counts of what the loader changed or could not use: nothing is dropped silently."""
        qs = [q for d in dialogues for q in d.questions]
        self.load_notes = {
            "reordered": sum(1 for d in dialogues if d.metadata["reordered"]),
            "abstention": sum(1 for q in qs if q.metadata["abstention"]),
            "session_level_evidence": sum(1 for q in qs if q.metadata["evidence_level"] == "session"),
            "no_evidence": sum(1 for q in qs if q.metadata["evidence_level"] == "none" and q.answerable),
            "answer_sessions_missing": sum(1 for q in qs if q.metadata["answer_sessions_missing"]),
        }
        if self.load_notes["no_evidence"] or self.load_notes["answer_sessions_missing"]:
            log.warning("longmemeval %s: %d answerable question(s) without gold evidence, %d naming "
                        "answer sessions absent from their haystack", self.path,
                        self.load_notes["no_evidence"], self.load_notes["answer_sessions_missing"])
