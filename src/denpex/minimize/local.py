"""``DENPEX_LOCAL=1`` / ``--local``: this process opens no network socket, provably.

Not a promise kept by each code path but a rule the interpreter enforces: an audit hook
refuses every socket creation for an internet family, every connect, bind, send and name
lookup, with an error that says why. Audit hooks cannot be removed, so once on, it stays on
for the life of the process; the environment variable carries it to child processes.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

ENV = "DENPEX_LOCAL"
_INET = {int(socket.AF_INET), int(socket.AF_INET6)}
# Audit events that reach the network (https://docs.python.org/3/library/audit_events.html).
_REFUSED = frozenset({
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo", "urllib.Request",
    "http.client.connect", "ftplib.connect", "smtplib.connect", "poplib.connect", "imaplib.open",
    "nntplib.connect", "telnetlib.Telnet.open",
})
_installed = False


class LocalModeViolation(PermissionError):
    """Raised in place of a network operation while local mode is on."""


def local_requested(environ: dict[str, str] | None = None) -> bool:
    value = (environ if environ is not None else os.environ).get(ENV, "")
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.__new__":
        family = args[1] if len(args) > 1 else None
        if isinstance(family, int) and family in _INET:
            raise LocalModeViolation(f"denpex: local mode ({ENV}=1): refusing to open a network socket")
        return
    if event in _REFUSED:
        raise LocalModeViolation(f"denpex: local mode ({ENV}=1): refusing network operation {event}")


def enforce_local() -> None:
    """Install the hook (once) and export the setting to child processes."""
    global _installed
    os.environ[ENV] = "1"
    if _installed:
        return
    sys.addaudithook(_hook)
    _installed = True


def is_enforced() -> bool:
    return _installed
