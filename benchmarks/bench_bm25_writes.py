"""BM25 under interleaved writes and reads, as a served memory sees it (one add, then a search), for
one or more checkouts side by side: CPU time of an add plus the first read after it, and of a read
of an unchanged index, at ``--docs`` documents of generated chat messages (bench_memory_app's).

    .venv/bin/python benchmarks/bench_bm25_writes.py [--docs 12500] [--rounds 3] \\
        [--checkout .] [--checkout /path/to/an/older/worktree]

Each checkout runs in its own process, in turns, ``--rounds`` times (the median is printed: a
shared host moves single runs by 20-40%); the ratio is against the first checkout. Issue 34: a
word most messages hold ("day") has a posting per document, and the first read after each add used
to make its postings into arrays again (lists before), ~50 us a word at 12,500 documents.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, random, sys, time
sys.path.insert(0, {root!r})
from memarch.modules.stores.lexical import BM25Index, tokenize  # the checkout's, before anything else
assert __import__("memarch").__file__.startswith({root!r})
sys.path.insert(0, {bench!r})
from bench_memory_app import message
rng = random.Random(0)
index = BM25Index([tokenize(message(rng)) for _ in range({docs})])
queries = [tokenize(message(rng)) for _ in range(1200)]
for q in queries[:100]:
    index.scores(q)
t = time.process_time()
for q in queries[100:500]:
    index.add(tokenize(message(rng)))
    index.scores(q)
write_read = (time.process_time() - t) / 400
t = time.process_time()
for q in queries[500:1200]:
    index.scores(q)
read = (time.process_time() - t) / 700
print(json.dumps({{"write_read_us": write_read * 1e6, "read_us": read * 1e6}}))
"""


def measure(checkout: Path, docs: int) -> dict:
    code = CHILD.format(bench=str(Path(__file__).resolve().parent), root=str(checkout.resolve()), docs=docs)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"bench_bm25_writes: {checkout}: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=12_500, help="documents indexed before the writes (default 12,500)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--checkout", action="append", type=Path, help="a checkout to measure (repeatable; default .)")
    ap.add_argument("--data", default=None, help="ignored (make bench passes it to every benchmark)")
    args = ap.parse_args(argv)
    checkouts = args.checkout or [Path(__file__).resolve().parents[1]]
    runs: dict[Path, list[dict]] = {c: [] for c in checkouts}
    for _ in range(args.rounds):
        for c in checkouts:  # in turns: a slow minute of the host hits every checkout alike
            runs[c].append(measure(c, args.docs))
    print(f"bench_bm25_writes: {args.docs} documents, median of {args.rounds} rounds, CPU time")
    print("| checkout | add + first read after it | read, index unchanged | add + read vs the first |")
    print("|---|---|---|---|")
    first = None
    for c in checkouts:
        wr = statistics.median(r["write_read_us"] for r in runs[c])
        rd = statistics.median(r["read_us"] for r in runs[c])
        first = wr if first is None else first
        print(f"| {c} | {wr:.0f} us | {rd:.0f} us | {wr / first:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
