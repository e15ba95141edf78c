"""The glossary of docs/architecture.md ("One name per concept") is what the code says: every public
name (what the packages' ``__init__.py`` export, their parameters, attributes and methods) follows
it, and the glossary keeps every word it must define."""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("memarch", "memarch.optimizers", "memarch.benchmarks", "memarch.optimizers.compile",
          "memarch.optimizers.comparison", "memarch.optimizers.evaluators", "memarch.optimizers.samplers",
          "memarch.optimizers.pruners")
# A public name may not be one of these: the glossary word that replaced it, and why.
BANNED = {
    "objective": "a measure's name is a `metric`, its value a `score`; `objectives` are what a study optimises",
    "budget_tokens": "the context budget counts words: `context_budget`",
    "count_tokens": "memarch counts words: `count_words` (tokens are the LM's)",
    "truncate_tokens": "`truncate_words`",
    "memory_tokens": "memory is counted in words: `memory_words`",
    "search_space": "the Optuna view is the parameter space: `param_space`",
}
WORDS = ("metric", "score", "evaluator", "objectives", "trial function", "strategy", "pruner", "space",
         "parameter space", "budget", "context budget", "memory budget", "prompt budget", "words", "tokens", "knob",
         "search", "Pareto front")


def _glossary() -> dict[str, str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## One name per concept", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| (\*\*.+?\*\*(?: / \*\*.+?\*\*)*) \| (.+?) \|", line)
        if m:
            for word in re.findall(r"\*\*(.+?)\*\*", m.group(1)):
                rows[word] = m.group(2)
    return rows


def _deprecated(obj) -> bool:
    return (inspect.getdoc(obj) or "").startswith("Deprecated")


def _public_objects():
    seen = {}
    for package in PUBLIC:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not _deprecated(obj):
                seen[f"{package}.{name}"] = obj
    return seen


def _external_contract(cls: type, attr: str) -> bool:
    """``attr`` overrides a method of a base class from another package (Optuna's sampler API):
    its parameter names are that package's."""
    return any(attr in vars(base) for base in cls.__mro__[1:] if not base.__module__.startswith("memarch"))


def _names_of(where: str, obj) -> list[tuple[str, str]]:
    """(where, name) of a public object's own names: parameters, fields, attributes, methods."""
    out = []
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj):
            out += [(f"{where} field", f.name) for f in dataclasses.fields(obj) if not f.name.startswith("_")]
        for attr, value in vars(obj).items():
            if attr.startswith("_") or _deprecated(value) or _external_contract(obj, attr):
                continue
            out.append((f"{where} attribute", attr))
            if callable(value):
                out += _names_of(f"{where}.{attr}", value)
        init = vars(obj).get("__init__")
        if init is not None and not dataclasses.is_dataclass(obj):
            out += _names_of(f"{where}.__init__", init)
    elif callable(obj):
        try:
            params = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            return out
        out += [(f"{where} parameter", p.name) for p in params
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"]
    return out


def test_the_glossary_defines_every_word():
    glossary = _glossary()
    missing = [w for w in WORDS if w not in glossary]
    assert not missing, f"docs/architecture.md's glossary lost {missing}"


@pytest.mark.parametrize("package", PUBLIC)
def test_every_public_name_is_exported_on_purpose(package):
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__) or package == "memarch.optimizers.pruners"
    for name in module.__all__:
        getattr(module, name)  # each export resolves


def test_public_names_follow_the_glossary():
    bad = [f"{where}: {name!r} ({BANNED[name]})" for qual, obj in _public_objects().items()
           for where, name in [(qual, qual.rsplit(".", 1)[1]), *_names_of(qual, obj)] if name in BANNED]
    assert not bad, "\n".join(bad)


def test_a_metric_parameter_is_a_name_and_an_evaluator_is_an_evaluator():
    """``metric`` means the measure (a name), never the object that evaluates: a parameter named
    metric takes a str, and the classes named ...Evaluator... are the `Evaluator`s (none is a ...Metric)."""
    from memarch.optimizers.evaluators import Evaluator

    for qual, obj in _public_objects().items():
        if inspect.isclass(obj):
            assert issubclass(obj, Evaluator) == ("Evaluator" in obj.__name__), qual
            assert not (issubclass(obj, Evaluator) and obj.__name__.endswith("Metric")), qual
        targets = [obj] if inspect.isfunction(obj) else \
            [v for v in vars(obj).values() if inspect.isfunction(v)] if inspect.isclass(obj) else []
        for fn in targets:
            param = inspect.signature(fn).parameters.get("metric")
            if param is not None and param.annotation is not inspect.Parameter.empty:
                assert "str" in str(param.annotation), f"{qual}.{fn.__name__}(metric: {param.annotation})"


def test_the_check_bites():
    """A public name the glossary replaced is found."""
    def evaluate(architecture, objective=None, budget_tokens=200):
        return architecture

    names = [n for _, n in _names_of("f", evaluate)]
    assert [n for n in names if n in BANNED] == ["objective", "budget_tokens"]
