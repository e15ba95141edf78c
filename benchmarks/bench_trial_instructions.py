"""A warm in-process LoCoMo trial counted in CPU instructions (valgrind's callgrind), for one or more
checkouts side by side: a figure that the machine's load and a shared host's speed do not move.

    .venv/bin/python benchmarks/bench_trial_instructions.py --data ../shared/data/locomo \\
        --cache-dir /tmp/warm --checkout . --checkout /path/to/an/older/worktree

Wall-clock times of the same trial on this kind of machine move by 20-40% from minute to minute
(the host's other tenants), so a 10% change in the trial's own work is invisible to `bench_trial.py`
run twice; instructions are the same run after run for the same code and inputs. Each checkout's
trial runs in a fresh process under ``valgrind --tool=callgrind --instr-atstart=no``: the process
loads the benchmark and runs one warm trial uninstrumented (imports and first-use caches excluded),
then instrumentation is switched on (``callgrind_control -i on``) for exactly one more trial with the
same `Resources`, as a search runs its trials. Needs valgrind (Debian's ``valgrind``); ~2-3 minutes
a checkout. The caches must be filled first (``bench_trial.py --cache-dir DIR`` once).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIMPLE = '{"encode":["turn"],"store":"vector","retrieve":"hybrid","manage":"lightweight"}'


def child(args) -> int:
    """Inside valgrind: a warm trial, then one more between the parent's on and off switches."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import faiss

    faiss.omp_set_num_threads(1)
    from bench_trial import trial
    from memarch.benchmarks.locomo import LoCoMo
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    arch = Architecture.from_json(args.architecture)
    bench = LoCoMo(args.data)
    shared = Resources(embedder=Embedder(args.embedder, cache_dir=args.cache_dir), cache_dir=args.cache_dir)
    trial(arch, bench, args.cache_dir, args.budget, args.embedder, shared)
    signal = Path(args.signal)
    (signal / "ready").touch()
    _wait(signal / "go")
    _, result = trial(arch, bench, args.cache_dir, args.budget, args.embedder, shared)
    (signal / "result.json").write_text(json.dumps({"score": result.score, "failed": result.failed}))
    (signal / "done").touch()
    _wait(signal / "exit")
    return 0


def _wait(path: Path, timeout: float = 3600.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.2)


def measure(checkout: Path, args) -> tuple[int, float]:
    """(instructions of one warm in-process trial, its score) for the code in ``checkout``."""
    signal = Path(tempfile.mkdtemp(prefix="memarch-instr-"))
    out = signal / "callgrind.out"
    env = {**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, str(Path(__file__).resolve()), "--child", "--signal", str(signal),
           "--data", args.data, "--cache-dir", args.cache_dir, "--architecture", args.architecture,
           "--embedder", args.embedder, "--budget", str(args.budget)]
    proc = subprocess.Popen(cmd, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for name, switch in (("ready", "on"), ("done", "off")):
            while not (signal / name).exists():
                if proc.poll() is not None:
                    raise RuntimeError(f"{checkout}: the trial process ended early:\n{proc.stderr.read()[-2000:]}")
                time.sleep(0.5)
            if switch == "on":
                subprocess.run(["callgrind_control", "-i", "on", str(proc.pid)], check=True, capture_output=True)
                (signal / "go").touch()
            else:
                subprocess.run(["callgrind_control", "-i", "off", str(proc.pid)], check=True, capture_output=True)
                subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
        (signal / "exit").touch()
        proc.wait(timeout=600)
        score = json.loads((signal / "result.json").read_text())["score"]
        dumps = sorted(signal.glob("callgrind.out.*"))  # the dump taken while the trial's counts were on
        if not dumps:
            raise RuntimeError(f"{checkout}: callgrind wrote no dump")
        lines = dumps[0].read_text().splitlines()
        total = next((line for line in lines if line.startswith("totals:")), None) or \
            next(line for line in lines if line.startswith("summary:"))
        return int(re.findall(r"\d+", total)[0]), score
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(signal, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=os.environ.get("MEMARCH_DATA_DIR", "../shared/data/locomo"))
    p.add_argument("--cache-dir", required=True, help="filled embedding and encoder caches (bench_trial.py --cache-dir)")
    p.add_argument("--checkout", action="append", default=None,
                   help="a memarch checkout to measure (repeatable; default: this one); the first is the reference")
    p.add_argument("--architecture", default=SIMPLE, help="JSON text")
    p.add_argument("--embedder", default="all-MiniLM-L6-v2")
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--signal", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.data = str(Path(args.data).resolve())
    args.cache_dir = str(Path(args.cache_dir).resolve())
    if args.child:
        return child(args)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    checkouts = [Path(c).resolve() for c in (args.checkout or [str(Path(__file__).resolve().parents[1])])]
    print(f"one warm in-process trial on LoCoMo, {args.architecture}, B={args.budget}, {args.embedder}")
    first = None
    for checkout in checkouts:
        t0 = time.monotonic()
        n, score = measure(checkout, args)
        first = first or n
        print(f"{str(checkout):50s} {n:>15,d} instructions  {n / first:6.3f}x  score {score:.6f}  "
              f"({time.monotonic() - t0:.0f} s under valgrind)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
