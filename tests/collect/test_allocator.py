"""The allocator setting for large inputs: harmless to call, once or many times."""

from __future__ import annotations

import sys

from denpex.collect.allocator import reuse_freed_blocks


def test_keeping_freed_blocks_is_accepted_on_glibc_and_idempotent() -> None:
    first = reuse_freed_blocks()
    assert reuse_freed_blocks() is first
    if sys.platform.startswith("linux"):
        import platform

        if platform.libc_ver()[0] == "glibc":
            assert first is True
