"""Start-up of the commands that need no model, LM or study (issue 20): the wall time of each, cold
(no registry manifest yet: the modules, DSPy with them, are imported and the manifest written) and
warm (the manifest read), side by side with ``python -c "import memarch"`` and a bare interpreter.
Medians of --repeat fresh processes, wall and CPU (user + system) seconds: on a shared machine
the CPU time moves less with the load average, which is printed with them.

    .venv/bin/python benchmarks/bench_cli_startup.py --repeat 7
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARCH = {"schema_version": "1", "encode": ["insight", "tip"], "store": "vector", "retrieve": "hybrid",
        "manage": "lightweight"}


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr[-500:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def medians(argv: list[str], repeat: int, cache: Path | None, tmp: Path) -> tuple[float, float]:
    """``cache`` None: every run gets a new, empty cache dir (cold); else runs share it (warm)."""
    runs = []
    for i in range(repeat):
        where = cache or Path(tempfile.mkdtemp(prefix=f"cold{i}-", dir=tmp))
        runs.append(timed(argv, {**os.environ, "MEMARCH_CACHE_DIR": str(where)}))
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="fresh processes per cell (the median is shown)")
    p.add_argument("--data", default=None, help="unused (run_all passes it to every benchmark)")
    args = p.parse_args(argv)

    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="memarch-bench-startup-") as d:
        tmp = Path(d)
        arch = tmp / "arch.json"
        arch.write_text(json.dumps(ARCH))
        warm = tmp / "warm-cache"
        subprocess.run([py, "-m", "memarch", "space"], env={**os.environ, "MEMARCH_CACHE_DIR": str(warm)},
                       stdout=subprocess.DEVNULL, check=True)  # writes the manifest
        base = {"python -c pass": [py, "-c", "pass"], 'python -c "import memarch"': [py, "-c", "import memarch"]}
        commands = {"memarch --help": ["--help"], "memarch space --json": ["space", "--json"],
                    "memarch presets": ["presets"], "memarch validate FILE": ["validate", str(arch)]}
        load = os.getloadavg()
        print(f"{args.repeat} runs per cell, median seconds (wall; cpu = user + system); load average "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
        ref = {name: medians(cmd, args.repeat, warm, tmp) for name, cmd in base.items()}
        imp = ref['python -c "import memarch"'][0]
        print(f"{'':<28}{'cold':>7}{'warm':>7}{'cold cpu':>9}{'warm cpu':>9}{'cold/import':>12}{'warm/import':>12}")
        for name, (t, cpu) in ref.items():
            print(f"{name:<28}{'':>7}{t:>7.3f}{'':>9}{cpu:>9.3f}{'':>12}{t / imp:>12.2f}")
        for name, rest in commands.items():
            cmd = [py, "-m", "memarch", *rest]
            cold, cold_cpu = medians(cmd, args.repeat, None, tmp)
            hot, hot_cpu = medians(cmd, args.repeat, warm, tmp)
            print(f"{name:<28}{cold:>7.3f}{hot:>7.3f}{cold_cpu:>9.3f}{hot_cpu:>9.3f}{cold / imp:>12.2f}"
                  f"{hot / imp:>12.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
