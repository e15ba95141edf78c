"""The clients of `bench_serve.py`: concurrent asyncio + httpx clients adding and searching (1:4) on
one or several servers, each through a token scoped to its user, and what they saw (`Tally`:
latencies, acknowledged adds, errors, items of another user); how long an add on one server takes to
be found on another (`lag`); stalled half-open connections beside ``/health`` (`half_open`)."""
from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from dataclasses import dataclass, field

import httpx
import numpy as np

from bench_memory_app import message  # the same generated chat messages


@dataclass
class Tally:
    """What the clients saw: latencies, acknowledged adds, errors, cross-user leaks."""

    add_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    acked: list[tuple[str, str]] = field(default_factory=list)  # (user, item id) of every acknowledged add
    merged: int = 0        # adds acknowledged with no new item (the manager merged them)
    errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    cut: int = 0           # requests cut by the kill (crash phase only)


def pct(ms: list[float]) -> str:
    if not ms:
        return "-"
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return f"{p50:.1f} / {p95:.1f} / {p99:.1f}"


def check_users(records: list[dict], user: str, tally: Tally, what: str) -> None:
    for r in records:
        if r.get("user_id") != user:
            tally.leaks.append(f"{what} for {user} returned {r.get('id')} of {r.get('user_id')}")


async def client(n: int, url: str, tokens: dict[str, str], deadline: float, tally: Tally, seed: int,
                 stop: asyncio.Event, stop_after: int | None = None) -> None:
    """One client: a loop of add (1 in 5) or search for a random user, until the deadline, ``stop``
    or ``stop_after`` requests."""
    rng = random.Random(seed * 1000 + n)
    users = list(tokens)
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        i = 0
        while time.perf_counter() < deadline and not stop.is_set() and (stop_after is None or i < stop_after):
            user, i = rng.choice(users), i + 1
            headers = {"Authorization": f"Bearer {tokens[user]}"}
            add = rng.random() < 0.2
            t0 = time.perf_counter()
            try:
                if add:
                    r = await http.post(f"/v1/users/{user}/memories", headers=headers,
                                        json={"messages": f"{message(rng)} (client {n} add {i})"})
                else:
                    r = await http.post(f"/v1/users/{user}/search", headers=headers,
                                        json={"query": message(rng), "limit": 5})
            except httpx.TransportError as exc:
                if stop.is_set() or tally.cut:  # the server was killed under us
                    tally.cut += 1
                    return
                tally.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            ms = (time.perf_counter() - t0) * 1e3
            if r.status_code not in (200, 201):
                tally.errors.append(f"{r.status_code}: {r.text[:200]}")
                continue
            body = r.json()
            if add:
                tally.add_ms.append(ms)
                check_users(body["items"], user, tally, "add")
                tally.acked += [(user, x["id"]) for x in body["items"]]
                tally.merged += not body["items"]
            else:
                tally.search_ms.append(ms)
                check_users(body["results"], user, tally, "search")


async def load(url: str, tokens: dict[str, str], clients: int, seconds: float, seed: int,
               kill_after: float | None = None, kill=None) -> Tally:
    tally, stop = Tally(), asyncio.Event()
    deadline = time.perf_counter() + seconds
    tasks = [asyncio.create_task(client(n, url, tokens, deadline, tally, seed, stop)) for n in range(clients)]
    if kill_after is not None:
        await asyncio.sleep(kill_after)
        kill()
        stop.set()
    await asyncio.gather(*tasks)
    return tally


async def solo(url: str, tokens: dict[str, str], n: int, seed: int) -> Tally:
    """One client alone, one request at a time: what a request costs without queueing behind others."""
    tally = Tally()
    if n:
        await client(0, url, tokens, time.perf_counter() + 3600, tally, seed, asyncio.Event(), stop_after=n)
    return tally


async def missing(url: str, admin: str, acked: list[tuple[str, str]], tally: Tally) -> list[str]:
    """The acknowledged adds the server does not have (GET by id; superseded counts as there)."""
    sem, lost = asyncio.Semaphore(16), []
    async with httpx.AsyncClient(base_url=url, timeout=60, headers={"Authorization": f"Bearer {admin}"}) as http:
        async def one(user: str, item: str) -> None:
            async with sem:
                r = await http.get(f"/v1/users/{user}/memories/{item}")
            if r.status_code != 200:
                lost.append(f"{user}/{item}: {r.status_code}")
            else:
                check_users([r.json()], user, tally, "get")
        await asyncio.gather(*(one(u, i) for u, i in acked))
    return lost


def report(name: str, tally: Tally, seconds: float) -> None:
    done = len(tally.add_ms) + len(tally.search_ms)
    print(f"{name}: {done} requests in {seconds:.0f} s = {done / seconds:.0f}/s; "
          f"search p50/p95/p99 {pct(tally.search_ms)} ms ({len(tally.search_ms)}); "
          f"add p50/p95/p99 {pct(tally.add_ms)} ms ({len(tally.add_ms)}, {tally.merged} merged); "
          f"errors {len(tally.errors)}; cross-user items {len(tally.leaks)}", flush=True)
    for e in (tally.errors + tally.leaks)[:5]:
        print(f"  ! {e}")


async def lag(urls: list[str], tokens: dict[str, str], n: int = 20) -> list[float]:
    """Seconds until an add acknowledged by one server is found by a search on the other (each of
    ``n`` adds, alternating the servers)."""
    out = []
    user = next(iter(tokens))
    headers = {"Authorization": f"Bearer {tokens[user]}"}
    async with httpx.AsyncClient(timeout=60, headers=headers) as http:
        for i in range(n):
            one, other = urls[i % 2], urls[(i + 1) % 2]
            marker = f"lagcheck{os.urandom(4).hex()}"
            r = await http.post(f"{one}/v1/users/{user}/memories", json={"messages": f"note {marker}"})
            assert r.status_code == 201, r.text
            t0 = time.perf_counter()
            while True:
                r = await http.post(f"{other}/v1/users/{user}/search", json={"query": marker, "limit": 3})
                if any(marker in h["text"] for h in r.json()["results"]):
                    break
                if time.perf_counter() - t0 > 10:
                    raise SystemExit(f"an add on {one} not visible on {other} after 10 s")
            out.append(time.perf_counter() - t0)
    return out


def half_open(port: int, url: str, n: int) -> float:
    """Open ``n`` connections that send half a request line and stall; seconds /health takes then."""
    held = []
    try:
        for i in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /v1/users/x/search HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"GE")
            held.append(s)
        t0 = time.perf_counter()
        ok = httpx.get(f"{url}/health", timeout=10).status_code == 200
        took = time.perf_counter() - t0
        return took if ok else float("inf")
    finally:
        for s in held:
            s.close()


async def load_many(urls: list[str], tokens: dict[str, str], clients: int, seconds: float, seed: int,
                    kill_after: float | None = None, kill=None) -> Tally:
    """`load` with the clients spread over several servers (client n talks to server n % len)."""
    tally, stop = Tally(), asyncio.Event()
    deadline = time.perf_counter() + seconds
    tasks = [asyncio.create_task(client(n, urls[n % len(urls)], tokens, deadline, tally, seed, stop))
             for n in range(clients)]
    if kill_after is not None:
        await asyncio.sleep(kill_after)
        kill()
        tally.cut = max(tally.cut, 1)  # the killed server's clients stop; the other's go on to the deadline
    await asyncio.gather(*tasks)
    return tally
