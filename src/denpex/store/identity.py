"""A GPU's identity for an RMA ticket, read from ``nvidia-smi -q`` output.

Incidents quote failure lines, which rarely carry the serial number or VBIOS a vendor asks
for; the operator usually has ``nvidia-smi -q`` from the node at hand, so ``denpex rma
--identity FILE`` reads it. Layout read here (one section per GPU, values indented)::

    Driver Version                            : 535.104.05
    GPU 00000000:18:00.0
        Product Name                          : NVIDIA H100 80GB HBM3
        Serial Number                         : 1652923012345
        GPU UUID                              : GPU-2b5a3b8e-...
        VBIOS Version                         : 96.00.74.00.01
"""

from __future__ import annotations

import re

from denpex.collect.lineinfo import normalize_pci

# "GPU 00000000:18:00.0" starts a GPU's section (column 0).
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
# "    Serial Number          : 1652923012345": a key at the first indentation level of a section.
_FIELD = re.compile(r"^(\s*)([A-Za-z][\w ()/.-]*?)\s*:\s*(.*?)\s*$")
_GPU_KEYS = {"Product Name": "product", "Serial Number": "serial", "GPU UUID": "uuid", "VBIOS Version": "vbios",
             "Board Part Number": "board_part_number", "GPU Part Number": "gpu_part_number",
             "Board ID": "board_id", "Minor Number": "minor_number"}
_TOP_KEYS = {"Driver Version": "driver_version", "CUDA Version": "cuda_version"}
_EMPTY = {"", "N/A", "[N/A]", "Unknown Error", "Not Supported"}


def parse_nvidia_smi_q(text: str) -> dict[str, dict[str, str]]:
    """Identity fields per normalised PCI bus id; node-wide fields (driver) are copied into each."""
    top: dict[str, str] = {}
    gpus: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    section_indent: int | None = None
    for line in text.splitlines():
        m = _GPU_HEADER.match(line)
        if m:
            pci = normalize_pci(m.group(1))
            current = gpus.setdefault(pci, {"pci_bus_id": pci})
            section_indent = None
            continue
        f = _FIELD.match(line)
        if not f:
            continue
        indent, key, value = len(f.group(1)), f.group(2), f.group(3)
        if value in _EMPTY:
            continue
        if indent == 0 and key in _TOP_KEYS:
            top[_TOP_KEYS[key]] = value
        elif current is not None and key in _GPU_KEYS:
            if section_indent is None:
                section_indent = indent
            if indent == section_indent:  # deeper keys of the same name belong to sub-sections
                current.setdefault(_GPU_KEYS[key], value)
    for g in gpus.values():
        for k, v in top.items():
            g.setdefault(k, v)
    return gpus


def identity_for(gpus: dict[str, dict[str, str]], pci_bus_id: str, uuid: str) -> dict[str, str]:
    for g in gpus.values():
        if uuid and g.get("uuid") == uuid:
            return g
    if pci_bus_id and pci_bus_id in gpus:
        return gpus[pci_bus_id]
    return {}
