"""Two ``memarch serve`` processes on one PostgreSQL memory (issue 34): an add acknowledged by either
is found by a search on the other, a user's deletion reaches both (its report verified, the other
server's ``remains`` empty), ``kill -9`` of one under load loses no acknowledged add, and no
response carries another user's item; a --path URL of another scheme is refused in one line."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid

import httpx

from test_serve_cli import free_port, program, serve, wait_healthy  # noqa: F401  (program: a fixture)


def start(program, url: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = serve(str(program), "--path", url, "--port", str(port), "--no-access-log")
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc)
    return proc, base


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def texts(base: str, user: str, query: str = "note", limit: int = 100) -> list[str]:
    r = httpx.post(f"{base}/v1/users/{user}/search", json={"query": query, "limit": limit}, timeout=30)
    assert r.status_code == 200, r.text
    hits = r.json()["results"]
    assert {h["user_id"] for h in hits} <= {user}
    return [h["text"].split(": ", 1)[1] for h in hits]


def listed(base: str, user: str) -> set[str]:
    """Every item text of ``user``, page after page (a fast server's load adds more than a page)."""
    out: set[str] = set()
    offset = 0
    while True:
        r = httpx.get(f"{base}/v1/users/{user}/memories", params={"limit": 1000, "offset": offset}, timeout=30)
        assert r.status_code == 200, r.text
        page = r.json()
        out |= {rec["text"].split(": ", 1)[1] for rec in page["items"]}
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return out


def test_two_servers_share_one_postgresql_memory(program, postgres_url):  # noqa: F811
    url = f"{postgres_url}?schema=s_{uuid.uuid4().hex[:10]}"
    a, base_a = start(program, url)
    b, base_b = start(program, url)
    try:
        lags = []
        for i in range(10):
            r = httpx.post(f"{base_a if i % 2 else base_b}/v1/users/ana/memories",
                           json={"messages": f"note {i} about the garden shed"}, timeout=30)
            assert r.status_code == 201, r.text
            t0 = time.monotonic()
            other = base_b if i % 2 else base_a
            while f"note {i} about the garden shed" not in texts(other, "ana", f"note {i} garden shed", 20):
                assert time.monotonic() - t0 < 1.0, "not visible on the other server within 1 s"
                time.sleep(0.01)
            lags.append(time.monotonic() - t0)
        assert max(lags) < 1.0
        httpx.post(f"{base_b}/v1/users/bob/memories", json={"messages": "bob's note about the secret recipe"}, timeout=30)
        assert texts(base_a, "bob", "secret recipe") == ["bob's note about the secret recipe"]
        assert "bob's note about the secret recipe" not in texts(base_a, "ana", "secret recipe")
        assert httpx.get(f"{base_b}/v1/users/bob/remains", timeout=30).json()["remains"] is True
        r = httpx.delete(f"{base_a}/v1/users/bob", timeout=30)
        assert r.status_code == 200 and r.json()["deleted"] == 1
        assert r.json()["verified"] and r.json()["removed"] == {"items": 1, "episodes": 1, "messages": 1,
                                                                "vectors": 1, "users": 1}
        remains = httpx.get(f"{base_b}/v1/users/bob/remains", timeout=30).json()  # the other server, caught up
        assert remains["remains"] is False and all(c["left"] == 0 for c in remains["checks"])
        assert texts(base_b, "bob", "secret recipe") == []  # the deletion reached the other server
        assert len(texts(base_b, "ana")) == 10
    finally:
        assert stop(a) == 0 and stop(b) == 0


def test_kill_9_of_one_server_under_load_loses_no_acknowledged_add(program, postgres_url):  # noqa: F811
    url = f"{postgres_url}?schema=k_{uuid.uuid4().hex[:10]}"
    a, base_a = start(program, url)
    b, base_b = start(program, url)
    acked: list[str] = []
    stop_flag = threading.Event()

    def load(base: str, tag: str) -> None:
        with httpx.Client(base_url=base, timeout=10) as client:
            i = 0
            while not stop_flag.is_set():
                text = f"{tag} load note {i}"
                try:
                    r = client.post("/v1/users/load/memories", json={"messages": text})
                except httpx.TransportError:
                    return  # the server was killed: an unacknowledged add may or may not be there
                if r.status_code == 201:
                    acked.append(text)
                i += 1

    threads = [threading.Thread(target=load, args=(base, tag)) for base, tag in ((base_a, "a"), (base_b, "b"))]
    try:
        for t in threads:
            t.start()
        time.sleep(3)
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=30)
        time.sleep(1)
        stop_flag.set()
        for t in threads:
            t.join(timeout=60)
        assert len([t for t in acked if t.startswith("a ")]) > 0 and len(acked) > 10
        stored = listed(base_b, "load")
        assert set(acked) <= stored, sorted(set(acked) - stored)[:5]
        c, base_c = start(program, url)  # a restarted server has them all too
        try:
            assert set(acked) <= listed(base_c, "load")
        finally:
            stop(c)
    finally:
        stop_flag.set()
        stop(b)
        if a.poll() is None:
            a.kill()


def test_a_path_url_of_another_scheme_is_refused_in_one_line(program, tmp_path):  # noqa: F811
    for path in ("redis://localhost:6379/0", "sqlite:///tmp/x", "mysql://u:secret@db/x"):
        r = subprocess.run([sys.executable, "-m", "memarch", "serve", str(program), "--path", path, "--port", "0"],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "memarch does not serve" in lines[0] and "secret" not in lines[0]
    assert not any(p.name.startswith(("redis:", "sqlite:", "mysql:")) for p in tmp_path.iterdir())  # no folder made
