"""BLAS thread limits for memarch's dense products: one query vector against a namespace's rows is
a matrix-vector product, which a second BLAS thread does not speed up but, on busy cores, slows
down by orders of magnitude (measured here under load ~8: 2,000 x 384 matvec 20 ms p50 with
OpenBLAS's 2 threads, 0.06 ms with 1)."""
from __future__ import annotations

import logging
import os

logger = logging.getLogger(__name__)
_applied: dict[str, int] = {}


def limit_blas_threads() -> int | None:
    """Cap the BLAS libraries loaded so far (numpy's, FAISS's OpenBLAS) at ``$MEMARCH_BLAS_THREADS``
    threads (default 1; 0 leaves them alone). Idempotent; returns the limit applied, or None.

    Example::

        limit_blas_threads()   # after importing numpy / faiss; torch's OpenMP pool is not touched
    """
    raw = os.environ.get("MEMARCH_BLAS_THREADS", "1")
    try:
        limit = int(raw)
    except ValueError:
        logger.warning("MEMARCH_BLAS_THREADS=%r is not an integer: BLAS threads left as they are", raw)
        return None
    if limit <= 0:
        return None
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:  # pragma: no cover - a declared dependency
        logger.warning("threadpoolctl is missing: BLAS threads left as they are")
        return None
    libs = {info["filepath"] for info in threadpool_info() if info.get("user_api") == "blas"}
    if libs and all(_applied.get(path) == limit for path in libs):
        return limit
    threadpool_limits(limits=limit, user_api="blas")  # as a call, not a context: the limit stays
    _applied.update({path: limit for path in libs})
    return limit
