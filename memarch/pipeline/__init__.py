"""Core types and runtime: architecture, items, episodes, program, embeddings, caches."""
