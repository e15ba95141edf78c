"""The strict LM-free objective `answer_span`: dates in every form a gold answer or a context item
carries, coarse vs fine dates, number words, list answers, partial spans, the budget cut; its
wiring as the default objective of `evaluate` and the `--metric` option; and, on real LoCoMo,
that it is never above the bag-of-words recall."""
from __future__ import annotations

import datetime as dt

import pytest

from memarch.benchmarks.metrics.answer_span import answer_span, gold_parts, span_words, words_to_numbers
from memarch.benchmarks.metrics.scores import answer_recall, normalize_answer

GOLD = "19 May 2023"


DATE_FORMS = ["19 May 2023", "May 19, 2023", "the 19th of May 2023", "May 19th 2023", "19 May, 2023", "2023-05-19",
              "2023-05-19T13:56", "2023-05-19T13:56:00Z", "2023-05-19 13:56", "19 may 2023", "19 MAY 2023"]


@pytest.mark.parametrize("gold", DATE_FORMS)
def test_every_date_form_matches_every_other(gold):
    for form in DATE_FORMS:
        assert answer_span(gold, f"Caroline went on {form} with Mel") == 1.0, (gold, form)
    for context in ("[turn 2023-05-19] Caroline: I went", "[event 2023-05-19T13:56] a walk", "Mel (19 May 2023): hi"):
        assert answer_span(gold, context) == 1.0, (gold, context)


@pytest.mark.parametrize("gold", ["May 19, 2023", "19th of May 2023", "2023-05-19", "19 May, 2023"])
def test_every_gold_date_form_matches_the_forms_the_encoders_write(gold):
    from memarch.pipeline.dates import format_date
    from memarch.modules.encoders._conversation_text import render_turn
    from memarch.pipeline.episodes import Turn
    from memarch.pipeline.items import MemoryItem
    from memarch.pipeline.retrieval import format_item

    day = dt.date(2023, 5, 19)
    turn_line = render_turn(Turn("D1:1", "Caroline", "I went to the group."), day)  # "Caroline (19 May 2023): ..."
    header = format_item(MemoryItem(text="I went.", kind="turn", event_time=day.isoformat()))  # "[turn 2023-05-19] ..."
    for context in (turn_line, header, f"went to the group on {format_date(day)} (date of mention)"):
        assert answer_span(gold, context) == 1.0, context


def test_a_coarser_date_is_found_in_a_finer_one_never_the_reverse():
    assert answer_span("May 2023", "[turn 2023-05-19] hi") == 1.0
    assert answer_span("May 2023", "on 19 May 2023") == 1.0
    assert answer_span("19 May", "on 19 May 2023") == 1.0
    assert answer_span("2023", "on 19 May 2023") == 1.0
    assert answer_span("19 May 2023", "sometime in May 2023") == 0.0
    assert answer_span("19 May 2023", "on 19 May") == 0.0  # no year: not the gold date
    assert answer_span("19 May 2023", "on 19 June 2023") == 0.0
    assert answer_span("19 May 2023", "on 2023-05-18") == 0.0


def test_the_greeting_turn_of_the_issue_is_a_bag_hit_but_no_span():
    context = "Hey! [22 May 2023] Caroline: so good to see you, how was your week?"
    assert answer_recall(GOLD, context) == pytest.approx(2 / 3)  # "may", "2023": a success at >= 0.5
    assert answer_span(GOLD, context) == 0.0


def test_modal_may_is_not_a_month_without_a_date_beside_it():
    assert span_words("3 kids who may come") == ["3", "kids", "who", "may", "come"]
    assert span_words("we may 3 times") == ["we", "may", "3", "times"]
    assert span_words("It may rain in May 2023") == ["it", "may", "rain", "in", "2023", "may"]
    assert span_words("on 3 May") == ["on", "may", "3"]  # capitalised beside a day: the month
    assert span_words("Sept. 5") == span_words("5 September") == ["september", "5"]
    assert span_words("Jan 3rd, 2024") == ["2024", "january", "3"]


@pytest.mark.parametrize("gold, context", [
    ("two", "she has 2 kids"), ("2", "she has two kids"), ("twenty-one", "he turned 21"),
    ("21", "he turned twenty one"), ("1,000", "raised 1000 dollars"), ("1000", "raised one thousand dollars"),
    ("three months", "for 3 months now"), ("4th", "came 4 in the race"),
])
def test_number_words_and_digits_match(gold, context):
    assert answer_span(gold, context) == 1.0


def test_number_words_parse_as_numbers():
    assert words_to_numbers(["twenty", "one"]) == [21]
    assert words_to_numbers(["one", "hundred", "five"]) == [105]
    assert words_to_numbers(["two", "hundred", "thousand"]) == [200_000]
    assert words_to_numbers(["one", "thousand", "two", "hundred"]) == [1200]
    assert words_to_numbers(["two", "three"]) == [2, 3]  # a run that breaks the grammar: two numbers
    assert answer_span("two", "she has twelve cats") == 0.0


def test_list_answers_score_the_share_of_parts_found():
    assert gold_parts("Sweden, Norway and Denmark") == (" sweden ", " norway ", " denmark ")
    assert answer_span("Sweden, Norway and Denmark", "we saw Norway and then Sweden") == pytest.approx(2 / 3)
    assert answer_span("Sweden, Norway and Denmark", "Denmark, Norway, Sweden") == 1.0
    assert answer_span("Psychology; counseling", "she studies counseling") == 0.5
    # a date's comma is not a list separator; a number's digit-group comma neither
    assert gold_parts("May 19, 2023") == (" 2023 may 19 ",)
    assert gold_parts("May 19, 2023 and June 1, 2023") == (" 2023 may 19 ", " 2023 june 1 ")
    assert gold_parts("1,000 and 2") == (" 1000 ", " 2 ")
    # LoCoMo writes some gold dates glued ("3June, 2022") or misspelt ("21Janury, 2022"): the first
    # is read as a date, the second stays one part, never a lone "2022" that any 2022 context matches
    assert gold_parts("The weekend after 3June, 2022.") == (" weekend after 2022 june 3 ",)
    assert answer_span("the week before 21Janury, 2022", "[turn 2022-01-21] Nate: hi") == 0.0


def test_a_single_part_scores_zero_or_one_and_tokens_out_of_order_are_no_span():
    gold = "chocolate cake with raspberries"
    scattered = "raspberries grow here; I ate chocolate; a cake with nothing"
    assert answer_recall(gold, scattered) == 1.0  # every token is somewhere
    assert answer_span(gold, scattered) == 0.0
    assert answer_span(gold, "I baked a chocolate cake with raspberries!") == 1.0
    assert answer_span("cake with raspberries", "a cake, with raspberries") == 1.0  # punctuation is dropped


def test_tokens_match_whole_never_inside_a_word():
    assert answer_span("art", "she loves party games") == 0.0
    assert answer_span("5", "at 15 years") == 0.0


def test_the_budget_cuts_before_normalising():
    context = "one two three four five six seven eight Boston"
    assert answer_span("Boston", context, context_budget=9) == 1.0
    assert answer_span("Boston", context, context_budget=8) == 0.0
    assert answer_span("Boston", context, context_budget=None) == 1.0
    # the cut can leave only part of a date: then the full gold date is gone
    assert answer_span(GOLD, "x y on 19 May 2023", context_budget=5) == 0.0
    assert answer_span("19 May", "x y on 19 May 2023", context_budget=5) == 1.0


def test_articles_punctuation_and_case_are_normalised_as_locomo_does():
    assert answer_span("The Lord of the Rings", "reading lord of rings again") == 1.0
    assert answer_span('"Little Women"', "she read Little Women.") == 1.0
    for text in ("The cat's hat, and a dog!", "Self-checkout (machines)", "Kyle, Sara; Bo"):
        assert " ".join(span_words(text)) == normalize_answer(text)  # no dates or numbers: identical


def test_a_date_never_spans_two_context_lines():
    assert answer_span(GOLD, "[turn 2023-05-19] Caroline: hi\nMel: bye") == 1.0
    assert answer_span("Mel went 19", "Caroline: Mel went\n19 May 2023 was fun") == 0.0


@pytest.mark.parametrize("gold", [None, "", "  ", "the", "!?"])
def test_empty_gold_scores_zero(gold):
    assert answer_span(gold, "the cat sat on the mat") == 0.0


def test_gold_normalisation_is_cached():
    gold_parts.cache_clear()
    answer_span("Kyle, Sara", "Kyle and Sara")
    answer_span("Kyle, Sara", "Sara")
    info = gold_parts.cache_info()
    assert info.misses == 1 and info.hits == 1


# -- wiring: evaluate, the CLI option ----------------------------------------------------------------
def test_answer_span_is_the_default_lm_free_objective_and_named(hash_resources):
    from memarch.benchmarks.generated import GeneratedConversations
    from memarch.pipeline.architecture import Architecture
    from memarch.benchmarks.evaluation.evaluate import evaluate

    bench = GeneratedConversations(seed=0, conversations=1, sessions=3, distractors=1)
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    span = evaluate(arch, bench, split="all", resources=hash_resources)
    bag = evaluate(arch, bench, split="all", resources=hash_resources, metric="answer_recall")
    assert not span.failed and not bag.failed
    assert span.metadata["metric"] == "answer_span" and bag.metadata["metric"] == "answer_recall"
    assert span.score == pytest.approx(span.scores["answer_span"])
    assert bag.score == pytest.approx(bag.scores["answer_recall"]) == pytest.approx(span.scores["answer_recall"])
    assert span.score <= bag.score
    # success follows the objective: a query succeeds iff its span score reaches the threshold
    assert all(o.success == (o.evidence["answer_span"] >= 0.5) for o in span.outcomes)


def test_evidence_recall_without_gold_evidence_falls_back_visibly(hash_resources):
    from memarch.benchmarks.base import Benchmark, Dialogue, Question
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.episodes import Episode, Turn
    from memarch.benchmarks.evaluation.evaluate import evaluate

    class Toy(Benchmark):
        name = "toy"

    session = Episode(id="n/s1", namespace="n",
                      turns=[Turn("D1:1", "Ann", "My dog is called Rex.", date="2023-05-08")])
    questions = [Question("n/q1", "What is the dog called?", "Rex", ["D1:1"], "single-hop"),
                 Question("n/q2", "What is the dog's name?", "Rex", [], "single-hop")]
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, Toy([Dialogue("n", [session], questions)]), split="all", resources=hash_resources,
                      metric="evidence_recall")
    assert not result.failed, result.error
    by_id = {o.query_id: o for o in result.outcomes}
    assert "metric_fallback" not in by_id["n/q1"].evidence
    assert by_id["n/q2"].evidence["metric_fallback"] == "answer_span" and by_id["n/q2"].score == 1.0
    assert result.scores["metric_fallbacks"] == 1.0


def test_an_lm_objective_without_a_reader_is_refused_up_front(hash_resources):
    from memarch.benchmarks.evaluation.evaluate import evaluate

    with pytest.raises(ValueError, match="needs an LM reader"):
        evaluate(None, "generated", resources=hash_resources, metric="qa_f1")
    with pytest.raises(ValueError, match="metric must be one of"):
        evaluate(None, "generated", resources=hash_resources, metric="bag")


def test_build_evaluator_passes_the_objective_on(hash_resources):
    from memarch.cli import build_parser
    from memarch.cli.compile import build_evaluator
    from memarch.pipeline.architecture import Architecture

    argv = ["compare", "--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3",
            "--limit", "6", "--embedder", "hash"]
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    for extra, name in (([], "answer_span"), (["--metric", "answer_recall"], "answer_recall"),
                        (["--metric", "evidence_recall"], "evidence_recall")):
        metric = build_evaluator(build_parser().parse_args(argv + extra), hash_resources)
        assert metric(arch, "search").metadata["metric"] == name


def test_check_objective_names_what_would_do():
    from memarch.benchmarks.base import Benchmark, TaskBenchmark
    from memarch.cli._metric import check_metric
    from memarch.errors import MemarchError

    class Tasks(TaskBenchmark):
        name = "tasks"

        def __init__(self):
            super().__init__([])

    class Chats(Benchmark):  # scored by the evaluation's metric (declares none of its own)
        name = "chats"

    assert check_metric(None, Chats(), lm=False) is None
    assert check_metric("answer_recall", Chats(), lm=False) == "answer_recall"
    assert check_metric("qa_f1", Chats(), lm=True) == "qa_f1"
    with pytest.raises(MemarchError, match="needs an LM reader"):
        check_metric("qa_f1", Chats(), lm=False)
    with pytest.raises(MemarchError, match="needs an answer judge"):
        check_metric("judge", Chats(), lm=True, judge=False)
    with pytest.raises(MemarchError, match="expected one of answer_span"):
        check_metric("bag", Chats(), lm=False)
    with pytest.raises(MemarchError, match="agent benchmark"):
        check_metric("answer_span", Tasks(), lm=False)


def test_cli_evaluate_uses_and_names_the_objective_asked_for(tmp_path, capsys, monkeypatch):
    from memarch.cli import main
    from memarch.pipeline.architecture import Architecture

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    arch = tmp_path / "arch.json"
    Architecture(("turn",), "vector", "hybrid", "lightweight").save(arch)
    argv = ["evaluate", "--architecture", str(arch), "--embedder", "hash", "--split", "search", "--limit", "10"]
    assert main([*argv, "--metric", "answer_recall"]) == 0
    out = capsys.readouterr().out
    assert "score (answer_recall)" in out and "share of gold answer words anywhere" in out


@pytest.mark.parametrize("argv, needle", [
    (["evaluate", "--metric", "qa_f1", "--embedder", "hash"], "needs an LM reader"),
    (["evaluate", "--metric", "bag", "--embedder", "hash"], "expected one of"),
    (["compile", "--metric", "judge", "--budget", "1", "--storage", "memory", "--no-tracking",
      "--embedder", "hash", "--knob", "conversations=1"], "needs an LM reader"),
    (["compare", "--metric", "nope", "--budget", "1", "--storage", "memory", "--no-tracking",
      "--embedder", "hash", "--knob", "conversations=1"], "expected one of"),
])
def test_cli_bad_objective_is_one_line_exit_2(argv, needle, capsys):
    from memarch.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


# -- real data ---------------------------------------------------------------------------------------
@pytest.mark.integration
def test_span_on_locomo_names_itself_and_is_at_most_the_bag(data_dir, hash_resources):
    from memarch.benchmarks.locomo import LoCoMo
    from memarch.pipeline.architecture import Architecture
    from memarch.benchmarks.evaluation.evaluate import evaluate

    bench = LoCoMo(data_dir / "locomo", conversations=1)
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, bench, split="all", resources=hash_resources, metric="answer_span")
    assert not result.failed, result.error
    assert result.metadata["metric"] == "answer_span"
    assert result.score == pytest.approx(result.scores["answer_span"])
    assert 0.0 < result.score <= result.scores["answer_recall"]
    # Per query the span can exceed the bag (a list's share of parts, "two" vs "2", "May 19, 2023" vs
    # a "2023-05-19" header), but bag hits without a span are the common case.
    below = sum(o.evidence["answer_span"] < o.evidence["answer_recall"] for o in result.outcomes)
    above = sum(o.evidence["answer_span"] > o.evidence["answer_recall"] for o in result.outcomes)
    assert below > above
