"""memarch caps numpy's and FAISS's BLAS threads (dense search is one matvec per query), and the
environment variable can change or disable that."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def _blas_threads(env_value: str | None) -> set[int]:
    code = ("import memarch.modules.stores.vector  # noqa: F401\n"
            "from threadpoolctl import threadpool_info\n"
            "import json; print(json.dumps(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'})))")
    env = {k: v for k, v in os.environ.items() if k not in ("MEMARCH_BLAS_THREADS", "OPENBLAS_NUM_THREADS",
                                                          "OMP_NUM_THREADS")}
    if env_value is not None:
        env["MEMARCH_BLAS_THREADS"] = env_value
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_a_store_caps_blas_at_one_thread_unless_told_otherwise():
    assert _blas_threads(None) == {1}
    if (os.cpu_count() or 1) >= 2:  # on a single core the libraries start at 1 anyway
        assert _blas_threads("0") != {1}, "0 leaves the libraries' own thread counts"
        assert _blas_threads("2") == {2}
