"""The memos of texts an owner keeps: `TextCaches` (`Resources.texts`) holds one `TextMemos` per
concern that asks (the tokenizers, the sentence packer, the context lines, the managers' signatures,
...), each a few bounded `functools.lru_cache`s of pure functions of texts, kept so that the same
texts are not worked on again read after read and trial after trial.

They belong to a `Resources`, not to the process: the programs, trials and landscapes that share one
`Resources` share its memos, and a `Memory` has its own, so deleting a user empties that memory's
memos (`TextCaches.forget`) and leaves every other memory's warm."""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

M = TypeVar("M", bound="TextMemos")


class TextMemos:
    """One concern's memos of texts, as one owner keeps them: a subclass makes each memo in its
    ``__init__`` with `memo`, and its callers call the memo as they would the function.

    Example::

        class Words(TextMemos):
            def __init__(self, texts: TextCaches):
                super().__init__(texts)
                self.count = self.memo(lambda text: len(text.split()), 1 << 16, "count")

        words = resources.texts[Words]     # this owner's, made at the first ask
        words.count("a b c")               # 3; the next call with this text is a dict lookup

    Args:
        texts: the owner's `TextCaches`, where a memo that builds on another concern's memos finds
            them (``texts[Terms].terms``).
    """

    def __init__(self, texts: "TextCaches"):
        self._memos: dict[str, Any] = {}

    @classmethod
    def of(cls: type[M], texts: "TextCaches | None") -> M:
        """``texts[cls]``; for None (a caller outside any `Resources`: a test, a script) a fresh
        one that nobody keeps."""
        return (texts if texts is not None else TextCaches())[cls]

    def memo(self, function: Callable, maxsize: int, name: str | None = None) -> Callable:
        """``function`` memoised for this owner, at most ``maxsize`` results (least recently used
        first out): `functools.lru_cache`, so a hit costs what a module-level memo's does."""
        cached = functools.lru_cache(maxsize=maxsize)(function)
        self._memos[name or function.__name__] = cached
        return cached

    def forget(self) -> None:
        """Empty every memo of this concern (what a subclass keeps beside them, too)."""
        for cached in self._memos.values():
            cached.cache_clear()

    def info(self) -> dict[str, Any]:
        """Each memo's ``functools`` cache info (hits, misses, maxsize, currsize), by name."""
        return {name: cached.cache_info() for name, cached in self._memos.items()}

    def sizes(self) -> dict[str, int]:
        """Entries held, by memo name (a subclass adds what it keeps beside its memos)."""
        return {name: cached.cache_info().currsize for name, cached in self._memos.items()}


class TextCaches(dict):
    """`Resources.texts`: one `TextMemos` of each concern, made the first time it is asked for.

    ``texts[Terms]`` is a dict lookup (a hot read path binds the memo once per call, as it would a
    module-level function); `forget` empties every memo of this owner, `sizes` counts what they hold.

    Example::

        texts = TextCaches()
        terms = texts[Terms].terms        # Terms: memarch.modules.stores.lexical
        terms("Caroline moved to Paris")  # ("caroline", "moved", "paris")
        texts.forget(); texts.sizes()     # {"Terms.terms": 0, ...}
    """

    def __missing__(self, kind: type[M]) -> M:
        # Two threads may both make one; the first stored is the one every caller gets from then on.
        return self.setdefault(kind, kind(self))

    def forget(self) -> None:
        """Empty every memo (kept, so callers holding one stay valid): no text stays in them."""
        for memos in list(self.values()):
            memos.forget()

    def sizes(self) -> dict[str, int]:
        """Entries held, per memo (``"Terms.terms"``), over every concern made so far."""
        return {f"{kind.__name__}.{name}": size
                for kind, memos in list(self.items()) for name, size in memos.sizes().items()}

    def info(self) -> dict[str, Any]:
        """Each memo's ``functools`` cache info (hits, misses, maxsize, currsize), by memo name."""
        return {f"{kind.__name__}.{name}": info
                for kind, memos in list(self.items()) for name, info in memos.info().items()}

    # A copy (a deep-copied program, a replaced `Resources`) starts empty: memos are not state.
    def __copy__(self) -> "TextCaches":
        return type(self)()

    def __deepcopy__(self, memo: dict) -> "TextCaches":
        return type(self)()

    def __reduce__(self):
        return (type(self), ())
