"""Whose code raised a generic exception: the file of the traceback's last frame.

A bare RuntimeError or a library's own exception class says nothing about who must act; the
traceback above it does. The frame nearest the exception line is where it was raised: inside
an installed library (site-packages, dist-packages) the library's code gave up, in the job's
own files the job's code did. Frames of Python's standard library are passed over (a socket
or subprocess call raises on behalf of whoever called it).
"""

from __future__ import annotations

import re

FRAME = re.compile(rb'File "([^"\n]+)", line \d+')  # behind any launcher prefix ("[rank3]:", "0: ", a host)
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
# A framework's own package inside a source checkout (a container's /opt/megatron-lm, a
# pip install -e of vLLM): the package directory, with more of the package below it. Engines
# and runtimes only; glue libraries that mostly raise about the job's own configuration
# (accelerate, Lightning, transformers' argument checks) are left to site-packages. The
# masker keeps these directories in masked paths (minimize/detectors.py).
FRAMEWORK_TREES = ("megatron/core", "megatron/training", "torch", "deepspeed", "vllm", "sglang", "tensorrt_llm",
                   "nemo/collections", "apex", "jax", "flax", "xformers", "flash_attn", "triton", "verl",
                   "torchtitan", "torchtune")
_FRAMEWORK_TREE = re.compile(r"[/\\](?:" + "|".join(t.replace("/", r"[/\\]") for t in FRAMEWORK_TREES)
                             + r")[/\\][\w./\\-]+\.py$")
_STDLIB = re.compile(r"^<frozen |[/\\]lib[/\\]python\d+(?:\.\d+)?[/\\](?!(?:site|dist)-packages)"
                     r"|[/\\]Lib[/\\](?!site-packages)")
# PyTorch's native stack dump writes C++ frames as Python ones ('File "<unknown>", line 0, in
# crc32_16bytes(...)'): no file of anyone's, so the search goes on above them.
_NATIVE = frozenset({"<unknown>"})
_HEADER = re.compile(rb"Traceback \(most recent call last\)|^\s*$")
LOOKBACK_LINES = 40  # a traceback's frames and code lines above its exception line


def raising_frame(data: bytes, ls: int) -> str | None:
    """The file of the last non-stdlib frame above (or on) the line starting at ``ls``; None when none is near."""
    pos = data.find(b"\n", ls)
    end = len(data) if pos < 0 else pos
    for _ in range(LOOKBACK_LINES):
        start = data.rfind(b"\n", 0, end) + 1
        line = data[start:end]
        m = FRAME.search(line)
        if m:
            path = m.group(1).decode("utf-8", "replace")
            if not _STDLIB.search(path) and path not in _NATIVE:
                return path
        elif start < ls and _HEADER.search(line):
            return None  # the traceback's start (or a blank line) before any frame that counts
        if start == 0:
            return None
        end = start - 1
    return None


def owner_of_frame(path: str) -> str:
    """``framework`` for an installed library's file or an engine's package in a checkout, else ``user_code``."""
    return "framework" if _LIBRARY.search(path) or _FRAMEWORK_TREE.search(path) else "user_code"
