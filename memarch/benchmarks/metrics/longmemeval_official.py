"""LongMemEval's official retrieval metrics — ``recall_any@k``, ``recall_all@k``, ``ndcg_any@k`` and
the session metrics from a turn ranking — exactly as ``src/retrieval/eval_utils.py`` of
github.com/xiaowu0162/LongMemEval (MIT, Copyright (c) 2024 Di Wu; file at 6a92d1a) defines them,
ported from indices into a corpus to ids, with the gold and the averages of its
``src/retrieval/run_retrieval.py`` (b60a5b7), and the per-type bookkeeping of
``src/evaluation/print_qa_metrics.py``.

The definitions (tests compare them with the verbatim code, to 1e-12):
- recall_any@k: 1 iff a gold id is among the first k; recall_all@k: 1 iff every gold id is (so 1
  for a question without gold); the paper's "Recall" is recall_all.
- ndcg_any@k: binary relevance over every gold id; DCG = rel[1] + sum over ranks r >= 2 of
  rel[r] / log2(r) (not the usual 1 / log2(r + 1): one gold at rank 2 scores 1.0); the ideal DCG
  sorts the whole corpus's relevances, i.e. min(#gold in the corpus, k) ones.
- turn2session: a turn ranking scored at session level: every id loses its ``_<turn>`` suffix and k
  grows until the first k' turns cover k distinct sessions. run_retrieval names the user turns of an
  evidence session that are not gold ``noans_...``, so only gold turns keep their session's id:
  they alone are relevant, and a session with both kinds counts twice among the k.
- Gold (run_retrieval): turn level, the USER turns with ``has_answer`` inside sessions whose
  published id contains ``answer``; session level, those sessions holding such a turn (not
  ``answer_session_ids``). The loader keeps both in ``Question.metadata`` (``official_turn_gold``,
  ``official_session_gold``) as memarch ids.
- Averages: ``strict`` (the harness's): questions without ``_abs`` that have a user-side gold turn
  (418 of the 498 _S instances here; 419 of the published 500); ``non_abs``: every non-abstention
  question, the ones without user gold scoring recall_any 0, recall_all 1, ndcg 0 (468; 470);
  ``vendor``: session level with gold = ``answer_session_ids`` over every question, abstention
  included (the rule of the vendors' LM-free tables).

memarch's run (what differs from the official protocol, docs/benchmarks.md "LongMemEval"): the
ranked turn ids the items of a read cover (`ranked_turns`) — the items the read packed into its
context, so at most ``top_k`` and cut by the context budget: ``@30`` and ``@50`` (and, with long
turns, ``@10``) mean something only with a read that deep (``--top-k 50 --context-budget 100000``).
Sessions are ranked at their best item (`ranked_sessions`), not as one user-turn document. The
official keys are user turns only; in memarch's run assistant turns (and the items of any encoder)
take ranks too. The levels: ``turn`` and ``turn2session`` score the run as read (assistant turns
occupy ranks and are never gold), ``user_turn`` and ``user_turn2session`` keep only its user turns
over a corpus of user turns (like for like with the official turn keys), ``session`` ranks sessions.
"""
from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from memarch.benchmarks.base import Dialogue, Question
from memarch.benchmarks.metrics.official_report import OfficialReport
from memarch.benchmarks.metrics.retrieval import ranked_sessions

KS = (1, 3, 5, 10, 30, 50)
MEASURES = ("recall_any", "recall_all", "ndcg_any")
LEVELS = ("session", "turn", "turn2session", "user_turn", "user_turn2session")
AVERAGES = ("strict", "non_abs", "vendor")


# -- eval_utils.py, ported to ids ------------------------------------------------------------------
def dcg(relevances: Sequence[float], k: int) -> float:
    """Discounted Cumulative Gain at k: rel[0] + sum_{i>=1} rel[i] / log2(i + 1) (0-based i)."""
    rel = [float(r) for r in list(relevances)[:k]]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


@functools.lru_cache(maxsize=256)
def _ideal(ones: int) -> float:
    return dcg([1] * ones, ones)


def ndcg(ranked: Sequence[str], correct_docs: Iterable[str], corpus_ids: Sequence[str], k: int = 10) -> float:
    """Normalised DCG at k of ``ranked`` (corpus ids in rank order); the ideal over the whole corpus."""
    gold = set(correct_docs)
    relevant = sum(1 for doc in corpus_ids if doc in gold)
    return _ndcg(ranked, gold, relevant, k)


def _ndcg(ranked: Sequence[str], gold: set[str], relevant: int, k: int) -> float:
    ideal = _ideal(min(relevant, k))
    if ideal == 0:
        return 0.0
    return dcg([1 if doc in gold else 0 for doc in ranked[:k]], k) / ideal


def evaluate_retrieval(ranked: Sequence[str], correct_docs: Iterable[str], corpus_ids: Sequence[str],
                       k: int = 10) -> tuple[float, float, float]:
    """(recall_any@k, recall_all@k, ndcg_any@k) of ``ranked`` (corpus ids in rank order; the
    official code takes indices into ``corpus_ids``)."""
    gold = list(correct_docs)
    gold_set = set(gold)
    return _evaluate(ranked, gold, sum(1 for doc in corpus_ids if doc in gold_set), k)


def _evaluate(ranked: Sequence[str], gold: list[str], relevant: int, k: int) -> tuple[float, float, float]:
    recalled = set(ranked[:k])
    return (float(any(doc in recalled for doc in gold)), float(all(doc in recalled for doc in gold)),
            _ndcg(ranked, set(gold), relevant, k))


def evaluate_retrieval_turn2session(ranked: Sequence[str], correct_docs: Iterable[str], corpus_ids: Sequence[str],
                                    k: int = 10, session_of: Callable[[str], str] | None = None
                                    ) -> tuple[float, float, float]:
    """The session metrics of a turn ranking: ids mapped to sessions by ``session_of`` (the
    official code strips the last ``_<n>``), k grown to the first k' whose turns cover k distinct
    sessions (k' = corpus size + 1 when they never do)."""
    strip = session_of or (lambda doc: "_".join(doc.split("_")[:-1]))
    gold = list(set(strip(doc) for doc in correct_docs))
    corpus = [strip(doc) for doc in corpus_ids]
    gold_set = set(gold)
    return _turn2session([strip(doc) for doc in ranked], gold, len(corpus), sum(1 for s in corpus if s in gold_set), k)


def _turn2session(ranked: Sequence[str], gold: list[str], corpus_size: int, relevant: int, k: int
                  ) -> tuple[float, float, float]:
    effective_k = k
    seen = set(ranked[:k])
    while effective_k <= corpus_size and len(seen) < k:  # the official loop, one turn at a time
        effective_k += 1
        if effective_k <= len(ranked):
            seen.add(ranked[effective_k - 1])
        else:  # the ranking is spent: the loop would only count on to the corpus size + 1
            effective_k = corpus_size + 1
    return _evaluate(ranked, gold, relevant, effective_k)


# -- the corpus and gold of run_retrieval.py, over memarch ids -------------------------------------
@dataclass(frozen=True)
class Corpus:
    """One dialogue as run_retrieval.py ids it: a session by its published id, a turn as
    ``<session id>_<turn from 1>`` (a session published twice in a haystack — 13 _S instances
    repeat a filler session — is one id twice, as there), with memarch's turn and session ids
    mapped to them."""

    turns: tuple[str, ...]        # every turn's id, in order (the user turns: run_retrieval's turn corpus)
    user_turns: tuple[str, ...]
    sessions: tuple[str, ...]     # every session's id, in order (run_retrieval's session corpus)
    turn_id: dict[str, str]       # memarch turn id -> official turn id
    session_id: dict[str, str]    # memarch session (episode) id -> official session id
    episode_of: dict[str, str]    # memarch turn id -> memarch session id

    @classmethod
    def of(cls, dialogue: Dialogue) -> "Corpus":
        published = dialogue.metadata.get("session_ids") or [s.id for s in dialogue.sessions]
        turn_id, episode_of, users = {}, {}, []
        for session, pid in zip(dialogue.sessions, published):
            for n, t in enumerate(session.turns, 1):
                turn_id[t.id], episode_of[t.id] = f"{pid}_{n}", session.id
                if t.speaker == "user":
                    users.append(turn_id[t.id])
        return cls(turns=tuple(turn_id.values()), user_turns=tuple(users), sessions=tuple(str(p) for p in published),
                   turn_id=turn_id, session_id={s.id: str(p) for s, p in zip(dialogue.sessions, published)},
                   episode_of=episode_of)


def _level(name: str, scores: Callable[[int], tuple[float, float, float]]) -> dict[str, float]:
    return {f"{name}/{m}@{k}": v for k in KS for m, v in zip(MEASURES, scores(k))}


def _turn2session_id(gold: set[str], doc: str) -> str:
    """An official turn id's session as evaluate_retrieval_turn2session strips it, after
    run_retrieval renamed an evidence session's non-gold turns ``noans`` (assistant turns, which
    it never indexes, taken as non-gold)."""
    session = doc.rsplit("_", 1)[0]
    return session.replace("answer", "noans") if "answer" in session and doc not in gold else session


def _known(ids: Iterable[str], official: dict[str, str]) -> list[str]:
    """The official ids of memarch ids, once each (ids of nothing in the corpus left out)."""
    return list(dict.fromkeys(official[i] for i in ids if i in official))


def _count(ids: Iterable[str], gold: set[str]) -> int:
    return sum(1 for doc in ids if doc in gold)


def question_scores(question: Question, corpus: Corpus, ranked_turns: Sequence[str]) -> dict[str, float]:
    """Every level's official metrics at every k (``"turn/recall_all@5"``), and the vendor rule's
    session metrics (``"vendor_session/recall_any@5"``), for one question and its run."""
    meta = question.metadata
    gold_turns = _known(meta.get("official_turn_gold", []), corpus.turn_id)
    gold_sessions = _known(meta.get("official_session_gold", []), corpus.session_id)
    vendor = _known(meta.get("answer_sessions", []), corpus.session_id)
    gold_set, session_set, vendor_set = set(gold_turns), set(gold_sessions), set(vendor)
    known = [t for t in ranked_turns if t in corpus.turn_id]
    run = [corpus.turn_id[t] for t in known]
    user = set(corpus.user_turns)
    user_run = [doc for doc in run if doc in user]
    # a session at the rank of its best turn, then as its published id (a repeated session twice)
    sessions = [corpus.session_id[s] for s in ranked_sessions(known, corpus.episode_of)]
    n_turns, n_user = _count(corpus.turns, gold_set), _count(corpus.user_turns, gold_set)
    n_sessions, n_vendor = _count(corpus.sessions, session_set), _count(corpus.sessions, vendor_set)
    out: dict[str, float] = {}
    out.update(_level("session", lambda k: _evaluate(sessions, gold_sessions, n_sessions, k)))
    out.update(_level("vendor_session", lambda k: _evaluate(sessions, vendor, n_vendor, k)))
    out.update(_level("turn", lambda k: _evaluate(run, gold_turns, n_turns, k)))
    out.update(_level("user_turn", lambda k: _evaluate(user_run, gold_turns, n_user, k)))
    # turn2session: run_retrieval's noans_ ids make only gold turns carry a gold session's id
    label = functools.partial(_turn2session_id, gold_set)
    gold_labels = list(set(label(doc) for doc in gold_turns))
    out.update(_level("turn2session", lambda k: _turn2session([label(d) for d in run], gold_labels,
                                                              len(corpus.turns), n_turns, k)))
    out.update(_level("user_turn2session", lambda k: _turn2session([label(d) for d in user_run], gold_labels,
                                                                   len(corpus.user_turns), n_user, k)))
    return out


def _means(rows: list[dict[str, float]], prefix: str = "") -> dict[str, Any]:
    sums: dict[str, float] = defaultdict(float)
    for values in rows:
        for key, v in values.items():
            if key.startswith(prefix):
                sums[key] += v
    levels: dict[str, dict[str, float]] = defaultdict(dict)
    for key, total in sums.items():
        level, _, measure = key.partition("/")
        levels[level][measure] = total / len(rows)
    return {"n": len(rows), **{level: dict(ms) for level, ms in sorted(levels.items())}}


class LongMemEvalReport(OfficialReport):
    """LongMemEval's official retrieval metrics (strict, non-abstention and vendor averages) and
    its per-type table (abstention inside its base type, then task-averaged, overall, abstention)."""

    name = "longmemeval"

    def corpus(self, dialogue: Dialogue) -> Corpus:
        return Corpus.of(dialogue)

    def question_scores(self, question: Question, corpus: Any, ranked_turns: Sequence[str]) -> dict[str, float]:
        return question_scores(question, corpus, ranked_turns)

    def summary(self, rows: list[tuple[Question, dict[str, float]]]) -> dict[str, Any]:
        official = [(q, {key: x for key, x in vals.items() if not key.startswith("vendor_")}) for q, vals in rows]
        return {"strict": _means([vals for q, vals in official if q.metadata.get("official_scored")]),
                "non_abs": _means([vals for q, vals in official if not q.metadata.get("abstention")]),
                "vendor": _means([vals for _, vals in rows], "vendor_")}

    def category_report(self, scored: list[tuple[str, float, bool]], skipped: int) -> dict[str, Any]:
        """print_qa_metrics.py's lines: per type (abstention counted in its base type), the
        task-averaged score (the mean of the per-type means), the overall (micro) mean and the
        abstention questions apart; ``skipped``: abstention questions an LM-free run cannot score."""
        by_type: dict[str, list[float]] = defaultdict(list)
        for category, score, _ in scored:
            by_type[category].append(score)
        abstention = [score for _, score, abstains in scored if abstains]
        per_type = {c: {"score": sum(v) / len(v), "n": len(v)} for c, v in sorted(by_type.items())}
        return {"per_type": per_type,
                "task_averaged": sum(t["score"] for t in per_type.values()) / len(per_type) if per_type else 0.0,
                "overall": sum(s for _, s, _ in scored) / len(scored) if scored else 0.0,
                "n": len(scored),
                "abstention": {"score": sum(abstention) / len(abstention) if abstention else None,
                               "n": len(abstention), "skipped": skipped}}
