"""The glossary of docs/architecture.md ("One name per concept") is what the code says: every public
name (what the packages' ``__init__.py`` export, their parameters, attributes and methods) follows
it, every name the code defines says "objective" only for a study's objectives and "tokens" only
for LM (or a model tokenizer's, or bearer) tokens, and the glossary keeps every word it must define."""
from __future__ import annotations

import ast
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
         "parameter space", "budget", "context budget", "memory budget", "prompt budget", "words", "terms", "tokens",
         "knob", "search", "Pareto front")
# Where a name may say "token(s)": the LM's tokens, an embedding model tokenizer's, a bearer token's.
TOKEN_PLACES = ("memarch/lm/", "memarch/pipeline/embed", "memarch/app/serve/", "memarch/cli/serve.py")
# Names that say LM tokens wherever they are defined.
LM_TOKEN_NAMES = {"lm_tokens", "tokens_in", "tokens_out", "max_tokens", "prompt_tokens", "completion_tokens"}
# (file, name): a defined name the rules allow by what it means there.
ALLOWED = {
    ("memarch/optimizers/compile/report.py", "tokens"): "CompileReport.tokens: the LM tokens the search spent",
    ("memarch/optimizers/search/pareto.py", "objective_front"): "the front over a study's own objectives",
}


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


def _defined_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every name a module defines: functions, classes, parameters, fields,
    variables and attributes it assigns (what it references is checked where that is defined)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.lineno, node.name))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension,
                               ast.withitem, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.optional_vars] if isinstance(node, ast.withitem) else [node.target]
            for target in targets:
                for t in ast.walk(target) if target is not None else ():
                    if isinstance(t, ast.Name):
                        out.append((t.lineno, t.id))
                    elif isinstance(t, ast.Attribute):
                        out.append((t.lineno, t.attr))
    return out


def _parts(name: str) -> set[str]:
    """The words of a name: ``TokenAuth`` -> {"token", "auth"}, ``no_memory_objective`` -> {...}."""
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)}


def _misnamed(path: str, tree: ast.AST) -> list[str]:
    bad = []
    for line, name in _defined_names(tree):
        parts, why = _parts(name), None
        if "objective" in parts:
            why = "'objective' is only a study's: a metric, a score or the trial function"
        elif parts & {"token", "tokens"} and name not in LM_TOKEN_NAMES and not path.startswith(TOKEN_PLACES):
            why = "'tokens' are the LM's: memarch counts words, the lexical side matches terms"
        if why and (path, name) not in ALLOWED:
            bad.append(f"{path}:{line}: {name!r} ({why})")
    return bad


def test_the_code_names_objective_and_tokens_by_the_glossary():
    bad = []
    for file in sorted((ROOT / "memarch").rglob("*.py")):
        path = file.relative_to(ROOT).as_posix()
        bad += _misnamed(path, ast.parse(file.read_text(encoding="utf-8")))
    assert not bad, "\n".join(bad)


def test_the_code_check_bites():
    """A metric named objective, words named tokens: found; a study's objectives and LM tokens: not."""
    code = ast.parse("def score(objective, objectives, lm_tokens):\n"
                     "    tokens = text.split()\n    self.token_budget = 200\n    for no_memory_objective in x: pass\n")
    found = [b.split(": ", 1)[1].split(" (")[0] for b in _misnamed("memarch/benchmarks/x.py", code)]
    assert sorted(found) == sorted(["'objective'", "'tokens'", "'token_budget'", "'no_memory_objective'"])
    assert not _misnamed("memarch/lm/x.py", ast.parse("tokens = usage['prompt_tokens']"))


def test_the_check_bites():
    """A public name the glossary replaced is found."""
    def evaluate(architecture, objective=None, budget_tokens=200):
        return architecture

    names = [n for _, n in _names_of("f", evaluate)]
    assert [n for n in names if n in BANNED] == ["objective", "budget_tokens"]
