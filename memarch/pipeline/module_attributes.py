"""`lean_getattribute`: attribute lookup for memarch's dspy modules without dspy's Python-level check
on every lookup.

`dspy.Module.__getattribute__` runs for every attribute read of a module (``self.store``,
``self.resources``, ...) to warn when ``forward`` is called directly: ~100,000 reads and ~5% of a warm
LoCoMo trial. The modules of a program (encoders, retriever, manager) and `MemoryProgram` use this
lookup instead: ``forward`` keeps dspy's check (the same warning), every other name is
plain `object.__getattribute__`.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

_dspy_log = logging.getLogger("dspy.primitives.module")  # where dspy's own check logs


def lean_getattribute(self: Any, name: str) -> Any:
    """``__getattribute__`` of a dspy module: plain, with dspy's warning for a direct ``forward``.

    Example::

        class Retriever(dspy.Module):
            __getattribute__ = lean_getattribute
    """
    attr = object.__getattribute__(self, name)
    # dspy's check, made here: its own would see this function, not `__call__`, as the caller
    if name == "forward" and callable(attr) and sys._getframe(1).f_code.co_name != "__call__":
        _dspy_log.warning(f"Calling module.forward(...) on {self.__class__.__name__} directly is discouraged. "
                          f"Please use module(...) instead.")
    return attr
