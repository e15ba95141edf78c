"""``memarch serve --workers N``: N forked server processes on one listening socket.

The parent loads the memory once and forks; each worker starts with that memory (copy-on-write),
opens its own SQLite connection on its first call (`MemoryDB`), and catches up on what the others
commit before each call, as any two processes sharing a path do (docs/memory_app.md). The kernel
spreads connections over the workers. SIGTERM / SIGINT to the parent stop every worker gracefully;
a worker that dies on its own stops the others (exit 1), for a supervisor to restart the lot."""
from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Callable

from memarch.errors import MemarchError


def serve_forked(workers: int, serve_one: Callable[[], int]) -> int:
    """Run ``serve_one()`` in ``workers`` forked children until they exit; 0 when all exited 0."""
    children: set[int] = set()
    stopping = False

    def stop_all(_sig: int | None = None, _frame: object = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    sys.stderr.flush()
    parent = os.getpid()
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:  # the worker: serve, then leave without running the parent's cleanup
            code = 1
            try:
                _stop_with_parent(parent)
                code = serve_one()
            except MemarchError as exc:  # e.g. its socket: one line, as the command says it
                sys.stderr.write(f"memarch serve: worker {os.getpid()}: {exc}\n")
            except BaseException:  # noqa: BLE001 - a worker must never return into the parent's code
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children.add(pid)
    previous = {sig: signal.signal(sig, stop_all) for sig in (signal.SIGTERM, signal.SIGINT)}
    status = 0
    try:
        while children:
            try:
                pid, raw = os.wait()
            except ChildProcessError:
                break
            children.discard(pid)
            code = os.waitstatus_to_exitcode(raw)
            status = status or (code != 0)
            if not stopping:
                sys.stderr.write(f"memarch serve: worker {pid} exited ({code}); stopping the others\n")
                status = 1
                stop_all()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return int(status)


def _stop_with_parent(parent: int) -> None:
    """Linux: SIGTERM this worker when the parent dies (a ``kill -9`` of the parent leaves no
    orphan serving on); elsewhere a no-op."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)
