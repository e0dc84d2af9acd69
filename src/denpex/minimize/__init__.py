"""Minimize before anything leaves: masking, strict signature-only payloads, local mode."""

from denpex.minimize.keys import MaskKeyError, denpex_home, load_or_create_key
from denpex.minimize.local import LocalModeViolation, enforce_local, local_requested
from denpex.minimize.masker import LineMasker, Masker

__all__ = ["LineMasker", "LocalModeViolation", "MaskKeyError", "Masker", "denpex_home", "enforce_local",
           "load_or_create_key", "local_requested"]
