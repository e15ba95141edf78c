"""Memory budgets: the words a namespace keeps (`count_words` over its active items), the
shared steps every budget policy ends with (refuse an item larger than the whole budget, prune
the lowest-utility items), and the rewrites the policies share (an extractive summary, one
item replacing several with lineage)."""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any, Callable

from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import SENTENCE_BREAK, count_words
from memarch.pipeline.text_caches import TextCaches, TextMemos

_WORD = re.compile(r"[A-Za-z0-9']+")
# Function words carry no content: a summary keeps the sentences with the most of the others.
STOPWORDS = frozenset("""a an the and or but if then so of to in on at by for with from as is are was were be been
being am do does did have has had i you he she it we they me him her us them my your his its our their this that
these those there here what which who whom how when where why not no yes oh just really very too also all any
some can could would should will shall may might must about into over out up down than like get got go going
yeah okay ok well hey hi thanks thank much lot so s t re ve ll d m""".split())


def parse_budget(value: Any) -> int | None:
    """``memory_budget`` config: a positive integer of words per namespace, or None (unlimited)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"memory_budget must be a positive integer of words (per namespace), not {value!r}")
    return value


class BudgetWords(TextMemos):
    """`count_words` of item texts, as one owner (`Resources.texts`) keeps it: every write under a
    budget re-counts the namespace, so a count is a dict lookup."""

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.words = self.memo(count_words, 1 << 16, "words")


def item_words(item: MemoryItem, texts: TextCaches | None = None) -> int:
    """``count_words(item.text)``, through ``texts``' memo (the store's `Resources.texts`) if given."""
    return (count_words if texts is None else texts[BudgetWords].words)(item.text)


def active_words(store: Any, namespace: str) -> int:
    """What the budget counts: words of the namespace's active items."""
    words = store.resources.texts[BudgetWords].words
    return sum(words(it.text) for it in store.list(namespace))


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1]


def extractive_summary(texts: list[str], max_words: int) -> str:
    """Sentences of ``texts`` ranked by their count of content words (ties: earlier first), the
    best kept in their original order while they fit ``max_words``; "" when none fits."""
    sentences = [s.strip() for t in texts for s in SENTENCE_BREAK.split(t) if s.strip()]
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(set(content_words(sentences[i]))), i))
    chosen, used = [], 0
    for i in ranked:
        n = count_words(sentences[i])
        if n and used + n <= max_words and content_words(sentences[i]):
            chosen.append(i)
            used += n
    return " ".join(sentences[i] for i in sorted(chosen))


def combined_item(members: list[MemoryItem], text: str, kind: str, namespace: str, *,
                  how: str, fields: dict[str, Any] | None = None) -> MemoryItem:
    """One item that stands for ``members``: their provenance (source ids, episodes, latest time)."""
    ids = [m.id for m in members]
    outcomes = {m.outcome for m in members}
    digest = hashlib.sha1("\x1f".join(sorted(ids)).encode()).hexdigest()[:12]
    return MemoryItem(
        text=text, kind=kind, namespace=namespace, id=f"{kind}-{how}-{digest}",
        fields={**(fields or {}), "merged_from": ids, how: True,
                "episodes": sorted({m.episode_id for m in members if m.episode_id})},
        episode_id=members[-1].episode_id,
        source_ids=list(dict.fromkeys(s for m in members for s in m.source_ids)),
        outcome=outcomes.pop() if len(outcomes) == 1 else "unknown",
        event_time=max((m.event_time for m in members if m.event_time), default=None),
    )


def replace_with(manager: Any, members: list[MemoryItem], item: MemoryItem, store: Any, reason: str) -> MemoryItem:
    """``item`` joins the store in place of ``members``: it names them (``merged_from``, with their
    texts in ``data.absorbed`` = {id: text}), each of them becomes a tombstone superseded by it
    with ``reason``."""
    ns = item.namespace
    at = manager.at(store, ns, item.event_time)
    item.usage.strength = max(m.usage.strength for m in members)
    item.usage.retrieved = sum(m.usage.retrieved for m in members)
    item.usage.helped_success = sum(m.usage.helped_success for m in members)
    item.usage.helped_failure = sum(m.usage.helped_failure for m in members)
    last = [m.usage.last_used for m in members if m.usage.last_used is not None and str(m.usage.last_used).isdigit()]
    item.usage.last_used = max(last, key=int) if last else None
    item.log("merged_from", manager.actor, reason, [m.id for m in members], at,
             tick=manager.tick(store, ns), words_before=sum(item_words(m, store.resources.texts) for m in members),
             words_after=item_words(item, store.resources.texts), absorbed={m.id: m.text for m in members})
    store.add([item])
    for m in members:
        store.delete(m.id, ns, reason=reason, actor=manager.actor, at=at, status="superseded", related=[item.id])
    return item


def prune_lowest(manager: Any, store: Any, namespace: str, budget: int,
                 utility: Callable[[MemoryItem], float], order: Callable[[MemoryItem], Any], why: str) -> int:
    """Tombstone items, lowest utility first (ties by ``order``: oldest first), until the namespace
    fits ``budget``; returns how many left."""
    total = active_words(store, namespace)
    dropped = 0
    for it in sorted(store.list(namespace), key=lambda it: (utility(it), order(it))):
        if total <= budget:
            break
        u = utility(it)
        manager.tombstone(it, store, f"budget: {why} (utility {u:.3f}; {total} > {budget} words)")
        total -= item_words(it, store.resources.texts)
        dropped += 1
    manager.budget_stats["pruned"] += dropped
    return dropped


def refuse_oversized(manager: Any, store: Any, namespace: str, budget: int) -> int:
    """An item longer than the whole budget can never fit: refused (a tombstone), never truncated."""
    refused = 0
    for it in store.list(namespace):
        n = item_words(it, store.resources.texts)
        if n > budget:
            manager.tombstone(it, store, f"budget: refused, the item has {n} words, more than the whole "
                                         f"budget of {budget}")
            refused += 1
    manager.budget_stats["refused"] += refused
    return refused


def new_stats() -> Counter:
    """What budget enforcement did, counted (shown by `memarch evaluate`)."""
    return Counter({"passes": 0, "refused": 0, "merged": 0, "compressed": 0, "generalised": 0, "pruned": 0,
                    "lm_texts": 0})
