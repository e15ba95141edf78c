"""Core types and the program: `Architecture` and `ArchitectureSpace` (validity), the module
registry and knobs, items, episodes, retrievals, `TrialResult`, `MemoryProgram` (+ JSON save/load,
`EvaluationRecord`), the hand-designed presets, embeddings, caches and `Resources` (with the memos of
texts it owns, `text_caches`), and the file readers (`files`, `json_list`).

Owns the types every other layer speaks; imports only ``memarch.errors`` (the bottom layer)."""
