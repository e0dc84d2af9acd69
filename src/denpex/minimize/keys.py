"""The local masking secret and the pseudonyms derived from it.

Pseudonyms are keyed hashes (HMAC-SHA256) so the same host, token or user gets the same
placeholder on every line, rank and incident of one site, while nobody without the site's key
can test a guess ("is host-3f9a1c2b gpu-node07?") against a stored incident. The key never
leaves ``DENPEX_HOME`` (default ``~/.denpex``) and is created 0600 on first use.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

KEY_FILE = "mask.key"
KEY_BYTES = 32


class MaskKeyError(OSError):
    """The masking key cannot be read or created."""


def denpex_home() -> Path:
    env = os.environ.get("DENPEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".denpex"


def load_or_create_key(home: Path | None = None) -> bytes:
    """The site key: read it, or create it atomically with owner-only permissions."""
    home = home or denpex_home()
    path = home / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    try:
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return _read(path)
    except OSError as exc:
        raise MaskKeyError(f"cannot create masking key {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_hex(KEY_BYTES) + "\n")
    return _read(path)


def _read(path: Path) -> bytes:
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise MaskKeyError(f"cannot read masking key {path}: {exc}") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise MaskKeyError(f"masking key {path} is not hex; delete it to create a new one") from None
    if len(key) < 16:
        raise MaskKeyError(f"masking key {path} is shorter than 16 bytes; delete it to create a new one")
    return key


def pseudonym(key: bytes, kind: str, value: str, length: int) -> str:
    """``length`` hex digits of HMAC(key, kind, value); kind keeps a host and an IP apart."""
    mac = hmac.new(key, f"{kind}\0{value}".encode("utf-8", "surrogateescape"), hashlib.sha256)
    return mac.hexdigest()[:length]
