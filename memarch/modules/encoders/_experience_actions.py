"""Reading agent actions as structure: a verb, typed entity slots, and whether the step did
anything — the shared ground of the LM-free experience encoders (workflow, shortcut, tip, ...)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from memarch.pipeline.episodes import Episode, Step

# Prepositions that open a slot and the slot type they give it ("take apple from fridge").
SLOT_PREPOSITIONS = {
    "to": "LOCATION", "from": "LOCATION", "in": "LOCATION", "into": "LOCATION", "on": "LOCATION",
    "onto": "LOCATION", "at": "LOCATION", "inside": "LOCATION", "under": "LOCATION",
    "with": "TOOL", "using": "TOOL", "for": "TARGET", "about": "TOPIC",
}
DETERMINERS = {"the", "a", "an", "some", "my", "your", "this", "that"}
# Words that are part of the action vocabulary, not entities ("go north", "look around").
NON_ENTITIES = {"north", "south", "east", "west", "up", "down", "left", "right", "around", "all",
                "inventory", "it", "them", "here", "there", "back", "forward", "out", "off"}
# Verbs that only gather information: never the key decision, candidates for "incomplete search".
INFO_VERBS = {"look", "examine", "inventory", "read", "check", "search", "find", "browse", "inspect",
              "list", "view", "open_page", "visit", "query", "lookup", "scroll"}
NAVIGATION_VERBS = {"go", "move", "walk", "goto", "navigate", "enter", "exit", "climb", "north", "south",
                    "east", "west"}
STOPWORDS = {"the", "a", "an", "of", "to", "in", "on", "and", "or", "for", "with", "from", "into", "at",
             "is", "it", "be", "by", "your", "you", "then", "that", "this", "as", "its", "some"}

_ERROR_PATTERNS = re.compile(
    r"nothing happens|you can'?t|can ?not|cannot|not (?:found|possible|allowed|valid)|invalid|"
    r"unknown (?:command|action)|i don'?t (?:understand|know)|don'?t see|no such|doesn'?t|does not|"
    r"is locked|must first|\bfailed\b|\berror\b|exception|traceback|timed? ?out|"
    r"not recogni[sz]ed|unable to|there is no|you don'?t have", re.I)
_CALL_FORM = re.compile(r"^\s*([\w.\-]+)\s*[\[(](.*)[\])]\s*$", re.S)
_WORD = re.compile(r"\"[^\"]*\"|'[^']*'|\S+")  # a word, or a quoted phrase as one
_NUMBER = re.compile(r"^[-+]?\d+(?:[.,]\d+)?%?$")


@dataclass(frozen=True)
class Slot:
    """One entity in an action: its type (OBJECT, LOCATION, ...) and the concrete value."""

    type: str
    value: str


@dataclass
class ParsedAction:
    """An action split into a verb and an abstract form with ``{0}``, ``{1}`` slot markers.

    Example::

        parse_action("take the apple from fridge")
        # ParsedAction(verb="take", form="take {0} from {1}",
        #              slots=[Slot("OBJECT", "apple"), Slot("LOCATION", "fridge")])
    """

    verb: str
    form: str
    slots: list[Slot] = field(default_factory=list)
    raw: str = ""

    def generic(self) -> str:
        """The form with every slot replaced by its bare type: equal for equal shapes."""
        return self.form.format(*(f"<{s.type}>" for s in self.slots))


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 1}


def _slot_type(phrase: list[str], default: str) -> str:
    joined = " ".join(phrase)
    if len(phrase) == 1 and (phrase[0][:1] in "\"'"):
        return "TEXT"
    if len(phrase) == 1 and _NUMBER.match(phrase[0]):
        return "NUMBER"
    if all(w[:1].isupper() for w in phrase if w) and joined.strip():
        return "NAME"
    return default


def _is_entity_phrase(phrase: list[str], task_words: set[str]) -> bool:
    words = [w.lower() for w in phrase]
    if all(w in NON_ENTITIES for w in words):
        # Vocabulary words stay literal unless the task itself names them.
        return any(w in task_words for w in words)
    return True


def parse_action(action: str, task_words: set[str] | None = None) -> ParsedAction:
    """Split an action into verb, abstract form and typed slots.

    Handles text-game commands (``put apple in fridge``) and tool calls (``search[query]``,
    ``lookup(city="Paris")``). Quoted strings, numbers and capitalised names become TEXT,
    NUMBER and NAME slots; object phrases after the verb become OBJECT; phrases after a
    preposition are typed by it (LOCATION, TOOL, ...).
    """
    task_words = task_words or set()
    text = action.strip()
    call = _CALL_FORM.match(text)
    if call:
        verb, inner = call.group(1).lower(), call.group(2).strip()
        open_, close = ("[", "]") if text.rstrip().endswith("]") else ("(", ")")
        if not inner:
            return ParsedAction(verb, f"{verb}{open_}{close}", [], action)
        parts, slots = [], []
        for arg in [a.strip() for a in inner.split(",")]:
            name, eq, value = arg.partition("=")
            if eq:
                slots.append(Slot(name.strip().upper(), value.strip().strip("\"'")))
                parts.append(f"{name.strip()}={{{len(slots) - 1}}}")
            else:
                slots.append(Slot(_slot_type([arg], "ARG"), arg.strip("\"'")))
                parts.append(f"{{{len(slots) - 1}}}")
        return ParsedAction(verb, f"{verb}{open_}{', '.join(parts)}{close}", slots, action)

    action_words = _WORD.findall(text)
    if not action_words:
        return ParsedAction("", "", [], action)
    verb = action_words[0].lower()
    form: list[str] = [verb]
    slots: list[Slot] = []
    phrase: list[str] = []
    kind = "LOCATION" if verb in NAVIGATION_VERBS else "OBJECT"

    def flush() -> None:
        words = [w for w in phrase if w.lower() not in DETERMINERS]
        if words and _is_entity_phrase(words, task_words):
            slots.append(Slot(_slot_type(words, kind), " ".join(words).strip("\"'")))
            form.append(f"{{{len(slots) - 1}}}")
        elif words:
            form.append(" ".join(w.lower() for w in words))
        phrase.clear()

    for word in action_words[1:]:
        low = word.lower()
        if low in SLOT_PREPOSITIONS:
            flush()
            form.append(low)
            kind = SLOT_PREPOSITIONS[low]
        else:
            phrase.append(word)
    flush()
    return ParsedAction(verb, " ".join(form), slots, action)


def is_error(step: Step) -> bool:
    """Did the environment reject the step? (error metadata or an error-like observation)"""
    meta = step.metadata or {}
    if meta.get("error") or str(meta.get("status", "")).lower() in {"error", "failed", "invalid"}:
        return True
    return bool(_ERROR_PATTERNS.search(step.observation or ""))


def is_info(parsed: ParsedAction) -> bool:
    return parsed.verb in INFO_VERBS


def placeholder_names(slot_lists: list[list[Slot]]) -> list[list[str]]:
    """Name the slots of consecutive actions: the same value keeps one name (typed by its first
    use, so ``go to fridge`` / ``open fridge`` share ``<LOCATION>``); a second distinct value of
    a type gets a numbered name (``<OBJECT>``, ``<OBJECT_2>``)."""
    by_value: dict[str, str] = {}
    per_type: dict[str, int] = {}
    out: list[list[str]] = []
    for slots in slot_lists:
        names = []
        for s in slots:
            key = s.value.lower()
            if key not in by_value:
                per_type[s.type] = per_type.get(s.type, 0) + 1
                n = per_type[s.type]
                by_value[key] = s.type if n == 1 else f"{s.type}_{n}"
            names.append(by_value[key])
        out.append(names)
    return out


def abstract_actions(parsed: list[ParsedAction]) -> tuple[list[str], dict[str, str]]:
    """Abstract steps with ``<PLACEHOLDER>`` slots and the binding placeholder -> value."""
    names = placeholder_names([p.slots for p in parsed])
    steps, binding = [], {}
    for p, ns in zip(parsed, names):
        steps.append(p.form.format(*(f"<{n}>" for n in ns)))
        for n, s in zip(ns, p.slots):
            binding.setdefault(n, s.value)
    return steps, binding


def abstract_text(text: str, binding: dict[str, str]) -> str:
    """Replace bound values in free text (the task) by their placeholders, longest value first."""
    out = text
    for name, value in sorted(binding.items(), key=lambda kv: -len(kv[1])):
        if len(value) < 2:
            continue
        out = re.sub(rf"(?<![\w<])(?:the |a |an )?{re.escape(value)}(?![\w>])", f"<{name}>", out, flags=re.I)
    return out


def instantiate(steps: list[str], arguments: dict[str, str]) -> list[str]:
    """Fill ``<PLACEHOLDER>`` slots with arguments (unknown placeholders stay as they are)."""
    def fill(s: str) -> str:
        return re.sub(r"<([A-Z][A-Z0-9_]*)>", lambda m: str(arguments.get(m.group(1), m.group(0))), s)
    return [fill(s) for s in steps]


def parse_episode(episode: Episode) -> list[ParsedAction]:
    words = content_words(episode.task)
    return [parse_action(s.action, words) for s in episode.steps]
