"""Built-in memory modules. Importing this package registers every one of them; the space,
the validity rules, the README table and the tests are derived from those registrations."""
import importlib

_FAMILIES = ("stores", "retrievers", "encoders", "managers")

for _pkg in _FAMILIES:
    importlib.import_module(f"{__name__}.{_pkg}")
