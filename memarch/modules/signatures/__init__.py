"""Typed DSPy Signatures, one file per module family: the contracts of every LM call memarch makes."""
