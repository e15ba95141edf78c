"""A digest of everything a read can observe in one namespace of a memory: every record (inactive
ones too, with lineage and usage), the store's own index and graph state, and the write trace that
attribution reads. Two write passes with equal digests at every read point read identically.

Example::

    digest = namespace_digest(program.store, "conv-1", trace, actor="manager:lightweight")
"""
from __future__ import annotations

import hashlib
import marshal
from typing import TYPE_CHECKING

import faiss

from memarch.modules.stores.base import Store
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.vector import VectorStore

if TYPE_CHECKING:
    from memarch.benchmarks.evaluation.attribution import WriteTrace
    from memarch.pipeline.items import MemoryItem

# The store classes whose whole state this module knows. Any other class (a subclass may keep
# state of its own) gets no digest, so nothing is ever shared on its account.
KNOWN_STORES = (Store, JsonStore, VectorStore, HybridStore, GraphStore)
# What a manager's own name becomes in lineage: no reader (retriever, attribution) tells managers
# apart by name, only ``actor.startswith("manager:")``; tests/optimizers/landscapes/test_landscape.py guards this.
SELF = "manager:*"
# marshal: a C serialiser of plain values (str, numbers, bool, None, lists, tuples, dicts) that
# refuses anything else (ValueError: no digest, no sharing), so equal bytes mean equal values.
# Version 2 writes no back-references, so the bytes do not depend on which objects are shared.
MARSHAL_VERSION = 2


def _item(it: "MemoryItem", actor: str | None) -> tuple:
    lineage = [(e.action, SELF if e.actor == actor else e.actor, e.reason, e.related, e.at, e.data)
               for e in it.lineage]
    return (it.id, it.text, it.kind, it.fields, it.episode_id, it.source_ids, it.outcome, it.event_time,
            it.namespace, it.key, it.status, it.usage.__dict__, lineage)


def _dense(store: VectorStore, namespace: str) -> tuple:
    index = store._indexes.get(namespace)
    if index is None:
        return ()
    # The serialised FAISS index holds the vectors in storage order (ties in search follow it)
    # and, once IVF, its trained lists.
    raw = hashlib.sha256(faiss.serialize_index(index.index).tobytes()).hexdigest()
    return (index.kind, index.is_ivf, index.next_id, list(index.to_int.items()), raw)


def _postings(store: HybridStore, namespace: str) -> tuple:
    post = store._postings.get(namespace, {})
    loose = store._loose.get(namespace, {})
    return ([(f, sorted((repr(v), sorted(ids)) for v, ids in values.items())) for f, values in post.items()],
            [(f, sorted(ids)) for f, ids in loose.items()])


def _graph(store: GraphStore, namespace: str) -> tuple:
    g = store._graphs.get(namespace)
    # Node attributes and the adjacency (edge keys and attributes) as networkx keeps them.
    return () if g is None else (g._node, g._adj)


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
    if type(store) not in KNOWN_STORES:
        return None
    h = hashlib.sha256()
    try:
        recs = store._records.get(namespace, {})
        h.update(marshal.dumps([_item(it, actor) for it in recs.values()], MARSHAL_VERSION))
        if isinstance(store, VectorStore):
            h.update(marshal.dumps(_dense(store, namespace), MARSHAL_VERSION))
        if isinstance(store, HybridStore):
            h.update(marshal.dumps(_postings(store, namespace), MARSHAL_VERSION))
        if isinstance(store, GraphStore):
            h.update(marshal.dumps(_graph(store, namespace), MARSHAL_VERSION))
    except ValueError:  # a value marshal cannot write: no digest, no sharing
        return None
    if trace is not None:
        encoded = trace.encoded.get(namespace, {})
        h.update(repr(tuple(sorted((sid, tuple(sorted(ids))) for sid, ids in encoded.items()))).encode())
        h.update(repr(tuple(sorted(trace.kept.get(namespace, set())))).encode())
    return h.hexdigest()

