"""The agents that act on agent benchmarks: the LM-free memory-guided agent, its DSPy counterpart,
and memory as a skill (the note actions of a ``files`` store, a fixed note policy, a ReAct agent
with the notes as tools).

May import: ``modules`` (signatures), ``lm``, ``pipeline``."""
