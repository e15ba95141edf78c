"""LM fallbacks per module: how many answers each LM path asked for (``lm_requests``) and how many
ended on its LM-free rule (``fallbacks``), read from the modules' own counters over one trial."""
from __future__ import annotations

from typing import Any, Iterable

Counters = dict[str, tuple[int, int]]  # module role -> (LM requests, fallbacks)


def _own(obj: Any) -> tuple[int, int]:
    requests, fallbacks = getattr(obj, "lm_requests", 0), getattr(obj, "fallbacks", 0)
    if not isinstance(requests, int) or not isinstance(fallbacks, int):
        return 0, 0
    return requests, fallbacks


def _count(module: Any) -> tuple[int, int]:
    """A module's counters plus those of the helpers it holds (a manager's LM `Judge`s)."""
    requests, fallbacks = _own(module)
    for value in vars(module).values():
        if value is not module and hasattr(value, "fallbacks") and hasattr(value, "lm_requests"):
            r, f = _own(value)
            requests, fallbacks = requests + r, fallbacks + f
    return requests, fallbacks


def read_counters(program: Any = None, extra: Iterable[tuple[str, Any]] = ()) -> Counters:
    """The counters of a `MemoryProgram`'s modules and of ``extra`` (role, module) pairs.

    Example::

        before = read_counters(program, [("reader", reader)])
        ...  # run the trial
        requests, fallbacks = trial_delta(read_counters(program, [("reader", reader)]), before)
    """
    parts: list[tuple[str, Any]] = []
    if program is not None:
        arch = program.architecture
        parts += [(f"encoder:{name}", enc) for name, enc in zip(arch.encode, program.encoders)]
        parts += [(f"store:{arch.store}", program.store), (f"retriever:{arch.retrieve}", program.retriever),
                  (f"manager:{arch.manage}", program.manager)]
    parts += [(role, module) for role, module in extra if module is not None]
    return {role: _count(module) for role, module in parts}


def trial_delta(after: Counters, before: Counters) -> tuple[dict[str, int], dict[str, int]]:
    """(LM requests, fallbacks) per role over the trial; roles that asked the LM nothing are left out."""
    requests, fallbacks = {}, {}
    for role, (r, f) in after.items():
        r0, f0 = before.get(role, (0, 0))
        if r - r0 > 0 or f - f0 > 0:
            requests[role], fallbacks[role] = r - r0, f - f0
    return requests, fallbacks


def all_fell_back(requests: dict[str, int], fallbacks: dict[str, int]) -> bool:
    """True when LM paths ran and every one of their answers ended on the LM-free rule."""
    return bool(requests) and sum(requests.values()) > 0 and all(
        fallbacks.get(role, 0) >= n for role, n in requests.items())


def describe(requests: dict[str, int], fallbacks: dict[str, int]) -> str:
    """``"encoder:fact 3 of 40, reader 0 of 50"``: fallbacks out of LM requests per role."""
    return ", ".join(f"{role} {fallbacks.get(role, 0)} of {n}" for role, n in sorted(requests.items()))
