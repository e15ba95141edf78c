"""Signatures of the retrievers' LM calls: candidate reranking (cbr_rerank) and the hypothetical
passage (hyde)."""
from __future__ import annotations

import dspy


class RerankCandidates(dspy.Signature):
    """Rate how useful each memory candidate is for the query (a question to answer or a task to
    solve): 10 = directly answers it or gives the exact procedure, 5 = related and partly useful,
    1 = unrelated. Return exactly one integer from 1 to 10 per candidate, in the order given."""

    query: str = dspy.InputField(desc="the question or task being answered")
    candidates: list[str] = dspy.InputField(desc="memory candidates, numbered [1], [2], ...")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    scores: list[int] = dspy.OutputField(desc="one score 1-10 per candidate, same order and count")


class HypotheticalPassage(dspy.Signature):
    """Write the memory passage that would best answer the query: 2-4 plain sentences, as a note
    an assistant could have stored earlier. Invent plausible specifics; never say you do not know."""

    query: str = dspy.InputField(desc="the question or task being answered")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    passage: str = dspy.OutputField(desc="the hypothetical passage")
