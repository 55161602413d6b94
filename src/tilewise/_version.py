"""The tilewise version: bumped when results change (the solution store keys on it)."""

__version__ = "0.4.1"
