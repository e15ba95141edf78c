"""Unit tests of memarch.lm: spec parsing, the llama.cpp engine contract (against a scripted
server), typed calls with corrective retry and fallback, dead endpoints, roles and accounting."""
from __future__ import annotations

import argparse
import json
import socket
import time
import uuid
from typing import Literal

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from memarch.errors import MemarchError
from memarch.lm import (
    Accounting,
    LlamaCppEngine,
    LMOutputError,
    LMRoles,
    LMSpec,
    LMUnavailableError,
    add_lm_arguments,
    call_typed,
    configure_lm_cache,
    guard,
    is_placeholder,
    make_lm,
    roles_from_args,
)
from memarch.lm import local as local_mod
from lm_helpers import ScriptedServer, scripted_lm


class Judge(dspy.Signature):
    """Judge whether the answer matches the gold answer."""

    answer: str = dspy.InputField()
    gold: str = dspy.InputField()
    verdict: Literal["yes", "no"] = dspy.OutputField()
    score: int = dspy.OutputField(desc="0-10")


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def unique() -> str:
    return uuid.uuid4().hex[:8]


# ---- specs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,kind,model,base", [
    (None, "none", None, None),
    ("none", "none", None, None),
    ("local", "local", "local/smollm2-135m", None),
    ("openai/gpt-4o-mini", "model", "openai/gpt-4o-mini", None),
    ("ollama_chat/llama3", "model", "ollama_chat/llama3", None),
    ("http://localhost:11434/v1#llama3", "url", "openai/llama3", "http://localhost:11434/v1"),
    ("http://h:8000/v1/#openai/qwen", "url", "openai/qwen", "http://h:8000/v1"),
])
def test_spec_parse(text, kind, model, base):
    spec = LMSpec.parse(text)
    assert (spec.kind, spec.model, spec.api_base) == (kind, model, base)


def test_spec_url_takes_model_option_and_rejects_nonsense():
    assert LMSpec.parse("http://localhost:1234/v1", model="qwen").model == "openai/qwen"
    with pytest.raises(MemarchError, match="--lm-model"):
        LMSpec.parse("http://localhost:1234/v1")
    with pytest.raises(MemarchError, match="provider/model"):
        LMSpec.parse("gpt4")
    assert make_lm("none") is None


# ---- engine -------------------------------------------------------------------------------------

def test_engine_sends_nested_json_schema_and_parses_typed_outputs():
    lm, server = scripted_lm(['{"verdict": "yes", "score": 8}'])
    assert lm.supports_response_schema and "response_format" in lm.supported_params
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        pred = dspy.Predict(Judge)(answer="Paris", gold=f"Paris {unique()}")
    assert pred.verdict == "yes" and pred.score == 8 and isinstance(pred.score, int)
    body = server.bodies[0]
    fmt = body["response_format"]
    # llama.cpp ignores DSPy's flat form: the schema must sit under json_schema.schema
    assert fmt["type"] == "json_schema" and "schema" not in fmt
    schema = fmt["json_schema"]["schema"]
    assert set(schema["properties"]) == {"verdict", "score"}
    assert body["max_tokens"] == 256 and body["temperature"] == 0.0
    assert body["messages"][0]["role"] == "system" and "Paris" in body["messages"][-1]["content"]
    usage = lm.history[-1]["usage"]
    assert usage["prompt_tokens"] == 100 and usage["completion_tokens"] == 7


def test_engine_bounds_unbounded_lists_in_the_schema():
    from memarch.lm.engine import bound_arrays

    class Extract(dspy.Signature):
        """Extract keywords."""

        text: str = dspy.InputField()
        keywords: list[str] = dspy.OutputField()

    lm, server = scripted_lm(['{"keywords": ["a", "b"]}'])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        assert dspy.Predict(Extract)(text=unique()).keywords == ["a", "b"]
    schema = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["keywords"]["maxItems"] == 8
    kept = bound_arrays({"type": "array", "maxItems": 2, "items": {"type": "array", "minItems": 9}}, 8)
    assert kept == {"type": "array", "maxItems": 2, "items": {"type": "array", "minItems": 9, "maxItems": 9}}


def test_base_url_lms_ask_for_json_schema_unless_told_not_to():
    lm = make_lm("http://localhost:11434/v1#llama3")
    assert lm.model == "memarch_url/llama3" and lm.supports_response_schema
    assert "response_format" in lm.supported_params
    plain = make_lm("http://localhost:11434/v1#llama3", json_schema=False)
    assert plain.model == "openai/llama3" and not plain.supports_response_schema


def test_engine_reports_server_error_and_dead_server():
    class Broken:
        def chat(self, body):
            return {"error": {"code": 500, "message": "slot unavailable"}}

    lm = dspy.LM("local/broken", engine=LlamaCppEngine(Broken()), num_retries=0, cache=False)
    with pytest.raises(LMUnavailableError, match="slot unavailable"), guard("task"):
        lm(f"hi {unique()}")

    stopped = local_mod.LocalServer()  # never started: chat() must refuse, not crash
    lm = dspy.LM("local/stopped", engine=LlamaCppEngine(stopped), num_retries=0, cache=False)
    with pytest.raises(LMUnavailableError, match="not running"), guard("judge"):
        lm(f"hi {unique()}")


# ---- typed calls: corrective retry, fallback ---------------------------------------------------

def test_call_typed_retries_once_with_a_correction_then_succeeds():
    lm, server = scripted_lm(["I think yes, definitely", '{"verdict": "no", "score": 2}'])
    pred = call_typed(dspy.Predict(Judge), lm, answer="Rome", gold=f"Paris {unique()}")
    assert (pred.verdict, pred.score) == ("no", 2)
    assert len(server.bodies) == 2
    first = json.dumps(server.bodies[0]["messages"])
    second = json.dumps(server.bodies[1]["messages"])
    assert "could not be used" not in first and "could not be used" in second


def test_call_typed_gives_up_after_one_retry_so_caller_falls_back(caplog):
    lm, server = scripted_lm(["garbage", '{"verdict": "maybe", "score": "high"}', '{"verdict": "yes", "score": 1}'])
    with pytest.raises(LMOutputError), caplog.at_level("WARNING", logger="memarch.lm.structured"):
        call_typed(dspy.Predict(Judge), lm, answer="a", gold=f"b {unique()}")
    assert len(server.bodies) == 2  # one call + one corrective retry, never a third
    assert any("unusable" in r.message for r in caplog.records)
    assert isinstance(LMOutputError("x"), ValueError)  # the encoder contract's fallback signal


def test_call_typed_treats_template_placeholder_as_no_answer():
    assert is_placeholder("{answer}") and is_placeholder("[[ ## answer ## ]]")
    assert not is_placeholder("Paris") and not is_placeholder("{a} and {b} are sets")

    class Reader(dspy.Signature):
        """Answer from the notes."""

        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    lm, server = scripted_lm(['{"answer": "{answer}"}', '{"answer": "Paris"}'])
    assert call_typed(dspy.Predict(Reader), lm, question=f"capital? {unique()}").answer == "Paris"
    assert len(server.bodies) == 2


def test_call_typed_with_dummy_lm():
    q = f"q {unique()}"
    ok = DummyLM([{"verdict": "yes", "score": 9}], adapter=dspy.JSONAdapter())
    assert call_typed(dspy.Predict(Judge), ok, answer="a", gold=q).score == 9
    bad = DummyLM([{"verdict": "perhaps", "score": "n/a"}] * 2, adapter=dspy.JSONAdapter())
    with pytest.raises(LMOutputError):
        call_typed(dspy.Predict(Judge), bad, answer="a", gold=q + "x")


# ---- dead endpoints -----------------------------------------------------------------------------

def test_dead_endpoint_is_a_clear_error_in_bounded_time():
    port = closed_port()
    started = time.perf_counter()
    roles = LMRoles(task=f"http://127.0.0.1:{port}/v1#gone", timeout=2, num_retries=0, check=True, cache=False)
    with pytest.raises(LMUnavailableError) as err:
        roles.start()
    assert time.perf_counter() - started < 15
    message = str(err.value)
    assert "\n" not in message and "task LM" in message and str(port) in message
    assert isinstance(err.value, MemarchError) and err.value.role == "task"
    assert roles.task is None  # a failed start leaves nothing half-open


def test_dead_endpoint_during_a_typed_call_is_unavailable_not_a_parse_failure():
    lm = make_lm(f"http://127.0.0.1:{closed_port()}/v1#gone", timeout=2, num_retries=0, cache=False)
    with pytest.raises(LMUnavailableError):
        call_typed(dspy.Predict(Judge), lm, answer="a", gold=unique())


def test_guard_leaves_other_errors_alone():
    with pytest.raises(KeyError), guard("task"):
        raise KeyError("not an endpoint problem")


# ---- accounting ---------------------------------------------------------------------------------

def test_accounting_adds_up_per_role_and_per_trial():
    acct = Accounting()
    task, _ = scripted_lm(['{"verdict": "yes", "score": 1}'] * 3, prompt_tokens=50, completion_tokens=5)
    judge, _ = scripted_lm(['{"verdict": "no", "score": 0}'], prompt_tokens=30, completion_tokens=3)
    acct.attach(task, "task")
    acct.attach(judge, "judge")
    tag = unique()
    call_typed(dspy.Predict(Judge), task, answer="a", gold=tag)
    before = acct.snapshot()
    call_typed(dspy.Predict(Judge), task, answer="b", gold=tag)
    call_typed(dspy.Predict(Judge), task, answer="c", gold=tag)
    call_typed(dspy.Predict(Judge), judge, answer="d", gold=tag)
    total = acct.snapshot()
    assert total.roles["task"].calls == 3 and total.roles["task"].tokens_in == 150
    assert total.roles["task"].tokens_out == 15 and total.roles["judge"].tokens_in == 30
    trial = acct.delta(before).to_metrics()
    assert trial["lm_calls_task"] == 2 and trial["tokens_in_task"] == 100 and trial["tokens_out_task"] == 10
    assert trial["lm_calls_judge"] == 1 and trial["tokens_out_judge"] == 3
    assert trial["lm_calls"] == 3 and trial["tokens_in"] == 130 and trial["tokens_out"] == 13
    assert trial["latency_s_task"] > 0 and trial["lm_errors"] == 0
    assert trial["lm_latency_s"] == pytest.approx(trial["latency_s_task"] + trial["latency_s_judge"], abs=1e-5)
    assert "latency_s" not in trial  # that name is the trial's own latency


def test_accounting_counts_cache_hits_without_tokens(tmp_path):
    configure_lm_cache(tmp_path / "lm")
    try:
        server = ScriptedServer(['{"verdict": "yes", "score": 4}'] * 2, prompt_tokens=40, completion_tokens=4)
        lm = dspy.LM("local/cached", engine=LlamaCppEngine(server), max_tokens=256, temperature=0.0,
                     num_retries=0, cache=True)
        acct = Accounting()
        acct.attach(lm, "task")
        tag = unique()
        first = call_typed(dspy.Predict(Judge), lm, answer="x", gold=tag)
        again = call_typed(dspy.Predict(Judge), lm, answer="x", gold=tag)
        assert (first.score, again.score) == (4, 4) and len(server.bodies) == 1
        usage = acct.snapshot().roles["task"]
        assert (usage.calls, usage.cached, usage.tokens_in, usage.tokens_out) == (2, 1, 40, 4)
        assert any((tmp_path / "lm").iterdir())  # the answer is on disk for the next run
    finally:
        configure_lm_cache(tmp_path / "lm", enabled=False)


def test_accounting_counts_failed_calls_as_errors():
    acct = Accounting()
    lm = make_lm(f"http://127.0.0.1:{closed_port()}/v1#gone", timeout=2, num_retries=0, cache=False)
    acct.attach(lm, "meta")
    with pytest.raises(LMUnavailableError), guard("meta"):
        lm("hello")
    usage = acct.snapshot().roles["meta"]
    assert usage.errors == 1 and usage.calls == 0


# ---- roles, shared server, CLI options ----------------------------------------------------------

class FakeXServer:
    alive = 0

    def __init__(self):
        FakeXServer.alive += 1
        self.listening_address = "http://127.0.0.1:1"

    def handle_chat_completions(self, body):
        return ScriptedServer(["OK"]).chat(body)

    def __del__(self):
        FakeXServer.alive -= 1


@pytest.fixture
def fake_local(monkeypatch):
    loads = []

    def fake_load(self):
        loads.append(self)
        self._server = FakeXServer()
        self.base_url = self._server.listening_address
        self.load_s = 0.0

    monkeypatch.setattr(local_mod.LocalServer, "_load", fake_load)
    FakeXServer.alive = 0
    return loads


def test_roles_share_one_local_server_and_release_it_on_error(fake_local):
    with pytest.raises(RuntimeError):
        with LMRoles(task="local", meta="local", judge="none", cache=False) as roles:
            assert len(fake_local) == 1 and roles.server.running
            assert roles.task is not roles.meta and roles.judge is None  # one LM per role: per-role usage
            raise RuntimeError("trial crashed")
    assert not fake_local[0].running and FakeXServer.alive == 0


def test_ctrl_c_releases_the_local_server(fake_local):
    with pytest.raises(KeyboardInterrupt):
        with LMRoles(task="local", cache=False):
            raise KeyboardInterrupt
    assert not fake_local[0].running and FakeXServer.alive == 0


def test_roles_resources_carry_all_three_roles(fake_local, hash_resources):
    with LMRoles(task="local", judge="local", meta="none", cache=False) as roles:
        res = roles.resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir)
        assert res.lm is roles.task and res.lm_available
        assert res.extra["judge_lm"] is roles.judge and res.extra["meta_lm"] is None
        assert res.extra["lm_roles"] is roles


def test_local_server_counts_users():
    server = local_mod.LocalServer()
    server._server, server._users = object(), 2
    server.stop()
    assert server.running
    server.stop()
    assert not server.running


def test_cli_options_build_roles():
    parser = argparse.ArgumentParser()
    add_lm_arguments(parser)
    args = parser.parse_args(["--lm", "openai/gpt-4o-mini", "--judge-lm", "http://h:1/v1",
                              "--lm-model", "qwen", "--lm-timeout", "5", "--no-lm-cache", "--lm-no-schema"])
    roles = roles_from_args(args, check=False)
    assert roles.describe() == {"task": "openai/gpt-4o-mini", "meta": "openai/gpt-4o-mini",
                                "judge": "http://h:1/v1#openai/qwen"}
    assert roles.timeout == 5 and roles.cache is False and roles.json_schema is False
    assert roles_from_args(parser.parse_args([])).any_lm is False


def test_memarch_lm_command_reports_a_dead_endpoint(capsys):
    from memarch.cli import main

    assert main(["lm", "--lm", f"http://127.0.0.1:{closed_port()}/v1#gone", "--lm-timeout", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("memarch: error: task LM") and err.count("\n") == 1
    assert main(["lm", "--lm", "none"]) == 0
