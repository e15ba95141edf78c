"""LongMemEval's official retrieval metrics (`memarch.benchmarks.metrics.longmemeval_official`):
hand-computed values on a crafted case, equality (to 1e-12) with the verbatim ``eval_utils.py`` of
the LongMemEval repository on random rankings, and the whole question scoring against the verbatim
corpus and gold of ``run_retrieval.py`` on a crafted instance; the averages and the per-type table."""
from __future__ import annotations

import random

import numpy as np
import pytest

from memarch.benchmarks.longmemeval import parse_instance
from memarch.benchmarks.metrics.longmemeval_official import (KS, Corpus, LongMemEvalReport, dcg, evaluate_retrieval,
                                                             evaluate_retrieval_turn2session, ndcg, question_scores)


# -- src/retrieval/eval_utils.py of github.com/xiaowu0162/LongMemEval (6a92d1a, MIT, Copyright (c) 2024
# Di Wu), verbatim except np.asfarray (removed in NumPy 2) -> np.asarray(x, dtype=float) --------------
def v_dcg(relevances, k):
    """Discounted Cumulative Gain at k."""
    relevances = np.asarray(relevances, dtype=float)[:k]
    if relevances.size:
        return relevances[0] + np.sum(relevances[1:] / np.log2(np.arange(2, relevances.size + 1)))
    return 0.


def v_ndcg(rankings, correct_docs, corpus_ids, k=10):
    """Normalized Discounted Cumulative Gain at k."""
    relevances = [1 if doc_id in correct_docs else 0 for doc_id in corpus_ids]
    sorted_relevances = [relevances[idx] for idx in rankings[:k]]
    ideal_relevance = sorted(relevances, reverse=True)
    ideal_dcg = v_dcg(ideal_relevance, k)
    actual_dcg = v_dcg(sorted_relevances, k)
    if ideal_dcg == 0:
        return 0.
    return actual_dcg / ideal_dcg


def v_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=10):
    recalled_docs = set(corpus_ids[idx] for idx in rankings[:k])
    recall_any = float(any(doc in recalled_docs for doc in correct_docs))
    recall_all = float(all(doc in recalled_docs for doc in correct_docs))
    ndcg_score = v_ndcg(rankings, correct_docs, corpus_ids, k)
    return recall_any, recall_all, ndcg_score


def v_evaluate_retrieval_turn2session(rankings, correct_docs, corpus_ids, k=10):
    # convert turn-level labels/results into session-level and then evaluate
    def strip_turn_id(docid):
        return '_'.join(docid.split('_')[:-1])
    correct_docs = list(set([strip_turn_id(x) for x in correct_docs]))

    # revise k to handle document-level retrieval
    corpus_ids = [strip_turn_id(x) for x in corpus_ids]
    effective_k = k
    unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])
    while effective_k <= len(corpus_ids) and len(unique_docids) < k:
        effective_k += 1
        unique_docids = set(corpus_ids[idx] for idx in rankings[:effective_k])

    return v_evaluate_retrieval(rankings, correct_docs, corpus_ids, k=effective_k)


# -- src/retrieval/run_retrieval.py (b60a5b7), verbatim: the corpus ids of one haystack session ------
def v_process_item_flat_index(data, granularity, sess_id, timestamp):
    corpus = []

    if granularity == 'session':
        text = ' '.join([interact['content'] for interact in data if interact['role'] == 'user'])
        corpus.append(text)
        ids = [sess_id]
        if 'answer' in sess_id and all([not turn['has_answer'] for turn in [x for x in data if x['role'] == 'user']]):
            ids = [sess_id.replace('answer', 'noans')]
    elif granularity == 'turn':
        ids = []
        for i_turn, turn in enumerate(data):
            if turn['role'] == 'user':
                corpus.append(turn['content'])
                if 'answer' not in sess_id:
                    ids.append(sess_id + '_' + str(i_turn+1))
                else:
                    assert 'has_answer' in turn
                    assert turn['has_answer'] in [True, False]
                    if turn['has_answer']:
                        ids.append(sess_id + '_' + str(i_turn+1))
                    else:
                        ids.append((sess_id + '_' + str(i_turn+1)).replace('answer', 'noans'))
                        assert 'answer' not in ids[-1]
    else:
        raise NotImplementedError

    return corpus, ids, [timestamp for _ in corpus]


def _close(ours, theirs):
    assert ours == pytest.approx(theirs, abs=1e-12, rel=0)


def test_crafted_case_by_hand():
    corpus = ["a_1", "a_2", "b_1", "b_2", "c_1"]
    ranked = ["b_1", "a_2", "c_1", "b_2", "a_1"]
    gold = ["a_2", "b_2"]
    assert evaluate_retrieval(ranked, gold, corpus, k=1) == (0.0, 0.0, 0.0)
    # k=3: a_2 at rank 2 (weight 1/log2(2) = 1), ideal 2 golds = 1 + 1 -> 0.5
    assert evaluate_retrieval(ranked, gold, corpus, k=3) == (1.0, 0.0, 0.5)
    # k=5: ranks 2 and 4: 1 + 1/log2(4) = 1.5 over 2
    assert evaluate_retrieval(ranked, gold, corpus, k=5) == (1.0, 1.0, 0.75)
    assert ndcg(["x", "g"], ["g"], ["x", "g"], k=2) == 1.0  # rank 2 weighs as rank 1 (log2(2) = 1)
    assert ndcg(["x", "y", "g"], ["g"], ["x", "y", "g"], k=3) == pytest.approx(1 / np.log2(3))
    assert dcg([1, 0, 1], 3) == pytest.approx(1.5 - 0.5 + 1 / np.log2(3))
    # no gold: recall_any 0, recall_all 1 (all([]) is True), ndcg 0 — what the non-abstention average takes
    assert evaluate_retrieval(ranked, [], corpus, k=5) == (0.0, 1.0, 0.0)


def test_turn2session_by_hand():
    corpus = ["s1_1", "s1_2", "s2_1", "s3_1", "s3_2"]
    ranked = ["s1_1", "s1_2", "s2_1", "s3_1", "s3_2"]
    # k=2: two turns cover one session, k grows to 3 (s1, s2): s3 is not reached
    assert evaluate_retrieval_turn2session(ranked, ["s3_2"], corpus, k=2) == (0.0, 0.0, 0.0)
    # k=3 grows to 4: s3_1 (rank 4) is relevant at session level: 1/log2(4) over the ideal 2 ones
    assert evaluate_retrieval_turn2session(ranked, ["s3_2"], corpus, k=3) == (1.0, 1.0, 0.25)


@pytest.mark.parametrize("seed", range(40))
def test_equal_to_the_verbatim_code_on_random_rankings(seed):
    rng = random.Random(seed)
    sessions = [f"sess{i}" if rng.random() < 0.8 else f"answer_{i}" for i in range(rng.randint(1, 12))]
    corpus = [f"{s}_{t}" for s in sessions for t in range(1, rng.randint(2, 8))]
    if rng.random() < 0.2:
        corpus += corpus[: rng.randint(1, 3)]  # a session published twice: ids repeat
    gold = rng.sample(sorted(set(corpus)), rng.randint(0, min(4, len(set(corpus)))))
    rankings = list(range(len(corpus)))
    rng.shuffle(rankings)
    if rng.random() < 0.5:
        rankings = rankings[: rng.randint(0, len(rankings))]  # a partial run, as memarch's reads give
    ranked = [corpus[i] for i in rankings]
    for k in (*KS, rng.randint(1, 60)):
        for ours, theirs in zip(evaluate_retrieval(ranked, gold, corpus, k),
                                v_evaluate_retrieval(rankings, gold, corpus, k)):
            _close(ours, theirs)
        for ours, theirs in zip(evaluate_retrieval_turn2session(ranked, gold, corpus, k),
                                v_evaluate_retrieval_turn2session(rankings, gold, corpus, k)):
            _close(ours, theirs)
        _close(dcg([int(d in gold) for d in ranked], k), v_dcg([int(d in gold) for d in ranked], k))


def _instance(rng: random.Random) -> dict:
    """A LongMemEval instance with evidence sessions (``answer_...``, user and assistant
    ``has_answer`` turns, one evidence session without a user one), fillers (one repeated) and a
    session that opens with the assistant."""
    def session(n, marked=()):
        roles = ["assistant"] + ["user", "assistant"] * n if rng.random() < 0.2 else ["user", "assistant"] * n
        return [{"role": r, "content": f"{r} {rng.random():.6f}", "has_answer": i in marked}
                for i, r in enumerate(roles)]

    sessions = {"answer_x_1": session(3, marked={0, 2, 3}), "answer_x_2": session(2, marked={1}),
                "answer_x_3": session(2, marked={2}), "filler_a": session(2), "filler_b": session(3)}
    ids = list(sessions) + ["filler_a"]
    rng.shuffle(ids)
    return {"question_id": "q1", "question_type": "multi-session", "question": "How many?", "answer": "3",
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ids,
            "haystack_dates": [f"2023/05/{d:02d} (Mon) 10:00" for d in range(1, len(ids) + 1)],
            "haystack_sessions": [sessions[i] for i in ids], "answer_session_ids": ["answer_x_1", "answer_x_2"]}


@pytest.mark.parametrize("seed", range(20))
def test_question_scores_equal_the_verbatim_run_retrieval(seed):
    """run_retrieval's turn and session corpora and gold, and eval_utils, on one instance; memarch's
    ranking given as its own turn ids: the user turns (like for like) and the sessions."""
    rng = random.Random(seed)
    inst = _instance(rng)
    dialogue = parse_instance(inst)
    q = dialogue.questions[0]
    turn_corpus, session_corpus = [], []
    for sid, sess in zip(inst["haystack_session_ids"], inst["haystack_sessions"]):
        turn_corpus += v_process_item_flat_index(sess, "turn", sid, None)[1]
        session_corpus += v_process_item_flat_index(sess, "session", sid, None)[1]
    turn_gold = list(set(d for d in turn_corpus if "answer" in d))
    session_gold = list(set(d for d in session_corpus if "answer" in d))
    corpus = Corpus.of(dialogue)
    official_of = {t: corpus.turn_id[t] for t in corpus.turn_id}
    user_turns = [t.id for s in dialogue.sessions for t in s.turns if t.speaker == "user"]
    rng.shuffle(user_turns)
    run = user_turns[: rng.randint(1, len(user_turns))]
    # memarch's ids -> run_retrieval's (noans_ for an evidence session's non-gold turns) -> indices
    renamed = [official_of[t] if official_of[t] in turn_gold or "answer" not in official_of[t]
               else official_of[t].replace("answer", "noans") for t in run]
    rankings = []
    for doc in renamed:  # a repeated session's turn: the first copy not yet ranked
        rankings.append(next(i for i, d in enumerate(turn_corpus) if d == doc and i not in rankings))
    scores = question_scores(q, corpus, run)
    sessions_ranked = list(dict.fromkeys(corpus.episode_of[t] for t in run))
    ids_in_order = dialogue.metadata["session_ids"]
    session_rankings = []
    for s in sessions_ranked:
        pid = ids_in_order[[e.id for e in dialogue.sessions].index(s)]
        doc = pid if pid in session_gold or "answer" not in pid else pid.replace("answer", "noans")
        session_rankings.append(next(i for i, d in enumerate(session_corpus) if d == doc and i not in session_rankings))
    for k in KS:
        for m, theirs in zip(("recall_any", "recall_all", "ndcg_any"),
                             v_evaluate_retrieval(rankings, turn_gold, turn_corpus, k)):
            _close(scores[f"user_turn/{m}@{k}"], theirs)
        for m, theirs in zip(("recall_any", "recall_all", "ndcg_any"),
                             v_evaluate_retrieval_turn2session(rankings, turn_gold, turn_corpus, k)):
            _close(scores[f"user_turn2session/{m}@{k}"], theirs)
        for m, theirs in zip(("recall_any", "recall_all", "ndcg_any"),
                             v_evaluate_retrieval(session_rankings, session_gold, session_corpus, k)):
            _close(scores[f"session/{m}@{k}"], theirs)
    # the gold as run_retrieval forms it (an answer session whose marked turns are the assistant's is not gold)
    assert {corpus.session_id[s] for s in q.metadata["official_session_gold"]} == set(session_gold)
    assert {corpus.turn_id[t] for t in q.metadata["official_turn_gold"]} == set(turn_gold)
    assert q.metadata["official_scored"] is True


def test_assistant_turns_take_ranks_unless_the_run_keeps_user_turns():
    inst = _instance(random.Random(0))
    dialogue = parse_instance(inst)
    q, corpus = dialogue.questions[0], Corpus.of(dialogue)
    gold = q.metadata["official_turn_gold"][0]
    assistant = [t.id for s in dialogue.sessions for t in s.turns if t.speaker == "assistant"]
    scores = question_scores(q, corpus, [*assistant[:2], gold])
    assert scores["turn/recall_any@1"] == 0.0 and scores["turn/recall_any@3"] == 1.0
    assert scores["user_turn/recall_any@1"] == 1.0  # the like-for-like run: user turns only
    vendor = scores["vendor_session/recall_any@50"]
    assert vendor == (1.0 if corpus.episode_of[gold] in q.metadata["answer_sessions"] else 0.0)


def test_averages_and_the_per_type_table():
    dialogue = parse_instance(_instance(random.Random(1)))
    q = dialogue.questions[0]
    abstain = parse_instance({**_instance(random.Random(1)), "question_id": "q2_abs"}).questions[0]
    raw = _instance(random.Random(1))
    assistant_only = [[{**t, "has_answer": t["has_answer"] and t["role"] != "user"} for t in s]
                      for s in raw["haystack_sessions"]]
    no_user_gold = parse_instance({**raw, "question_id": "q3", "haystack_sessions": assistant_only}).questions[0]
    assert not no_user_gold.metadata["official_scored"] and not abstain.metadata["official_scored"]
    report = LongMemEvalReport()
    rows = [(x, question_scores(x, Corpus.of(dialogue), [])) for x in (q, abstain, no_user_gold)]
    summary = report.summary(rows)
    assert (summary["strict"]["n"], summary["non_abs"]["n"], summary["vendor"]["n"]) == (1, 2, 3)
    assert summary["non_abs"]["turn"]["recall_all@5"] == 0.5  # no gold: recall_all 1, as the harness takes it
    assert "vendor_session" in summary["vendor"] and "vendor_session" not in summary["strict"]
    table = report.category_report([("multi-session", 1.0, False), ("multi-session", 0.0, True),
                                    ("temporal-reasoning", 0.5, False)], skipped=2)
    assert table["per_type"]["multi-session"] == {"score": 0.5, "n": 2}
    assert table["task_averaged"] == 0.5 and table["overall"] == pytest.approx(0.5)
    assert table["abstention"] == {"score": 0.0, "n": 1, "skipped": 2}
