"""The architecture space derived from the registry: counts, rules, validate/repair, enumeration."""
from __future__ import annotations

import pytest

from memarch.errors import ArchitectureError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.registry import REGISTRY, register
from memarch.pipeline.space import ArchitectureSpace
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store


def test_experience_space_counts():
    space = ArchitectureSpace("experience")
    assert len(space.encoders) == 5
    assert (len(space.stores), len(space.retrievers), len(space.managers)) == (5, 6, 4)
    assert space.total() == 3720
    assert len(space.triples()) == 83
    assert space.count_valid() == 2573
    assert sum(1 for _ in space.enumerate()) == 2573
    assert sum(1 for _ in space.enumerate(valid_only=False)) == 3720


def test_conversation_space_has_31_subsets():
    space = ArchitectureSpace("conversation")
    assert len(space.encoder_subsets()) == 31
    assert len(space.retrievers) == 7 and "session" in space.retrievers  # session-first: conversations only
    assert space.total() == 4340 and space.count_valid() == 3038
    assert ArchitectureSpace("conversation", lm_available=False).count_valid() == 1984


def test_lm_free_space_drops_lm_modules_and_says_why():
    space = ArchitectureSpace("experience", lm_available=False)
    assert "llm_graph" not in space.stores and "hyde" not in space.retrievers
    assert set(space.excluded) == {"store:llm_graph", "retriever:hyde"}
    assert all("needs an LM" in why for why in space.excluded.values())
    assert all(space.is_valid(a) for a in space.enumerate())
    d = space.to_dict()
    assert d["total"] == 3720 and d["valid"] == 2573 and d["valid_without_lm"] == space.count_valid()


@pytest.mark.parametrize("arch, rule", [
    (Architecture((), "json", "hybrid", "lightweight"), "encode-nonempty"),
    (Architecture(("tip", "tip"), "json", "hybrid", "lightweight"), "encode-unique"),
    (Architecture(("tip", "turn"), "json", "hybrid", "lightweight"), "known-names"),
    (Architecture(("tip",), "nosuch", "hybrid", "lightweight"), "known-names"),
    (Architecture(("tip",), "vector", "graph", "lightweight"), "retriever-store"),
    (Architecture(("tip",), "json", "hybrid", "graph_consolidate"), "manager-store"),
    (Architecture(("tip",), "graph", "hybrid", "graph_consolidate"), "manager-retriever"),
])
def test_each_rule_is_named(arch, rule):
    space = ArchitectureSpace("experience")
    assert rule in {v.rule for v in space.violations(arch)}
    with pytest.raises(ArchitectureError) as exc:
        space.validate(arch)
    assert exc.value.rule == space.violations(arch)[0].rule


def test_lm_rule_without_lm():
    arch = Architecture(("tip",), "llm_graph", "graph", "lightweight")
    assert ArchitectureSpace("experience").is_valid(arch)
    assert [v.rule for v in ArchitectureSpace("experience", lm_available=False).violations(arch)] == ["lm-required"]


def test_repair_is_nearest_and_valid():
    space = ArchitectureSpace("experience")
    bad = Architecture(("workflow", "tip"), "vector", "graph", "lightweight")
    fixed = space.repair(bad)
    assert space.is_valid(fixed)
    assert set(fixed.encode) == {"tip", "workflow"}
    changed = sum(getattr(fixed, f) != getattr(bad, f) for f in ("store", "retrieve", "manage"))
    assert changed == 1
    free = ArchitectureSpace("experience", lm_available=False)
    assert free.is_valid(free.repair(Architecture(("tip",), "llm_graph", "hyde", "lightweight")))


def test_registering_a_module_grows_the_space():
    before = ArchitectureSpace("experience")
    with REGISTRY.temporarily():
        @register("store", "toy_store", families=("experience",))
        class ToyStore(Store):
            """A toy store for this test."""

        @register("retriever", "toy_graph_walk", requires_store=("graph",))
        class ToyRetriever(Retriever):
            """A toy retriever that needs a graph store."""

        grown = ArchitectureSpace("experience")
        assert grown.total() == 31 * 6 * 7 * 4
        # toy store offers no graph: toy retriever only pairs with graph/llm_graph
        assert len(grown.triples()) > len(before.triples())
        assert not grown.is_valid(Architecture(("tip",), "toy_store", "toy_graph_walk", "lightweight"))
        assert "toy_store" not in ArchitectureSpace("conversation").stores
    assert ArchitectureSpace("experience").total() == 3720


def test_architecture_json_roundtrip_and_strictness(tmp_path):
    a = Architecture(("workflow", "tip"), "json", "hybrid", "lightweight")
    assert Architecture.from_json(a.to_json()) == a
    assert a.canonical().encode == ("tip", "workflow")
    assert a.key() == "tip+workflow|json|hybrid|lightweight"
    p = tmp_path / "a.json"
    a.save(p)
    assert Architecture.load(p) == a
    with pytest.raises(ArchitectureError, match="unknown field"):
        Architecture.from_dict({**a.to_dict(), "extra": 1})
    with pytest.raises(ArchitectureError, match="schema_version"):
        Architecture.from_dict({**a.to_dict(), "schema_version": "2"})
    with pytest.raises(ArchitectureError, match="list of encoder"):
        Architecture.from_dict({**a.to_dict(), "encode": "tip"})
    assert a.family == "experience"
    assert Architecture(("turn", "fact"), "json", "mmr", "lightweight").family == "conversation"
