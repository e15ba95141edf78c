"""LM cost accounting: calls, cache hits, tokens in/out, latency and errors per role, read from
each LM's history as calls finish; snapshots and deltas give a trial its own usage."""
from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from dspy.utils.callback import BaseCallback


@dataclass
class RoleUsage:
    """What one role spent. ``cached`` calls were answered from DSPy's cache and cost no tokens."""

    calls: int = 0
    cached: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0

    def __sub__(self, other: "RoleUsage") -> "RoleUsage":
        return RoleUsage(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    def __add__(self, other: "RoleUsage") -> "RoleUsage":
        return RoleUsage(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})


# to_metrics() key stem per RoleUsage field
_METRIC = {"calls": "lm_calls", "cached": "lm_cached", "errors": "lm_errors", "tokens_in": "tokens_in",
           "tokens_out": "tokens_out", "latency_s": "latency_s", "cost_usd": "cost_usd"}


@dataclass(frozen=True)
class UsageSnapshot:
    """Usage per role at one moment; ``later - earlier`` (or :meth:`Accounting.delta`) is what
    happened in between."""

    roles: dict[str, RoleUsage] = field(default_factory=dict)

    def __sub__(self, since: "UsageSnapshot") -> "UsageSnapshot":
        return UsageSnapshot({r: u - since.roles.get(r, RoleUsage()) for r, u in self.roles.items()})

    @property
    def total(self) -> RoleUsage:
        out = RoleUsage()
        for usage in self.roles.values():
            out = out + usage
        return out

    def to_metrics(self) -> dict[str, float]:
        """Flat numbers for a trial's cost and MLflow: ``lm_calls_task``, ``tokens_in_meta``, ...
        plus the totals without a suffix (``lm_calls``, ``tokens_in``, ..., ``lm_latency_s``)."""
        out: dict[str, float] = {}
        for role, usage in sorted(self.roles.items()):
            for name, stem in _METRIC.items():
                out[f"{stem}_{role}"] = round(getattr(usage, name), 6)
        for name, stem in _METRIC.items():
            # "latency_s" alone would read as the trial's latency (tracking uses that name)
            out["lm_latency_s" if name == "latency_s" else stem] = round(getattr(self.total, name), 6)
        return out

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {role: asdict(u) for role, u in self.roles.items()}


class Accounting:
    """Counts what each LM role spends. Attach it to an LM, then read snapshots.

    Example::

        acct = Accounting()
        lm = dspy.LM("openai/gpt-4o-mini", callbacks=[acct.callback("task")])
        before = acct.snapshot()
        ...  # run a trial
        trial.cost.update(acct.delta(before).to_metrics())

    Tokens and cost come from the LM's history entries (``usage.prompt_tokens`` /
    ``completion_tokens``, ``cost``); a call whose entry has no usage was a cache hit. Latency is
    measured around each call. Thread-safe: calls from ``dspy.Parallel`` workers are each
    counted once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roles: dict[str, RoleUsage] = {}
        self._seen: dict[int, set[str]] = {}  # id(lm) -> history entry uuids already counted

    def callback(self, role: str) -> "AccountingCallback":
        with self._lock:
            self._roles.setdefault(role, RoleUsage())
        return AccountingCallback(self, role)

    def attach(self, lm: Any, role: str) -> Any:
        """Add this accounting's callback for ``role`` to ``lm`` (in place) and return ``lm``."""
        callbacks = list(getattr(lm, "callbacks", None) or [])
        callbacks = [c for c in callbacks if not isinstance(c, AccountingCallback)]
        lm.callbacks = callbacks + [self.callback(role)]
        return lm

    def record(self, role: str, lm: Any, latency_s: float, failed: bool) -> None:
        """Count one finished call of ``lm`` for ``role`` from the history entries it added."""
        history = list(getattr(lm, "history", None) or [])
        with self._lock:
            usage = self._roles.setdefault(role, RoleUsage())
            usage.latency_s += latency_s
            if failed:
                usage.errors += 1
                return
            seen = self._seen.setdefault(id(lm), set())
            # Walk back to the first entry already counted: a concurrent call's entry is
            # counted by whichever callback sees it first.
            new = []
            for entry in reversed(history):
                if _entry_id(entry) in seen:
                    break
                new.append(entry)
            if len(seen) > 4 * max(len(history), 1000):  # history is capped; so is what we remember
                seen.intersection_update(_entry_id(e) for e in history)
            if not new:  # history disabled: still count the call
                usage.calls += 1
                return
            for entry in new:
                seen.add(_entry_id(entry))
                usage.calls += 1
                tokens = entry.get("usage") or {}
                if not tokens:
                    usage.cached += 1
                    continue
                usage.tokens_in += int(tokens.get("prompt_tokens") or tokens.get("input_tokens") or 0)
                usage.tokens_out += int(tokens.get("completion_tokens") or tokens.get("output_tokens") or 0)
                usage.cost_usd += float(entry.get("cost") or 0.0)

    def snapshot(self) -> UsageSnapshot:
        with self._lock:
            return UsageSnapshot({r: RoleUsage(**asdict(u)) for r, u in self._roles.items()})

    def delta(self, since: UsageSnapshot) -> UsageSnapshot:
        return self.snapshot() - since

    def to_metrics(self) -> dict[str, float]:
        return self.snapshot().to_metrics()


def _entry_id(entry: dict[str, Any]) -> str:
    return str(entry.get("uuid") or id(entry))


class AccountingCallback(BaseCallback):
    """DSPy callback that times each call of one LM and hands it to :class:`Accounting`."""

    def __init__(self, accounting: Accounting, role: str):
        self.accounting = accounting
        self.role = role
        self._started: dict[str, tuple[float, Any]] = {}

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._started[call_id] = (time.perf_counter(), instance)

    def on_lm_end(self, call_id: str, outputs: Any, exception: BaseException | None = None) -> None:
        started, instance = self._started.pop(call_id, (time.perf_counter(), None))
        self.accounting.record(self.role, instance, time.perf_counter() - started, exception is not None)
