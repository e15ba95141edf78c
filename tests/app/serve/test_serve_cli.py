"""``memarch serve`` as a process: it starts, answers over real HTTP (add, then search), and stops
on SIGTERM / SIGINT with exit 0 after closing the memory; and it refuses bad setups with one line
and exit 2 before serving anything (another address without a token, a token file others can read
or with a bad line, a missing program, a port in use, a path that is a file)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from memarch import Memory

ARCH = {"schema_version": "1", "encode": ["turn"], "store": "hybrid", "retrieve": "hybrid", "manage": "lightweight"}
TOKEN = "serve-test-token-0123456789abcdef"


@pytest.fixture
def program(tmp_path):
    """A saved program with the hash embedder (what ``memarch compile --output`` writes; a bare
    architecture file would load the bundled model)."""
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources

    path = tmp_path / "program.json"
    res = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)
    MemoryProgram(Architecture.from_dict(ARCH), resources=res).save(path, include_memory=False)
    return path


def token_file(tmp_path, mode=0o600, text=f"{TOKEN}\n"):
    f = tmp_path / "tokens"
    f.write_text(text)
    f.chmod(mode)
    return f


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memarch", "serve", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited {proc.returncode}: {proc.stderr.read()}")
        try:
            return httpx.get(f"{url}/health", timeout=5).json()
        except httpx.TransportError:
            time.sleep(0.2)
    raise AssertionError("server not healthy in time")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_real_server_adds_searches_and_stops_cleanly(program, tmp_path, sig):
    port = free_port()
    proc = serve(str(program), "--path", str(tmp_path / "mem"), "--port", str(port),
                 "--token-file", str(token_file(tmp_path)), "--no-access-log")
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_healthy(url, proc)["program"] == "turn|hybrid|hybrid|lightweight"
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            r = client.post("/v1/users/ana/memories", json={"messages": "I moved to Lisbon in May.",
                                                            "timestamp": "2026-05-03"})
            assert r.status_code == 201, r.text
            added = r.json()["items"][0]["id"]
            hits = client.post("/v1/users/ana/search", json={"query": "where did ana move?"}).json()["results"]
            assert [h["id"] for h in hits] == [added]
            assert httpx.get(f"{url}/v1/users/ana/memories").status_code == 401
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Finished server process" in err
    with Memory.load(program, path=tmp_path / "mem") as memory:  # what it acknowledged is on disk
        assert memory.get(added, user_id="ana").status == "active"


def memarch_serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memarch", "serve", *args], capture_output=True, text=True,
                          timeout=120)


def one_line_exit_2(p: subprocess.CompletedProcess, needle: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert needle in lines[0], lines[0]


def test_refusals_are_one_line_and_exit_2(program, tmp_path):
    mem = str(tmp_path / "mem")
    for host in ("0.0.0.0", "::", "192.0.2.10"):
        one_line_exit_2(memarch_serve(str(program), "--path", mem, "--host", host), "needs --token-file")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--mcp", "http", "--host", "0.0.0.0"),
                    "needs --token-file")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--mcp", "stdio", "--token-file",
                                  str(token_file(tmp_path))), "does not apply to --mcp stdio")
    loose = token_file(tmp_path, 0o644)
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--host", "0.0.0.0", "--token-file", str(loose)),
                    "mode 0644 lets group or others read it")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--token-file", str(loose)), "chmod 600")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--token-file",
                                  str(token_file(tmp_path, text="short\n"))), "at least 16")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--token-file",  # the line named, not the token
                                  str(token_file(tmp_path, text=f'# bots\n{TOKEN} ana "Ana Maria\n'))),
                    f"memarch: error: token file {tmp_path / 'tokens'}:2: user id 2: an unterminated quote")
    one_line_exit_2(memarch_serve(str(tmp_path / "missing.json"), "--path", mem, "--port", str(free_port())),
                    "missing.json")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    one_line_exit_2(memarch_serve(str(program), "--path", str(a_file), "--port", str(free_port())), "a-file")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        for workers in ("1", "2"):
            one_line_exit_2(memarch_serve(str(program), "--path", mem, "--port", str(busy.getsockname()[1]),
                                          "--workers", workers), "Address already in use")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--workers", "0"), "--workers must be at least 1")
    one_line_exit_2(memarch_serve(str(program), "--path", mem, "--max-connections-per-client", "0"),
                    "--max-connections-per-client must be at least 1, got 0")
    assert not os.path.exists(os.path.join(mem, "memory.db"))  # refused before the memory was opened
    assert json.loads(program.read_text())["architecture"]["store"] == "hybrid"


@pytest.mark.slow
def test_the_serve_benchmark_runs_and_checks_what_it_claims():
    """benchmarks/bench_serve.py at toy size, its three configurations side by side (SQLite, PostgreSQL
    with one and with two servers): load, every acknowledged add present, the lag between two servers,
    kill -9 of one, half-open connections, the SQLite crash and integrity."""
    bench = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "bench_serve.py")
    p = subprocess.run([sys.executable, bench, "--items", "200", "--seconds", "3", "--clients", "4",
                        "--users", "3", "--crash-seconds", "2", "--half-open", "50", "--solo", "20",
                        "--data", "ignored"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = p.stdout
    assert "errors 0; cross-user items 0" in out and "PRAGMA integrity_check: ok" in out
    assert "acknowledged adds present after kill -9 + restart:" in out and "correctness: ok" in out
    assert "load average" in out
    assert "| sqlite, 1 server |" in out
    if "postgresql rows are skipped" not in out:
        assert "| postgresql, 1 server |" in out and "| postgresql, 2 servers |" in out
        assert "found by a search on the other: max" in out and "kill -9 of one server under load:" in out
    assert "half-open connections: /health answered in" in out


def test_several_workers_share_one_memory_and_stop_together(program, tmp_path):
    """--workers 2: requests land on either process; each sees what the other committed."""
    port = free_port()
    proc = serve(str(program), "--path", str(tmp_path / "mem"), "--port", str(port), "--workers", "2",
                 "--no-access-log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        added = set()
        for i in range(12):  # a new connection each: the kernel spreads them over the workers
            r = httpx.post(f"{url}/v1/users/ana/memories", json={"messages": f"fact number {i}: code w{i}x"})
            added |= {x["id"] for x in r.json()["items"]}
        assert len(added) == 12
        for _ in range(8):
            hits = httpx.post(f"{url}/v1/users/ana/search", json={"query": "fact number code", "limit": 20}).json()
            assert {h["id"] for h in hits["results"]} == added
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err.count("Finished server process") == 2 and "Traceback" not in err


def test_a_worker_stops_when_its_parent_is_killed(program, tmp_path):
    """kill -9 of the parent leaves no worker serving on (Linux: PR_SET_PDEATHSIG)."""
    port = free_port()
    proc = serve(str(program), "--path", str(tmp_path / "mem"), "--port", str(port), "--workers", "2")
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/health", timeout=2)
        except httpx.TransportError:
            return
        time.sleep(0.2)
    raise AssertionError("a worker still answers after its parent was killed")
