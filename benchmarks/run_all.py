"""`make bench`: run every benchmarks/bench_*.py in turn, each printing its own table of
figures measured side by side in one run. Extra arguments (e.g. --data DIR) are passed on."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="../shared/data", help="shared data directory (locomo/, babi/)")
    ap.add_argument("--only", default="", help="comma-separated bench names (e.g. stores,trial)")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        if only and name not in only:
            continue
        print(f"\n=== {name} ({script.name}) ===", flush=True)
        t0 = time.time()
        rc = subprocess.call([sys.executable, str(script), "--data", args.data])
        print(f"--- {name}: exit {rc}, {time.time() - t0:.1f} s", flush=True)
        if rc != 0:
            failed.append(name)
    if failed:
        print(f"failed benchmarks: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
