"""Server CPU per request of two (or more) checkouts side by side, for a fixed amount of work.

`bench_serve.py` drives a server for a fixed time: its CPU per request depends on the mix of adds
and searches a window happened to hold (an add costs ~10x a search), so two runs of one checkout can
differ by 10%. This script fixes the work instead: one `memarch serve` per checkout on one
throwaway PostgreSQL cluster (a schema each, ITEMS items prefilled by that checkout's own code, hash
embedder), 16 clients sending the same seeded mix of adds and searches, REQUESTS requests a round
after 160 warm-up requests; the server's CPU seconds are read from /proc; checkouts alternate round
by round. Issue 48's serving core was checked with it (docs/results.md).

Usage::

    python benchmarks/bench_serve_checkouts.py --rounds 3 --requests 2992 --items 100000 \\
        old=/path/to/worktree/at/10e6b95 new=.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLIENTS = 16
USERS = [f"user{u}" for u in range(8)]


def prefill(tmp: Path, url: str, items: int) -> None:
    """Runs in a child whose PYTHONPATH is the checkout: its program file and its writes."""
    os.environ["MEMARCH_CACHE_DIR"] = str(tmp / "cache")
    import bench_serve as b
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources

    tmp.mkdir(parents=True, exist_ok=True)
    program = tmp / "program.json"
    if not program.exists():
        resources = Resources(embedder=Embedder("hash", cache_dir=tmp / "cache"), cache_dir=tmp / "cache")
        MemoryProgram(Architecture.from_dict(b.ARCH), resources=resources).save(program, include_memory=False)
    b.prefill_into(program, url, items, USERS, 0)


async def drive(url: str, tokens: dict[str, str], n: int, seed: int):
    import serve_clients

    tally, stop = serve_clients.Tally(), asyncio.Event()
    await asyncio.gather(*(serve_clients.client(c, url, tokens, time.perf_counter() + 1e6, tally, seed, stop,
                                                stop_after=n // CLIENTS) for c in range(CLIENTS)))
    return tally


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=2992)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--dir", default="/tmp/memarch-serve-checkouts")
    ap.add_argument("--prefill", nargs=2, metavar=("DIR", "URL"), help=argparse.SUPPRESS)
    ap.add_argument("checkouts", nargs="*", help="NAME=PATH, two or more")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    if args.prefill:
        prefill(Path(args.prefill[0]), args.prefill[1], args.items)
        return
    checkouts = dict(a.split("=", 1) for a in args.checkouts)
    if len(checkouts) < 2:
        raise SystemExit("bench_serve_checkouts: name two checkouts, NAME=PATH")
    import numpy as np
    import pg_cluster
    from bench_serve import Server, cpu_seconds

    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    tokens = {u: f"bench-{u}-{os.urandom(8).hex()}" for u in USERS}
    token_file = root / "tokens"
    token_file.write_text(f"admin-{os.urandom(8).hex()}\n" + "".join(f"{t} {u}\n" for u, t in tokens.items()))
    token_file.chmod(0o600)
    results: dict[str, list[float]] = {name: [] for name in checkouts}
    with pg_cluster.running_postgres() as base:
        for name, path in checkouts.items():
            t = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--items", str(args.items), "--prefill", str(root / name),
                            f"{base}?schema=s_{name}"], env={**os.environ, "PYTHONPATH": str(Path(path).resolve())},
                           check=True, stdout=subprocess.DEVNULL)
            print(f"prefill {name}: {time.perf_counter() - t:.0f} s", flush=True)
        for rnd in range(args.rounds):
            for name, path in checkouts.items():
                os.environ["PYTHONPATH"] = str(Path(path).resolve())
                os.environ["MEMARCH_CACHE_DIR"] = str(root / name / "cache")
                server = Server(root / name / "program.json", f"{base}?schema=s_{name}", token_file, root / f"{name}.log")
                server.start()
                try:
                    asyncio.run(drive(server.url, tokens, 160, 1000 + rnd))  # warm-up
                    c0 = cpu_seconds(server.proc.pid)
                    tally = asyncio.run(drive(server.url, tokens, args.requests, rnd))
                    cpu = cpu_seconds(server.proc.pid) - c0
                finally:
                    server.stop()
                done = len(tally.add_ms) + len(tally.search_ms)
                results[name].append(cpu / done * 1e3)
                print(f"round {rnd} {name}: {done} requests, server CPU {cpu:.2f} s = {cpu / done * 1e3:.2f} ms a request; "
                      f"add p50 {np.median(tally.add_ms):.0f} ms, search p50 {np.median(tally.search_ms):.0f} ms; "
                      f"errors {len(tally.errors)}; load {os.getloadavg()[0]:.2f}", flush=True)
    first = next(iter(results))
    for name, v in results.items():
        ratio = "" if name == first else f"  ({np.mean(v) / np.mean(results[first]):.3f}x {first})"
        print(f"{name}: " + " ".join(f"{x:.2f}" for x in v) + f"  mean {np.mean(v):.2f} ms a request{ratio}")


if __name__ == "__main__":
    main()
