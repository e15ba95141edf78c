"""`memarch serve` under load, side by side on its backends (issues 21 and 34): a memory prefilled with
``--items`` items over ``--users`` users, served by real processes on loopback — SQLite with one
server, PostgreSQL with one, PostgreSQL with two servers sharing it (a throwaway cluster,
benchmarks/pg_cluster.py) — and ``--clients`` concurrent clients (asyncio + httpx, one keep-alive
connection each, no think time) doing add / search 1:4 for ``--seconds`` on each. Every client acts
through a token scoped to the user it asks for.

    python benchmarks/bench_serve.py [--items 100000] [--seconds 60] [--clients 16] [--users 8]
        [--configs sqlite,postgresql,postgresql-2] [--embedder hash|bundled] [--half-open 300] [--no-crash]

Per configuration, in one table: throughput, search and add latency percentiles, the servers' CPU
per request (CPU-seconds of the server processes over the requests they answered). Checked, not just
timed: every response's items belong to the user asked for, every acknowledged add is there
afterwards (GET by id); on two servers, how long an add acknowledged by one takes to be found by a
search on the other, and ``kill -9`` of one under load (every add it acknowledged is on the other);
``--half-open`` stalled connections beside ``/health``; for SQLite, ``kill -9`` under load, a
restart, every acknowledged add there and ``PRAGMA integrity_check`` ok. Prints the machine's load
(``uptime``); exits 1 when a correctness check fails (latency goals are reported, not enforced).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402

from bench_memory_app import message  # noqa: E402  (the same generated chat messages)
from serve_clients import Tally, half_open, lag, load, load_many, missing, pct, report, solo  # noqa: E402

GOAL_SEARCH_P95_MS, GOAL_ADD_P95_MS = 50.0, 100.0
GOAL_CPU_MS = 2.5  # issue 34: server CPU per request at 100k items, hash embedder
ARCH = {"schema_version": "1", "encode": ["turn"], "store": "hybrid", "retrieve": "hybrid", "manage": "lightweight"}
EMBEDDERS = {"hash": "hash", "bundled": "all-MiniLM-L6-v2"}


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return f"load average: {os.getloadavg()}"


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of ``pid`` and its live children (from /proc:
    the workers of ``--workers``)."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return own + sum(cpu_seconds(k) for k in _children(pid))
    except (OSError, IndexError, ValueError):
        return float("nan")


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            pass
    return out


def prefill(program: Path, path: Path, items: int, users: list[str], seed: int) -> float:
    """``items`` one-message sessions round-robin over ``users`` through `Memory.add_many`; items/s."""
    from memarch import Memory

    rng = random.Random(seed)
    t0 = time.perf_counter()
    with Memory.load(program, path=path) as memory:
        step = 5000
        for start in range(0, items, step):
            sessions = [{"messages": message(rng), "user_id": users[i % len(users)], "timestamp": 1.7e9 + i}
                        for i in range(start, min(items, start + step))]
            memory.add_many(sessions)
            print(f"  prefill {min(items, start + step)}/{items} ({time.perf_counter() - t0:.0f} s)", flush=True)
        stored = memory.stats()
    print(f"  stored: {stored.get('items')} items, {stored.get('episodes')} episodes")
    return items / (time.perf_counter() - t0)


def _stored(program: Path, path: Path | str) -> int:
    """Items already in the memory at ``path`` (0 when there is none yet)."""
    if "://" not in str(path) and not (Path(path) / "memory.db").exists():
        return 0
    from memarch import Memory

    with Memory.load(program, path=path) as memory:
        return sum(memory.stats()["items"].values())


class Server:
    """``memarch serve`` as a child process on a free loopback port."""

    def __init__(self, program: Path, path: Path, tokens: Path, log: Path, workers: int = 1):
        self.args, self.log, self.workers = (program, path, tokens), log, workers
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self, timeout: float = 1800) -> float:
        """Start it and wait for /health; seconds until healthy (loading the memory)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        program, path, tokens = self.args
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "memarch", "serve", str(program), "--path", str(path),
                                      "--port", str(self.port), "--token-file", str(tokens), "--no-access-log",
                                      "--log-level", "warning", "--workers", str(self.workers)],
                                     stdout=subprocess.DEVNULL, start_new_session=True,
                                     stderr=open(self.log, "a"))
        while time.perf_counter() - t0 < timeout:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited {self.proc.returncode}; see {self.log}")
            try:
                if httpx.get(f"{self.url}/health", timeout=30).status_code == 200:
                    return time.perf_counter() - t0
            except httpx.TransportError:
                time.sleep(0.25)
        raise SystemExit("server not healthy in time")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """``kill -9`` of the server: its process group, every worker with it."""
        os.killpg(self.proc.pid, signal.SIGKILL)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)


@dataclass
class Row:
    """One configuration's figures, for the side-by-side table."""

    name: str
    requests: int = 0
    seconds: float = 0.0
    server_cpu: float = 0.0
    tally: Tally | None = None
    lost: int = 0
    acked: int = 0
    notes: list[str] = field(default_factory=list)


def prefill_into(program: Path, path: str, items: int, users: list[str], seed: int) -> None:
    have = _stored(program, path)
    if have < items:
        fill_rate = prefill(program, path, items - have, users, seed + have)
        print(f"prefill {path}: {items - have} items at {fill_rate:.0f} items/s (Memory.add_many)", flush=True)
    else:
        print(f"prefill: {have} items already in {path}")


def run_config(name: str, program: Path, path: str, servers: int, token_file: Path, log: Path, args,
               tokens: dict[str, str], admin: str, seed: int) -> Row:
    """Start ``servers`` servers on ``path``, measure one client alone and the load, check every
    acknowledged add and every response's user, stop them."""
    row = Row(name)
    procs = [Server(program, Path(path) if "://" not in path else path, token_file, log, args.workers)
             for _ in range(servers)]
    for p in procs:
        print(f"[{name}] server healthy after {p.start():.1f} s", flush=True)
    urls = [p.url for p in procs]
    try:
        if args.solo:
            t0 = time.perf_counter()
            report(f"[{name}] one client alone", asyncio.run(solo(urls[0], tokens, args.solo, seed + 7)),
                   time.perf_counter() - t0)
        t0, cpu0 = time.perf_counter(), [cpu_seconds(p.proc.pid) for p in procs]
        tally = asyncio.run(load_many(urls, tokens, args.clients, args.seconds, seed))
        row.seconds = time.perf_counter() - t0
        row.server_cpu = sum(cpu_seconds(p.proc.pid) - c for p, c in zip(procs, cpu0))
        row.requests, row.tally = len(tally.add_ms) + len(tally.search_ms), tally
        report(f"[{name}] load", tally, row.seconds)
        lost = asyncio.run(missing(urls[-1], admin, tally.acked, tally))
        row.acked, row.lost = len(tally.acked), len(lost)
        if servers > 1:
            lags = asyncio.run(lag(urls, tokens))
            row.notes.append(f"add on one server found by a search on the other: max {max(lags) * 1e3:.0f} ms, "
                             f"median {np.median(lags) * 1e3:.0f} ms over {len(lags)} adds")
            crash = asyncio.run(load_many(urls, tokens, args.clients, 2 * args.crash_seconds, seed + 1,
                                          kill_after=args.crash_seconds, kill=procs[0].kill))
            procs[0].proc.wait()
            gone = asyncio.run(missing(urls[1], admin, crash.acked, crash))
            row.notes.append(f"kill -9 of one server under load: {len(crash.acked) - len(gone)}/{len(crash.acked)} "
                             f"acknowledged adds on the other; {len(crash.leaks)} items of another user")
            row.lost += len(gone)
            row.tally.leaks += crash.leaks
        if args.half_open:
            took = half_open(procs[-1].port, urls[-1], args.half_open)
            row.notes.append(f"{args.half_open} half-open connections: /health answered in {took * 1e3:.0f} ms")
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.stop()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=100_000, help="items stored before the load (default 100k)")
    ap.add_argument("--seconds", type=float, default=60, help="duration of each load phase (default 60)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--workers", type=int, default=1, help="memarch serve --workers (processes per server)")
    ap.add_argument("--embedder", choices=sorted(EMBEDDERS), default="hash")
    ap.add_argument("--configs", default="sqlite,postgresql,postgresql-2",
                    help="side by side: sqlite (one server), postgresql (one), postgresql-2 (two servers on one "
                         "PostgreSQL memory, clients spread over them); default all three")
    ap.add_argument("--crash-seconds", type=float, default=10, help="seconds of load before a kill -9 (default 10)")
    ap.add_argument("--no-crash", action="store_true", help="skip the SQLite kill -9 and restart phase")
    ap.add_argument("--half-open", type=int, default=300, help="half-open connections beside /health (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--solo", type=int, default=300, help="requests of one client alone, before the load")
    ap.add_argument("--dir", help="work here and keep it (a later run tops the SQLite memory up to --items "
                                  "instead of filling it again); default: a temporary directory, removed")
    ap.add_argument("--data", default=None, help="ignored (make bench passes it to every benchmark)")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    bad = [c for c in configs if c not in ("sqlite", "postgresql", "postgresql-2")]
    if bad:
        ap.error(f"--configs: unknown {bad[0]!r} (sqlite, postgresql, postgresql-2)")
    tmp = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="memarch-bench-serve-"))
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["MEMARCH_CACHE_DIR"] = str(tmp / "cache")  # the server (a child) inherits it
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources

    program, path, log = tmp / "program.json", tmp / "mem", tmp / "server.log"
    resources = Resources(embedder=Embedder(EMBEDDERS[args.embedder], cache_dir=tmp / "cache"), cache_dir=tmp / "cache")
    if not program.exists():
        MemoryProgram(Architecture.from_dict(ARCH), resources=resources).save(program, include_memory=False)
    users = [f"user{u}" for u in range(args.users)]
    tokens = {u: f"bench-{u}-{os.urandom(12).hex()}" for u in users}
    admin = f"bench-admin-{os.urandom(12).hex()}"
    token_file = tmp / "tokens"
    token_file.write_text(f"{admin}\n" + "".join(f"{t} {u}\n" for u, t in tokens.items()))
    token_file.chmod(0o600)
    print(f"bench_serve: {args.items} items over {args.users} users, {args.clients} clients x {args.seconds:.0f} s, "
          f"add:search 1:4, {args.embedder} embedder, configurations {', '.join(configs)}, "
          f"turn|hybrid|hybrid|lightweight; {tmp}")
    print(f"before: {uptime()}")
    rows: list[Row] = []
    failed = False
    seed = args.seed + _stored(program, path)
    with contextlib.ExitStack() as stack:
        pg_url = None
        if any(c.startswith("postgresql") for c in configs):
            import pg_cluster

            if not pg_cluster.available():
                print(f"PostgreSQL binaries not found in {pg_cluster.PG_BIN}: the postgresql rows are skipped")
                configs = [c for c in configs if not c.startswith("postgresql")]
            else:
                pg_url = stack.enter_context(pg_cluster.running_postgres()) + "?schema=bench"
        if "sqlite" in configs:
            prefill_into(program, str(path), args.items, users, args.seed)
            rows.append(run_config("sqlite, 1 server", program, str(path), 1, token_file, log, args, tokens, admin, seed))
            if not args.no_crash:
                failed |= crash_and_restart(program, path, token_file, log, args, tokens, admin, seed)
        if pg_url is not None:
            prefill_into(program, pg_url, args.items, users, args.seed)
            for c in configs:
                if c.startswith("postgresql"):
                    n = 2 if c == "postgresql-2" else 1
                    rows.append(run_config(f"postgresql, {n} server{'s' * (n > 1)}", program, pg_url, n, token_file,
                                           log, args, tokens, admin, seed + 11 * n))
    print(f"\nload during the runs: {uptime()}")
    print("\n| configuration | requests/s | search p50 / p95 / p99 ms | add p50 / p95 / p99 ms | server CPU per request | "
          "errors | items of another user | acknowledged adds missing |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r.tally
        print(f"| {r.name} | {r.requests / r.seconds:.0f} | {pct(t.search_ms)} | {pct(t.add_ms)} | "
              f"{r.server_cpu / max(r.requests, 1) * 1e3:.2f} ms | {len(t.errors)} | {len(t.leaks)} | {r.lost}/{r.acked} |")
        failed |= bool(t.errors or t.leaks or r.lost)
    for r in rows:
        for note in r.notes:
            print(f"- {r.name}: {note}")
    for r in rows:
        cpu = r.server_cpu / max(r.requests, 1) * 1e3
        search_p95 = np.percentile(r.tally.search_ms, 95) if r.tally.search_ms else float("nan")
        add_p95 = np.percentile(r.tally.add_ms, 95) if r.tally.add_ms else float("nan")
        print(f"goals, {r.name}: server CPU per request <= {GOAL_CPU_MS} ms: {'met' if cpu <= GOAL_CPU_MS else 'MISSED'} "
              f"({cpu:.2f}); search p95 < {GOAL_SEARCH_P95_MS:.0f} ms: "
              f"{'met' if search_p95 < GOAL_SEARCH_P95_MS else 'MISSED'} ({search_p95:.1f}); add p95 < "
              f"{GOAL_ADD_P95_MS:.0f} ms: {'met' if add_p95 < GOAL_ADD_P95_MS else 'MISSED'} ({add_p95:.1f})")
    print(f"correctness: {'FAILED' if failed else 'ok'}")
    print(f"after: {uptime()}")
    if not args.dir:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def crash_and_restart(program: Path, path: Path, token_file: Path, log: Path, args, tokens: dict[str, str],
                      admin: str, seed: int) -> bool:
    """SQLite: the load, ``kill -9`` of the server after ``--crash-seconds``, a restart on the same
    path; every add acknowledged before the kill is there and ``PRAGMA integrity_check`` says ok.
    True when a check failed."""
    server = Server(program, path, token_file, log, args.workers)
    server.start()
    t0 = time.perf_counter()
    crash = asyncio.run(load(server.url, tokens, args.clients, 2 * args.crash_seconds, seed + 1,
                             kill_after=args.crash_seconds, kill=server.kill))
    server.proc.wait()
    report("[sqlite] crash phase (kill -9 under load)", crash, time.perf_counter() - t0)
    print(f"  requests cut by the kill: {crash.cut}")
    print(f"  restarted, healthy after {server.start():.1f} s", flush=True)
    lost_after = asyncio.run(missing(server.url, admin, crash.acked, crash))
    print(f"  acknowledged adds present after kill -9 + restart: {len(crash.acked) - len(lost_after)}/{len(crash.acked)}")
    print(f"  server stopped (SIGTERM): exit {server.stop()}")
    with sqlite3.connect(path / "memory.db") as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    print(f"  PRAGMA integrity_check: {integrity}")
    for e in lost_after[:5]:
        print(f"  ! lost {e}")
    return bool(crash.leaks or lost_after or integrity != "ok" or crash.errors)


if __name__ == "__main__":
    sys.exit(main())
