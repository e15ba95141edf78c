"""``memarch evaluate --program FILE``: a saved program's settings (top_k, context budget; benchmark,
data, knobs, split, metric, limit from its evaluation record) under the user's overrides, a
fresh program built from it, and the measured score set against the reported one."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.evaluation_record import EvaluationRecord, data_sha256


@dataclass
class SavedProgram:
    """A program file read for re-evaluation.

    Example::

        saved = SavedProgram.read("program.json")
        saved.apply(args)                  # fills what the user did not set from the file
        program = saved.build(resources)   # fresh: the saved memory bank is not used

    Args:
        path: the program JSON.
        data: its contents.
        architecture: the program's architecture.
        record: its evaluation record (None for files saved before the record existed).
    """

    path: str
    data: dict[str, Any]
    architecture: Architecture
    record: EvaluationRecord | None
    overridden: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, path: str) -> "SavedProgram":
        from memarch.pipeline.files import read_json
        from memarch.pipeline.program import FORMAT

        data = read_json(path, what="saved memarch program")
        if not isinstance(data, dict) or data.get("format") != FORMAT or "architecture" not in data:
            raise DataError(f"{path}: not a saved memarch program (expected format {FORMAT!r})")
        try:
            arch = Architecture.from_dict(data["architecture"])
        except MemarchError as exc:
            raise DataError(f"{path}: {exc}") from None
        record = None if data.get("evaluation") is None else EvaluationRecord.from_dict(data["evaluation"], source=path)
        return cls(path, data, arch, record)

    @property
    def has_memory(self) -> bool:
        return bool(self.data.get("memory"))

    def apply(self, args: Any) -> None:
        """Fill the options the user left unset from the file; note the ones set differently."""
        from memarch.benchmarks import DEFAULT

        rec = self.record
        # option dest -> the file's value (its JSON keys stay: old programs must still load)
        saved = {"benchmark": rec.benchmark if rec else DEFAULT, "context_budget": saved_context_budget(self.data),
                 "top_k": self.data.get("top_k"), "limit": rec.limit if rec else None,
                 "embedder": self.data.get("embedder")}
        if rec is not None and hasattr(args, "metric"):
            saved["metric"] = rec.metric
        for name, value in saved.items():
            given = getattr(args, name, None)
            if given is None:
                setattr(args, name, value)
            elif value is not None and given != value:
                self.overridden.append({"context_budget": "context budget"}.get(name, name))
        if rec is not None and args.seed is not None and args.seed != rec.split.get("seed"):
            self.overridden.append("seed")

    def benchmark(self, args: Any) -> Any | None:
        """The recorded benchmark, data and split under ``--data`` / ``--seed`` / ``--knob``; None
        when the user asked for another benchmark (or the file has no record)."""
        rec = self.record
        if rec is None or args.benchmark != rec.benchmark:
            return None
        if args.data is not None and rec.benchmark in ("generated", "textworld"):
            raise MemarchError(f"--data is for locomo and babi; {rec.benchmark} needs none")
        knobs: dict[str, Any] = {} if args.seed is None else {"seed": args.seed}
        if getattr(args, "download", False) and rec.benchmark == "locomo":
            knobs["download"] = True
        from memarch.cli._knobs import parse_knobs

        given = parse_knobs(getattr(args, "knob", []))
        self.overridden += [f"knob {k}" for k, v in given.items() if k not in rec.knobs or rec.knobs[k] != v]
        knobs.update(given)
        from memarch.benchmarks import recorded_benchmark

        bench = recorded_benchmark(rec, data=args.data, knobs=knobs, keep_split_seed=args.seed is None)
        if rec.data_sha256 is not None and data_sha256(bench.path) != rec.data_sha256:
            self.overridden.append("data contents")
        return bench

    def set_memory_budget(self, words: int) -> None:
        """``--memory-budget`` over the file's own (noted as a changed setting when it differs)."""
        config = dict(self.data.get("config") or {})
        manager = dict(config.get("manager") or {})
        if manager.get("memory_budget") != words:
            self.overridden.append("memory budget")
        config["manager"] = {**manager, "memory_budget": words}
        self.data = {**self.data, "config": config}

    def build(self, resources: Any) -> Any:
        """A fresh program: architecture, top_k, budget, config and instructions, no memory bank."""
        from memarch.pipeline.program import MemoryProgram

        fresh = {**self.data, "memory": None, "episodes_written": {}}
        return MemoryProgram.from_dict(fresh, resources=resources, source=self.path)

    def describe(self) -> list[str]:
        """What was taken from the file, one line each."""
        rec = self.record
        head = (f"  program {Path(self.path).name}: top_k {self.data.get('top_k')}, context budget "
                f"{saved_context_budget(self.data)} words; ")
        if rec is None:
            lines = [head + "no evaluation record (saved before programs carried one)"]
        else:
            knobs = ", ".join(f"{k}={v}" for k, v in rec.knobs.items())
            split = rec.split
            lines = [head + f"scored on {rec.benchmark}" + (f" ({knobs})" if knobs else "")
                     + f", split seed {split.get('seed')} by {split.get('split_by')}"
                     + (f", first {rec.limit} questions per split" if rec.limit else "")]
        if self.has_memory:
            lines.append("  its saved memory bank is not used: benchmark evaluation writes a fresh memory")
        return lines

    def comparison(self, result: Any) -> str | None:
        """``reported test 0.61 (metric answer_recall): reproduced`` or ``DIFFERS by ...``."""
        rec = self.record
        if rec is None or result.failed or rec.scores.get(result.split) is None:
            return None
        reported = float(rec.scores[result.split])
        metric = result.metadata.get("metric") or rec.metric
        head = f"  reported {result.split} {reported:.4f} (metric {rec.metric})"
        changed = list(dict.fromkeys(self.overridden + (["metric"] if metric != rec.metric else [])))
        note = f"; settings changed: {', '.join(changed)}" if changed else ""
        diff = result.score - reported
        if math.isclose(result.score, reported, rel_tol=0.0, abs_tol=1e-12):
            return f"{head}: reproduced{note}"
        return f"{head}: DIFFERS by {diff:+.4f} (measured {result.score:.4f} with metric {metric}{note})"


def saved_context_budget(data: dict) -> int | None:
    from memarch.pipeline.program import saved_context_budget as of  # dspy: imported on use

    return of(data)
