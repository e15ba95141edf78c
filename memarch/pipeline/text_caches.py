"""memarch's process-wide memos of texts (`functools.lru_cache` on tokenisers, sentence splitters,
normalisers, the hash embedder's n-gram slots...): pure functions of a text, kept so that the same
texts are not worked on again trial after trial. `forget_texts` empties every one of them: what a
server does when a user is deleted, so that no text of that user stays in the process."""
from __future__ import annotations

import sys


def forget_texts() -> int:
    """Clear the `lru_cache` of every function defined in a loaded memarch module; how many."""
    cleared = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "memarch" or name.startswith("memarch.")):
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()
                cleared += 1
    return cleared
