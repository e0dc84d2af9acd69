"""Denpex: why a GPU job died, who must act, and what to do next."""

__version__ = "0.1.0"
