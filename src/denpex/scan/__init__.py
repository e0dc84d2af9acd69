"""Matching: find every catalog signature in every line, fast."""
