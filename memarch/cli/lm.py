"""``memarch lm``: start the chosen LMs, send each one typed call, print what came back and what it
cost — a smoke test that an endpoint (or the embedded model) works with memarch's structured calls."""
from __future__ import annotations

import json
import time
from typing import Literal

HELP = "smoke-test the LMs: start them, send one typed call per role, print the answer and token counts"


def add_arguments(p) -> None:
    from memarch.lm import add_lm_arguments

    add_lm_arguments(p, default="local")
    for action in p._actions:  # the shared help says the default is none; here it is local
        if "--lm" in action.option_strings:
            action.help = action.help.replace("none (default: the LM-free space), local (", "local (default; ")
    p.add_argument("--question", default="A store holds 3 boxes with 4 apples each. How many apples are there?",
                   help="the question of the typed call")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _signature():
    import dspy

    class SmokeAnswer(dspy.Signature):
        """Answer the question with a whole number and say how sure you are."""

        question: str = dspy.InputField()
        answer: int = dspy.OutputField(desc="the number only")
        confidence: Literal["low", "medium", "high"] = dspy.OutputField()

    return SmokeAnswer


def run(args) -> int:
    import dspy

    from memarch.lm import LMOutputError, call_typed, roles_from_args

    report: dict = {"roles": {}, "calls": []}
    with roles_from_args(args) as roles:
        report["roles"] = roles.describe()
        if not roles.any_lm:
            print("no LM configured (--lm none): nothing to test")
            return 0
        if roles.server is not None:
            report["local_server"] = {"url": roles.server.base_url, "threads": roles.server.threads,
                                      "load_s": round(roles.server.load_s or 0.0, 2)}
        tested: set[str] = set()
        for role in ("task", "meta", "judge"):
            spec = str(roles.specs[role])
            lm = roles.lms[role]
            if lm is None or spec in tested:
                continue
            tested.add(spec)
            before = roles.accounting.snapshot()
            started = time.perf_counter()
            call = {"role": role, "lm": spec}
            try:
                pred = call_typed(dspy.Predict(_signature()), lm, question=args.question)
                call.update(ok=True, answer=pred.answer, confidence=pred.confidence,
                            types=f"answer:{type(pred.answer).__name__} confidence:{type(pred.confidence).__name__}")
            except LMOutputError as exc:
                call.update(ok=False, error=f"answer did not parse: {exc}")
            call["wall_s"] = round(time.perf_counter() - started, 2)
            usage = roles.accounting.delta(before).roles.get(role)
            if usage is not None:
                call.update(calls=usage.calls, cached=usage.cached, tokens_in=usage.tokens_in,
                            tokens_out=usage.tokens_out)
            report["calls"].append(call)
        port = roles.server.port if roles.server is not None else None
    if port is not None:
        from memarch.lm.local import port_open

        report["local_server"]["released"] = not port_open(port)
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    else:
        _print(report)
    return 0 if all(c.get("ok") for c in report["calls"]) else 1


def _print(report: dict) -> None:
    print("roles: " + ", ".join(f"{r}={s}" for r, s in report["roles"].items()))
    if "local_server" in report:
        s = report["local_server"]
        print(f"embedded model: {s['url']} ({s['threads']} threads, loaded in {s['load_s']}s)")
    for c in report["calls"]:
        head = f"[{c['role']}] {c['lm']}: "
        if c.get("ok"):
            print(head + f"answer={c['answer']!r} confidence={c['confidence']!r} ({c['types']})")
        else:
            print(head + c.get("error", "failed"))
        print(f"    {c.get('calls', 0)} LM call(s), {c.get('cached', 0)} cached, tokens in {c.get('tokens_in', 0)}"
              f" / out {c.get('tokens_out', 0)}, {c['wall_s']}s")
    if "local_server" in report:
        print("embedded model released: " + ("yes" if report["local_server"].get("released") else "NO"))
