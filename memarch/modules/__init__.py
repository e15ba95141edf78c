"""Built-in memory modules: stores, retrievers, encoders and managers, one decorated class each.
`load()` imports every one of them (their decorators register them); the space, the validity rules,
the generated tables and the tests are derived from those registrations. The `memarch` package
hands `load` to the registry, which calls it on the first query that needs every module;
`memarch.modules.manifest` answers from their saved declarations without importing them."""
import importlib

_FAMILIES = ("stores", "retrievers", "encoders", "managers")


def load() -> None:
    """Import every built-in module (each registers itself)."""
    for family in _FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
