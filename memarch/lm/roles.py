"""The three LM roles of memarch — task (reader, agent, LM encoders and modules), meta (proposer,
diagnoser) and judge — built from ``--lm`` strings, with one shared embedded server and accounting."""
from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from memarch.lm.accounting import Accounting
from memarch.lm.config import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    LOCAL_MAX_TOKENS,
    LMSpec,
    configure_lm_cache,
    offline_model_metadata,
)
from memarch.lm.engine import LlamaCppEngine
from memarch.lm.errors import LMUnavailableError
from memarch.lm.local import LOCAL_MODEL, LocalServer

if TYPE_CHECKING:
    import dspy

    from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)

ROLES = ("task", "meta", "judge")
SCHEMA_PROVIDER = "memarch_url"  # an OpenAI-compatible server by base URL, JSON schema declared

_shared_server: LocalServer | None = None


def make_lm(spec: "str | LMSpec | None", *, server: LocalServer | None = None, model: str | None = None,
            timeout: float = DEFAULT_TIMEOUT_S, num_retries: int = DEFAULT_RETRIES,
            max_tokens: int | None = None, temperature: float | None = None,
            cache: bool = True, json_schema: bool = True) -> "dspy.LM | None":
    """A ``dspy.LM`` for an ``--lm`` string, or None for ``none``.

    Example::

        lm = make_lm("openai/gpt-4o-mini")                 # hosted, key from OPENAI_API_KEY
        lm = make_lm("http://localhost:11434/v1#llama3")  # Ollama / vLLM / LM Studio / llama.cpp
        with LocalServer() as srv:
            lm = make_lm("local", server=srv)             # the embedded SmolLM2-135M

    ``local`` without ``server`` starts a process-wide embedded server that lives until exit;
    prefer :class:`LMRoles` or :func:`local_lm`, which release it. A base URL's API key is read
    from ``MEMARCH_LM_API_KEY`` (servers such as Ollama accept any); typed calls to it ask for
    JSON-schema constrained decoding unless ``json_schema=False`` (for a server that rejects it).
    """
    import dspy

    parsed = LMSpec.parse(spec, model=model)
    if parsed.kind == "none":
        return None
    offline_model_metadata()
    if parsed.kind == "local":
        if server is None:
            server = _shared_local_server()
        # Greedy decoding: answers are reproducible and the disk cache is exact.
        return dspy.LM(LOCAL_MODEL, engine=LlamaCppEngine(server), cache=cache,
                       max_tokens=max(max_tokens or LOCAL_MAX_TOKENS, 256),
                       temperature=0.0 if temperature is None else temperature, num_retries=1)
    kwargs: dict[str, Any] = {"timeout": timeout}
    name = parsed.model
    if parsed.kind == "url":
        kwargs["api_base"] = parsed.api_base
        kwargs["api_key"] = os.environ.get("MEMARCH_LM_API_KEY", "none")
        if json_schema:
            name = f"{_declare_schema_server()}/{name.split('/', 1)[1]}"
    if temperature is not None:
        kwargs["temperature"] = temperature
    return dspy.LM(name, cache=cache, num_retries=num_retries,
                   max_tokens=max_tokens or DEFAULT_MAX_TOKENS, **kwargs)


def _declare_schema_server() -> str:
    """Declare (once) an OpenAI-compatible provider that takes JSON-schema ``response_format``.

    DSPy knows nothing of a model behind an arbitrary base URL, so it would not ask for a schema;
    llama.cpp, vLLM, Ollama and LM Studio all honour one (constrained decoding). The LM's own
    ``api_base`` decides where requests go; the address here is only the declaration's default.
    """
    from dspy.lm15 import AccessPolicy, ModelSupport, OpenAIChatCompat, ProviderDefinition, register_provider

    access = AccessPolicy(provider=SCHEMA_PROVIDER, env_keys=("MEMARCH_LM_API_KEY",),
                          base_url="http://localhost:8000/v1")
    compat = OpenAIChatCompat(instruction_role="system", max_tokens_field="max_tokens", json_schema="send")
    register_provider(ProviderDefinition.chat(access, compat=compat), supports=ModelSupport(response_schema=True))
    return SCHEMA_PROVIDER


def _shared_local_server() -> LocalServer:
    global _shared_server
    if _shared_server is None or not _shared_server.running:
        _shared_server = LocalServer().start()
    return _shared_server


@contextmanager
def local_lm(threads: int | None = None, **lm_kwargs: Any) -> Iterator["dspy.LM"]:
    """The embedded model as a ``dspy.LM`` for the duration of a ``with`` block.

    Example::

        with local_lm(threads=1) as lm, dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            print(dspy.Predict("question -> answer: int")(question="2 + 2?").answer)
    """
    with LocalServer(threads=threads) as server:
        yield make_lm("local", server=server, **lm_kwargs)


class LMRoles:
    """The task, meta and judge LMs of one run, built from specs; a context manager.

    Example::

        with LMRoles(task="local", judge="openai/gpt-4o-mini") as roles:
            resources = roles.resources(embedder=Embedder("hash"))
            before = roles.accounting.snapshot()
            ...  # evaluate a trial with resources (resources.lm is roles.task)
            cost = roles.accounting.delta(before).to_metrics()

    Entering configures DSPy's disk cache, starts the embedded server once however many roles
    use ``local``, builds one ``dspy.LM`` per role (so usage is counted per role) and, with
    ``check=True``, sends each distinct endpoint one short call so a dead endpoint fails at once
    with :class:`LMUnavailableError`. Leaving it — also on an error or Ctrl-C — releases the server.

    Args:
        task: spec for the reader/agent, LM encoders and LM modules (``none`` = the LM-free space).
        meta: spec for the proposer and diagnoser (default: same as ``task``).
        judge: spec for the answer judge (default: same as ``task``).
        model: served model name for base-URL specs without ``#model``.
        cache_dir: DSPy's disk cache directory (default ``$MEMARCH_CACHE_DIR/lm``).
        cache: cache LM calls on disk.
        threads: CPU threads of the embedded model.
        timeout: seconds per request to a remote endpoint; ``num_retries`` retries after that.
        json_schema: ask base-URL servers for JSON-schema constrained decoding.
        check: probe each endpoint on entry.
    """

    def __init__(self, task: "str | LMSpec | None" = None, meta: "str | LMSpec | None" = None,
                 judge: "str | LMSpec | None" = None, *, model: str | None = None,
                 cache_dir: str | None = None, cache: bool = True, threads: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S, num_retries: int = DEFAULT_RETRIES,
                 max_tokens: int | None = None, json_schema: bool = True, check: bool = False,
                 accounting: Accounting | None = None):
        task_spec = LMSpec.parse(task, model=model)
        self.specs: dict[str, LMSpec] = {
            "task": task_spec,
            "meta": LMSpec.parse(meta, model=model) if meta is not None else task_spec,
            "judge": LMSpec.parse(judge, model=model) if judge is not None else task_spec,
        }
        self.cache_dir = cache_dir
        self.cache = cache
        self.threads = threads
        self.timeout = timeout
        self.num_retries = num_retries
        self.max_tokens = max_tokens
        self.json_schema = json_schema
        self.check_on_enter = check
        self.accounting = accounting or Accounting()
        self.server: LocalServer | None = None
        self.lms: dict[str, Any] = {role: None for role in ROLES}

    @property
    def task(self) -> "dspy.LM | None":
        return self.lms["task"]

    @property
    def meta(self) -> "dspy.LM | None":
        return self.lms["meta"]

    @property
    def judge(self) -> "dspy.LM | None":
        return self.lms["judge"]

    @property
    def any_lm(self) -> bool:
        return any(spec.enabled for spec in self.specs.values())

    def start(self) -> "LMRoles":
        if self.any_lm:
            configure_lm_cache(self.cache_dir, enabled=self.cache)
        if any(spec.kind == "local" for spec in self.specs.values()) and self.server is None:
            self.server = LocalServer(threads=self.threads).start()
        try:
            for role, spec in self.specs.items():
                lm = make_lm(spec, server=self.server, timeout=self.timeout, num_retries=self.num_retries,
                             max_tokens=self.max_tokens, cache=self.cache, json_schema=self.json_schema)
                self.lms[role] = self.accounting.attach(lm, role) if lm is not None else None
            if self.check_on_enter:
                self.check()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.lms = {role: None for role in ROLES}

    def __enter__(self) -> "LMRoles":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def check(self) -> None:
        """One short uncached call per distinct endpoint; :class:`LMUnavailableError` if one fails."""
        done: set[str] = set()
        for role, lm in self.lms.items():
            spec = str(self.specs[role])
            if lm is None or spec in done:
                continue
            done.add(spec)
            probe = lm.copy(cache=False, num_retries=0)
            probe.callbacks = []  # a health check is not a trial's cost
            with guard(role, spec), _quiet("dspy.clients.lm"):  # a cut-off probe answer is fine
                probe("Reply with the word OK.", max_tokens=8)

    def resources(self, **kwargs: Any) -> "Resources":
        """``Resources`` whose ``lm`` is the task LM; the meta and judge LMs and this object ride in
        ``extra`` (``meta_lm``, ``judge_lm``, ``lm_roles``)."""
        from memarch.pipeline.resources import Resources

        extra = dict(kwargs.pop("extra", {}) or {})
        extra.update(lm_roles=self, meta_lm=self.meta, judge_lm=self.judge)
        return Resources(lm=self.task, extra=extra, **kwargs)

    def describe(self) -> dict[str, str]:
        return {role: str(spec) for role, spec in self.specs.items()}


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


# DSPy errors that mean "the endpoint is not usable now", as opposed to a bad request or a bug.
def _unavailable_types() -> tuple[type[BaseException], ...]:
    from dspy.utils import exceptions as e

    return (e.LMTransportError, e.LMTimeoutError, e.LMServerError, e.LMRateLimitError, e.LMAuthError,
            e.LMBillingError, e.LMNotConfiguredError, e.LMUnsupportedModelError)


def as_unavailable(exc: BaseException, role: str | None = None, spec: str | None = None) -> LMUnavailableError | None:
    """The one-line :class:`LMUnavailableError` for an endpoint failure, or None for other errors."""
    if isinstance(exc, LMUnavailableError):
        return exc
    if not isinstance(exc, _unavailable_types()):
        return None
    what = f"{role} LM" if role else "LM"
    where = f" ({spec})" if spec else ""
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return LMUnavailableError(f"{what}{where} unavailable: {type(exc).__name__}: {first_line}", role=role)



def raise_if_unavailable(exc: BaseException) -> None:
    """Re-raise an endpoint failure as :class:`LMUnavailableError` (the trial fails); return for any
    other error, which the caller may answer with its corrective retry or its LM-free rule.

    Example::

        except Exception as exc:
            raise_if_unavailable(exc)
            problem = str(exc)          # a bad answer: retry or fall back, counted
    """
    unavailable = as_unavailable(exc)
    if unavailable is not None:
        raise unavailable from exc

@contextmanager
def guard(role: str | None = None, spec: str | None = None) -> Iterator[None]:
    """Turn an endpoint failure inside the block into :class:`LMUnavailableError` (other errors pass).

    Example::

        with guard("task", "openai/gpt-4o-mini"):
            program.write(episode)
    """
    try:
        yield
    except Exception as exc:
        converted = as_unavailable(exc, role, spec)
        if converted is None or converted is exc:
            raise
        raise converted from exc
