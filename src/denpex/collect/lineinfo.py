"""Who and where a line speaks for: rank, host, process, GPU, read from its prefixes.

Launchers and libraries prefix lines in a handful of ways; each regex below names the tool
that writes it. Only the head of the line is examined for prefixes, so text quoted later in a
message (a peer's rank, another host) is left to the signatures' own fields.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

# torchrun --tee / PyTorch rank-prefixed logging: "[rank3]:..." or "[default3]:...", possibly after
# a time stamp or pid a log collector added ("2024-11-20 14:37:16 [rank3]: ...", "[1786] [rank0]:...")
_TORCHRUN = re.compile(r"^(?:[\d\-:T.,/ ]{8,32} |\[\d+\] )?\[(?:rank|default|worker|trainer)(\d+)\]:\s?")
# mpirun --tag-output: "[1,3]<stdout>:..."
_MPIRUN = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:out|err)>:\s?")
# srun --label: "3: ..." (enabled per file, once most lines carry it)
SRUN_LABEL = re.compile(r"^\s{0,4}(\d{1,5}): ")
# DeepSpeed's and GPT-NeoX's pdsh runner, clush, talosctl: "node01: [rank3]: ..." or "10.0.0.2: ..."
# (enabled per file, once enough lines carry one of a few such prefixes; see ``host_prefixes``)
_HOST_PREFIX = re.compile(r"^([A-Za-z0-9][\w.-]{0,62}): (?=[^\n])", re.M)
# Words that start lines the way a host does ("error: ...") and labels that are not hosts.
_NOT_HOSTS = frozenset({"info", "warning", "warn", "error", "debug", "note", "notice", "trace", "fatal",
                        "critical", "hint", "usage", "exception", "traceback", "caused-by", "step", "epoch"})
_NOT_HOST_PREFIXES = ("slurmstepd", "srun", "pdsh", "sshd", "systemd", "kernel", "python")
MAX_HOST_PREFIXES = 64
# NCCL_DEBUG: "node01:1234:5678 [3] NCCL INFO ..." (host:pid:tid [cudaDev])
_NCCL = re.compile(r"(?:^|\s)([A-Za-z0-9][\w.-]*):(\d+):(\d+) \[(\d+)\] (?:[\w/.]+:\d+ )?(?:\(\w+\) )?NCCL ")
# PyTorch c10d: "[Rank 3]" / "[PG 0 (default_pg) Rank 3]"
_C10D_RANK = re.compile(r"\[(?:PG [^\]]*?)?Rank (\d+)\]")
# kernel: "NVRM: Xid (PCI:0000:3b:00): 79" / nvidia-smi "00000000:3B:00.0" / NCCL "busId 3b000"
_PCI_XID = re.compile(r"\(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\)")
_PCI_FULL = re.compile(r"(?<![\w:])([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\b")
_GPU_UUID = re.compile(r"\b(GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b")
# journalctl -o short-iso: "2024-05-01T12:00:00+0000 host kernel: ..."
_ISO_HOST = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d:.,]+(?:Z|[+-]\d{2}:?\d{2})? (\S+) [\w./-]+(?:\[\d+\])?: ")
_HEAD = 200
# The same two regexes from the literal they must hold, which re finds by a fast scan (the
# forms above try every position of a line: 7-11 us per matched line); the head of each match
# (host, PCI domain) is checked by hand. ``find_nccl_prefix`` / ``find_pci_full`` give the same
# match as the forms above (tested).
_NCCL_TAIL = re.compile(r":(\d+):(\d+) \[(\d+)\] (?:[\w/.]+:\d+ )?(?:\(\w+\) )?NCCL ")
_HOST_FIRST = frozenset(string.ascii_letters + string.digits)
_PCI_TAIL = re.compile(r":([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\b")
_HEX = frozenset(string.hexdigits)


@dataclass
class LineInfo:
    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    gpu_index: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None


def normalize_pci(raw: str) -> str:
    """0000:3b:00 / 00000000:3B:00.0 / 3b000 (NCCL busId) -> 0000:3b:00.0."""
    raw = raw.strip().lower()
    if re.fullmatch(r"[0-9a-f]{1,6}", raw):  # NCCL busId: bus, device, function packed in hex
        val = int(raw, 16)
        return f"0000:{(val >> 12) & 0xFF:02x}:{(val >> 4) & 0xFF:02x}.{val & 0xF}"
    parts = raw.split(":")
    if len(parts) == 3:
        dom, bus, devfn = parts
        dom = dom[-4:].rjust(4, "0")
        if "." not in devfn:
            devfn += ".0"
        return f"{dom}:{bus}:{devfn}"
    return raw


def find_nccl_prefix(head: str) -> tuple[str, int, int, int] | None:
    """(host, pid, tid, cudaDev) of NCCL's debug prefix: what ``_NCCL.search`` finds first."""
    pos = 0
    while (m := _NCCL_TAIL.search(head, pos)) is not None:
        colon = start = m.start()
        while start > 0 and _word(head[start - 1], "_.-"):
            start -= 1
        # re's \w and \s on str are str.isalnum() (or "_") and str.isspace().
        if (start < colon and head[start] in _HOST_FIRST
                and (start == 0 or head[start - 1].isspace())):
            return head[start:colon], int(m.group(1)), int(m.group(2)), int(m.group(3))
        pos = colon + 1
    return None


def find_pci_full(head: str) -> str | None:
    """A full PCI id (domain:bus:device.function) as written: what ``_PCI_FULL.search`` finds first."""
    pos = 0
    while (m := _PCI_TAIL.search(head, pos)) is not None:
        colon = start = m.start()
        while start > 0 and head[start - 1] in _HEX and colon - start < 9:
            start -= 1
        if 4 <= colon - start <= 8 and (start == 0 or not _word(head[start - 1], "_:")):
            return f"{head[start:colon]}:{m.group(1)}:{m.group(2)}.{m.group(3)}"
        pos = colon + 1
    return None


def _word(ch: str, extra: str) -> bool:
    return ch.isalnum() or ch in extra


def strip_prefix_rank(line: str, srun_labels: bool) -> tuple[str, int | None]:
    """Remove launcher prefixes; return the rest of the line and the rank they named.

    ``[rankN]`` is PyTorch's global rank; ``[defaultN]`` is torchrun's worker prefix, which is
    the local rank in several releases, so a ``[rankN]`` in the same line wins over it.
    """
    rank: int | None = None
    weak: int | None = None
    for _ in range(4):
        m = _TORCHRUN.match(line) or _MPIRUN.match(line)
        if m:
            val = int(m.group(1))
            if "[default" in m.group(0) or "[worker" in m.group(0):
                weak = val if weak is None else weak
            elif rank is None:
                rank = val
            line = line[m.end():]
            continue
        if srun_labels:
            m = SRUN_LABEL.match(line)
            if m:
                rank = int(m.group(1)) if rank is None else rank
                line = line[m.end():]
                continue
        break
    return line, rank if rank is not None else weak


def parse_line_info(line: str, srun_labels: bool = False) -> LineInfo:
    info = LineInfo()
    body, info.rank = strip_prefix_rank(line, srun_labels)
    head = body[:_HEAD]
    # Each regex runs only when a cheap substring test says it could match: this runs for
    # every matched line, and most matched lines carry none of these.
    if "NCCL" in head:
        nccl = find_nccl_prefix(head)
        if nccl:
            info.host, info.pid, info.gpu_index = nccl[0], nccl[1], nccl[3]
    if info.rank is None and "Rank " in head:
        m = _C10D_RANK.search(head)
        if m:
            info.rank = int(m.group(1))
    if info.host is None and body[:4].isdigit():
        m = _ISO_HOST.match(body)
        if m:
            info.host = m.group(1)
    m = _PCI_XID.search(body) if "(PCI:" in body else None
    if m:
        info.pci_bus_id = normalize_pci(m.group(1))
    elif head.count(":") >= 2:
        pci = find_pci_full(head)
        if pci:
            info.pci_bus_id = normalize_pci(pci)
    if "GPU-" in body:
        m = _GPU_UUID.search(body)
        if m:
            info.uuid = m.group(1)
    return info


def looks_srun_labelled(sample_lines: list[str]) -> bool:
    """srun --label output: most non-empty lines start with 'N: '."""
    lines = [ln for ln in sample_lines if ln.strip()]
    if len(lines) < 2:
        return False
    hits = sum(1 for ln in lines if SRUN_LABEL.match(ln))
    if len(lines) == 2:
        return hits == 2  # a two-line excerpt: both lines must carry the label
    return hits >= 0.6 * len(lines)


def looks_mpi_tagged(sample_lines: list[str]) -> bool:
    """mpirun --tag-output / horovodrun output: a fifth or more of the non-empty lines start with "[1,3]<stderr>:"."""
    lines = [ln for ln in sample_lines if ln.strip()]
    if not lines:
        return False
    hits = sum(1 for ln in lines if _MPIRUN.match(ln))
    return hits >= max(1, 0.2 * len(lines))


def host_prefixes(sample: str) -> tuple[str, ...]:
    """Hosts whose name prefixes lines of a multi-node launcher's output ("worker-1: ...").

    pdsh-based runners (DeepSpeed, GPT-NeoX) put every line of every node behind the node's
    name, so a traceback's lines no longer start where signatures expect them. A prefix counts
    as a host when it looks like one (digits, dots or dashes in it, or "localhost"), is no log
    level or program label, and starts at least three of the sample's lines (every line of a
    shorter excerpt); the hosts together must start at least a fifth of its non-empty lines.
    """
    counts: dict[str, int] = {}
    for name in _HOST_PREFIX.findall(sample):
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return ()
    lines = sum(1 for ln in sample.split("\n") if ln.strip())
    hosts = sorted(h for h, n in counts.items() if n >= min(3, lines) and _looks_like_host(h))
    if not hosts or sum(counts[h] for h in hosts) < 0.2 * lines:
        return ()
    return tuple(hosts[:MAX_HOST_PREFIXES])


def _looks_like_host(name: str) -> bool:
    low = name.lower()
    if name.isdigit() or low in _NOT_HOSTS or low.startswith(_NOT_HOST_PREFIXES):
        return False
    return low == "localhost" or any(ch.isdigit() or ch in "-." for ch in name)
