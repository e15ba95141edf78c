"""The app facade: `memarch.Memory` — a compiled program (or an architecture) serving one memory on
disk: add messages, search, context, history, delete; its SQLite state and the message parsing.

May import: ``pipeline`` and the layers below ``optimizers``; the CLI sits above it."""
