"""A digest of everything a read can observe in one namespace of a memory: the store's state
(`Store.state_digest`: every record, inactive ones too, with lineage and usage, and the store's own
index and graph state) and the write trace that attribution reads. Two write passes with equal
digests at every read point read identically.

Example::

    digest = namespace_digest(program.store, "conv-1", trace, actor="manager:lightweight")
"""
from __future__ import annotations

import hashlib
import marshal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memarch.benchmarks.evaluation.attribution import WriteTrace
    from memarch.modules.stores.base import Store

# What a manager's own name becomes in lineage: no reader (retriever, attribution) tells managers
# apart by name, only ``actor.startswith("manager:")``; tests/optimizers/landscapes/test_landscape.py guards this.
SELF = "manager:*"
# marshal: a C serialiser of plain values (str, numbers, bool, None, lists, tuples, dicts) that
# refuses anything else (ValueError: no digest, no sharing), so equal bytes mean equal values.
# Version 2 writes no back-references, so the bytes do not depend on which objects are shared.
MARSHAL_VERSION = 2


def namespace_digest(store: Store, namespace: str, trace: "WriteTrace | None" = None, *,
                     actor: str | None = None) -> str | None:
    """sha256 over the state of ``namespace`` a read can observe, or None when the store's class
    (or a value in it) is not one this digest covers exactly.

    Args:
        store: the memory.
        namespace: the namespace read next (reads never cross namespaces).
        trace: the write trace (what was encoded and kept), read by failure attribution.
        actor: the manager's lineage actor (``manager:<name>``), written as ``manager:*``.
    """
    try:
        state = store.state_digest(namespace, actors={actor: SELF})
    except ValueError:  # a record value marshal cannot write: no digest, no sharing
        return None
    if state is None:  # a store class that may keep state its parts do not cover: no digest, no sharing
        return None
    h = hashlib.sha256()
    try:
        for part in state.values():
            h.update(marshal.dumps(part, MARSHAL_VERSION))
    except ValueError:  # a value marshal cannot write: no digest, no sharing
        return None
    if trace is not None:
        encoded = trace.encoded.get(namespace, {})
        h.update(repr(tuple(sorted((sid, tuple(sorted(ids))) for sid, ids in encoded.items()))).encode())
        h.update(repr(tuple(sorted(trace.kept.get(namespace, set())))).encode())
    return h.hexdigest()
