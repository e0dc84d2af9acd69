"""Every failure text in the shared reference lists is recognised by the catalog.

Why: the reference lists (``../shared/reference/*.tsv``) are the inventory of what GPU jobs
print when they fail. Each row in scope is turned into a concrete log line (placeholders such
as ``<pid>``, ``%d``, ``{}`` filled in, the usual prefix added) and run through the real
engine. A row may be left out only with a written reason in
``reference_coverage_exceptions.toml``; an exception for a row that is now covered fails too,
so that file stays honest. Tables generated from a reference file must be current
(``--check``) and say in their header that they are generated.

The tests skip when ``../shared/reference`` is absent (CI may run without it).
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from denpex.catalog import Catalog
from denpex.catalog.model import Signature
from denpex.scan.engine import ReEngine, match_line

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO.parent / "shared" / "reference"
EXCEPTIONS = Path(__file__).with_name("reference_coverage_exceptions.toml")

pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="../shared/reference is absent")

GENERATORS = {
    "tools/gen_xid_catalog.py": ["src/denpex/catalog/rules/xid/xid.toml",
                                 "src/denpex/catalog/rules/xid/xid.examples.log"],
    "tools/gen_sxid_catalog.py": ["src/denpex/catalog/rules/sxid/sxid.toml",
                                  "src/denpex/catalog/rules/sxid/sxid.examples.log"],
    "tools/gen_cuda_catalog.py": ["src/denpex/catalog/rules/cuda/cuda.toml",
                                  "src/denpex/catalog/rules/cuda/cuda.examples.log"],
}

# ---------------------------------------------------------------------------------------------
# Turning a reference text into a concrete line


@dataclass(frozen=True)
class Case:
    """One reference row: the lines it stands for and what a match must satisfy."""

    file: str
    key: str
    lines: tuple[str, ...]
    # "xid:<code>", "sxid:<code>" (exactly that id within the family), "cuda" (a cuda.*
    # signature), "owned" (a signature whose owner is not "none"), "any" (any signature).
    expect: str


# Values for named placeholders; anything else becomes a small number.
_NAMED = {
    "pid": "48213", "pids": "48213, 48214", "bdf": "0000:3b:00.0", "comm": "python3", "proc": "python3",
    "prog": "nvidia-smi", "host": "gpu-node07", "node": "gpu-node07", "ip": "10.1.2.3", "port": "29500",
    "time": "2026-11-29T14:01:01", "size": "2.00 GiB", "total": "79.11 GiB", "free": "1.19 GiB",
    "mem": "77.90 GiB", "dev": "sda", "addr": "0000000000000008", "ifname": "ib0", "driver": "nvidia",
    "file": "train.py", "script": "train.py", "python": "/usr/bin/python3", "role": "default",
    "obd": "scratch-OST0004-osc-ffff8f0c", "target": "scratch-OST0004", "nid": "10.1.2.3@o2ib",
    "unit": "slurmd.service", "cgroup": "/user.slice/user-1000.slice", "lib": "libc.so.6",
    "key": "/torch.distributed/rank_3", "gpu": "Tesla V100-SXM2-32GB", "GPU name": "NVIDIA A100-SXM4-80GB",
    "kernel": "indexSelectLargeIndex", "cond": "srcIndex < srcSelectDimSize", "what": "Connection refused",
    "err": "CUDA driver initialization failed", "msg": "CUDA driver initialization failed",
    "ExcType": "KeyError", "Fn": "Mul", "op": "fused_adam", "task": "/job:jax_worker/task:3",
    "pool": "token_to_kv_pool", "detail": "available_size=1024", "name": "VllmWorker-3", "c": "trainer",
    "v": "470.57", "v2": "12.1", "a": "8.9.2", "b": "9.1.0", "status": "CUDNN_STATUS_INTERNAL_ERROR",
    "ptr": "0x55d0c1e3a2b0", "CMD": "ACCESS_REG", "desc": "memory read error", "DIMM label": "CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",
    "location": "DIMM_B1", "sig": "SIGTERM", "SIGNAME": "SIGTERM", "cmd": "/usr/bin/python3", "reason": "Fatal exception",
    "cublas call": "cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)",
}

_PRINTF = re.compile(r"%[-+ 0#]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?([diouxXeEfgGcsp%])")
_ANGLE = re.compile(r"<([^<>]*)>")


def _angle(m: re.Match[str]) -> str:
    inner = m.group(1)
    if "|" in inner:
        return inner.split("|")[0]
    if inner in _NAMED:
        return _NAMED[inner]
    if inner.startswith("0x"):
        return "0x1f"
    if inner in ("...", "…"):
        return "/opt/pytorch"
    return "3"


def _printf(m: re.Match[str]) -> str:
    conv = m.group(1)
    return {"s": "x", "p": "0x7f3a2c000000", "x": "3b", "X": "3B", "c": "x", "%": "%",
            "e": "1.5", "f": "1.5", "g": "1.5", "E": "1.5", "G": "1.5"}.get(conv, "3")


def concretize(text: str) -> str:
    """Fill ``<placeholders>``, printf conversions and ``{}`` fields with plausible values."""
    text = _ANGLE.sub(_angle, text)
    text = _ANGLE.sub(_angle, text)  # nested placeholders such as <0x..> inside <...>
    text = _PRINTF.sub(_printf, text)
    return re.sub(r"\{[^{}]*\}", "3", text)


_NOTE = re.compile(r"\s*\((?:see|e\.g\.|older|UserWarning|text verified|reason |alias)[^()]*(?:\([^()]*\)[^()]*)*\)")


def alternatives(text: str) -> list[str]:
    """A reference text without its notes, split at `` / `` into the wordings it lists."""
    text = _NOTE.sub("", text).strip()
    return [a.strip() for a in text.split(" / ") if a.strip()]


def read_tsv(name: str) -> list[dict[str, str]]:
    with (REFERENCE / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


# ---------------------------------------------------------------------------------------------
# Rows in scope, per file

KERNEL = "[ 8123.456789] "
NCCL_WARN = "gpu-node07:48213:48390 [3] NCCL WARN "


def xid_cases() -> Iterator[Case]:
    for row in read_tsv("xid.tsv"):
        code = row["code"]
        texts = [t.strip() for t in row["driver_log_format"].split("||") if t.strip()]
        texts = texts or [row["driver_string_r520"] or row["name"]]
        lines = tuple(f"{KERNEL}NVRM: Xid (PCI:0000:3b:00): {code}, pid=48213, name=python3, {concretize(t)}"
                      for t in texts)
        yield Case("xid.tsv", code, lines, f"xid:{code}")


def sxid_cases() -> Iterator[Case]:
    for row in read_tsv("sxid.tsv"):
        if not row["fm_guide_class"]:
            continue
        code = row["code"]
        severity = "Non-fatal" if row["driver_report_severity"].startswith("Non") else "Fatal"
        texts = [t.strip() for t in row["driver_log_description"].split("||") if t.strip()]
        texts = texts or [row["fm_guide_name"] or row["driver_enum_name"]]
        lines = []
        for t in texts:
            t = re.sub(r"^(?:Fatal|Non-fatal), ", "", t)
            lines.append(f"{KERNEL}nvidia-nvswitch0: SXid (PCI:0000:05:00.0): {code}, {severity}, Link 04 "
                         f"{concretize(t)}")
        yield Case("sxid.tsv", code, tuple(lines), f"sxid:{code}")


def dcgm_cases() -> Iterator[Case]:
    """dcgmi diag prints "| Error | GPU 0 <msg>"; dcgmi health "<system> system: ... <msg>"."""
    for row in read_tsv("dcgm_fr.tsv"):
        if row["kind"] != "failure_reason":
            continue
        msg = concretize(row["message_format"]).strip()
        yield Case("dcgm_fr.tsv", row["name"], _dcgm(msg) if msg else (), "owned")


def _dcgm(msg: str) -> tuple[str, ...]:
    return (f"| Error                     | GPU 0 {msg} |",
            f"|                           | Memory system: Failure - {msg} |")


def cuda_cases() -> Iterator[Case]:
    for row in read_tsv("cuda_errors.tsv"):
        name, num, msg = row["name"], row["number"], row["message_string"].strip()
        if row["api"] == "runtime":
            lines = [
                # CUDA samples' checkCudaErrors (helper_cuda.h)
                f'CUDA error at /src/train_kernels.cu:118 code={num}({name}) "cudaDeviceSynchronize()"',
                # JAX's GPU kernels (jaxlib/gpu/gpu_kernel_helpers.cc)
                f"jaxlib.xla_extension.XlaRuntimeError: INTERNAL: jaxlib/gpu/prng_kernels.cc:33: "
                f"operation gpuGetLastError() failed: {name}: {msg}",
            ]
            if msg:
                lines.append(f"RuntimeError: CUDA error: {msg}")  # PyTorch C10_CUDA_CHECK
        else:
            lines = [
                f'CUDA error at /src/driver_api.cpp:77 code={num}({name}) "cuCtxSynchronize()"',
                # XLA stream executor and TensorFlow print "<NAME>: <cuGetErrorString>"
                f"jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to complete all kernels launched on "
                f"stream 0x55d0c1e3a2b0: {name}: {msg}",
                f"E1129 14:01:01.123456 48213 cuda_driver.cc:282] failed call to cuInit: {name}: {msg}",
            ]
            if msg:
                lines.append(f"RuntimeError: CUDA driver error: {msg}")  # PyTorch C10_CUDA_DRIVER_CHECK
        yield Case("cuda_errors.tsv", name, tuple(lines), "cuda")


def nccl_cases() -> Iterator[Case]:
    for row in read_tsv("nccl.tsv"):
        kind, text, hint = row["kind"], row["message_text"], row["diagnostic_hint"]
        key = f"{kind}: {text}"
        lines: tuple[str, ...]
        if kind == "ncclResult_t":
            lines = (f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                     f"ProcessGroupNCCL.cpp:1970, {text}, NCCL version 2.21.5",)
            yield Case("nccl.tsv", key, lines, "owned" if hint else "any")
        elif (kind == "WARN" and hint) or kind == "WARN(expanded)":
            # An expanded row lists the wordings of one call, joined by " | ".
            lines = tuple(NCCL_WARN + concretize(t.strip()) for t in text.split(" | "))
            yield Case("nccl.tsv", key, lines, "owned" if hint else "any")
        elif kind == "ibv_wc_status":
            num, enum = row["value"], row["name_or_component"]
            lines = (f"{NCCL_WARN}NET/IB : Got completion from peer 10.1.2.3<43521> with error {num}, "
                     f"opcode 0, len 0, vendor err 129 (Recv)",
                     f"{NCCL_WARN}NET/IB: Got completion from peer 10.1.2.3<43521> with status={enum}({num}) "
                     f"opcode=IBV_WC_RECV(128) vendor_err=129  hca mlx5_0")
            yield Case("nccl.tsv", key, lines, "owned")
        elif kind == "pytorch_c10d":
            first = text.split("\\n")[0]
            lines = tuple("[rank3]:[E1129 14:01:01.123456 48213 ProcessGroupNCCL.cpp:616] " + concretize(a)
                          for a in alternatives(first))
            yield Case("nccl.tsv", key, lines, "owned" if hint else "any")


def _exception_prefix(exc: str) -> str:
    m = re.match(r"([\w.]*(?:Error|Exception|Failed))\b", exc)
    return f"{m.group(1)}: " if m else ""


def pytorch_cases() -> Iterator[Case]:
    for row in read_tsv("pytorch.tsv"):
        text = row["message_pattern"]
        key = f"{row['framework']}: {text[:80]}"
        prefix = _exception_prefix(row["exception_or_log_level"])
        lines = tuple(prefix + concretize(a) if not a.startswith(prefix) else concretize(a)
                      for a in alternatives(text))
        yield Case("pytorch.tsv", key, lines, "owned" if row["failure_category"] else "any")


def infra_cases() -> Iterator[Case]:
    for row in read_tsv("infra.tsv"):
        text = row["message_pattern"]
        key = f"{row['domain']}/{row['subsystem']}: {text[:80]}"
        prefix = KERNEL if row["domain"] in ("kernel", "storage") or row["subsystem"] in (
            "nvrm", "mlx5", "netdev", "nvidia-peermem") else ""
        lines = tuple(prefix + concretize(a) for a in alternatives(text))
        yield Case("infra.tsv", key, lines, "owned" if row["failure_category"] else "any")


CASES: dict[str, Callable[[], Iterator[Case]]] = {
    "xid.tsv": xid_cases,
    "sxid.tsv": sxid_cases,
    "dcgm_fr.tsv": dcgm_cases,
    "cuda_errors.tsv": cuda_cases,
    "nccl.tsv": nccl_cases,
    "pytorch.tsv": pytorch_cases,
    "infra.tsv": infra_cases,
}

# Rows whose generic sample line would not be what a job prints (a paraphrase, a placeholder
# that needs a specific value, a multi-line tool output); these are the real shapes.
_VERB_FAIL = NCCL_WARN + "Call to ibv_create_qp failed with error Cannot allocate memory"
OVERRIDES: dict[tuple[str, str], tuple[str, ...]] = {
    # a real operation name: Close/Stop/Abort at teardown are harmless, the others are failures
    ("nccl.tsv", "WARN: [Proxy Service %d] Failed to execute operation %s from rank %d, retcode %d"):
        (NCCL_WARN + "[Proxy Service 3] Failed to execute operation Connect from rank 3, retcode 3",),
    ("nccl.tsv", "WARN: Call to <name> failed : %s"): (_VERB_FAIL,),
    ("nccl.tsv", "WARN: Call to <name> failed with error %s"): (_VERB_FAIL,),
    ("nccl.tsv", "WARN: Call to <name> failed"): (NCCL_WARN + "Call to ibv_create_qp failed",),
    ("nccl.tsv", "WARN: Call to <name> failed with error %s errno %d"): (_VERB_FAIL + " errno 12",),
    ("nccl.tsv", "WARN: Call to <name> failed: %s"): (_VERB_FAIL,),
    ("nccl.tsv", "WARN: NET/IB : Got async event : %s"): (NCCL_WARN + "NET/IB : Got async event : port error",),
    ("nccl.tsv", "WARN: NET/IB : %s:%d Got async event : %s"):
        (NCCL_WARN + "NET/IB : mlx5_0:1 Got async event : port error",),
    ("nccl.tsv", "WARN: NET/IB : %s:%d async fatal event: %s"):
        (NCCL_WARN + "NET/IB : mlx5_0:1 async fatal event: local catastrophic error",),
    ("nccl.tsv", "WARN: NET/IB : %s:%d Got async error event: %s"):
        (NCCL_WARN + "NET/IB : mlx5_0:1 Got async error event: port error",),
    ("nccl.tsv", "pytorch_c10d: <PG prefix> <exception|timeout> failure detected by watchdog at work sequence id: "
                 "<seq> ... Last enqueued NCCL work: <seq>, last completed NCCL work: <seq>."):
        ("[rank3]:[E1129 14:01:01.123456 48213 ProcessGroupNCCL.cpp:1651] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
         "Exception (either an error or timeout) detected by watchdog at work: 48211, last enqueued NCCL work: "
         "48211, last completed NCCL work: 48210.",),
    ("nccl.tsv", "WARN(expanded): Call to ibv_reg_mr failed with error %s [errno %d] | Call to ibv_reg_mr failed"):
        (NCCL_WARN + "Call to ibv_reg_mr failed with error Bad address [errno 14]", NCCL_WARN + "Call to ibv_reg_mr failed"),
    ("nccl.tsv", "WARN(expanded): Call to ibv_reg_mr_iova2 failed with error %s [errno %d] | "
                 "Call to ibv_reg_mr_iova2 failed"):
        (NCCL_WARN + "Call to ibv_reg_mr_iova2 failed with error Bad address [errno 14]",),
    ("nccl.tsv", "WARN(expanded): Call to ibv_reg_dmabuf_mr failed with error %s [errno %d] | "
                 "Call to ibv_reg_dmabuf_mr failed"):
        (NCCL_WARN + "Call to ibv_reg_dmabuf_mr failed with error Operation not supported [errno 95]",),
    # DCGM fills "Detected %ld %s for GPU %u" with the field's tag.
    ("dcgm_fr.tsv", "DCGM_FR_SBE_VIOLATION"): _dcgm("Detected 12 ecc_sbe_volatile_total for GPU 0"),
    ("dcgm_fr.tsv", "DCGM_FR_DBE_VIOLATION"): _dcgm("Detected 2 ecc_dbe_volatile_total for GPU 0"),
    ("dcgm_fr.tsv", "DCGM_FR_PCIE_REPLAY_VIOLATION"): _dcgm("Detected 120 pcie_replay_counter for GPU 0"),
    ("dcgm_fr.tsv", "DCGM_FR_SBE_THRESHOLD_VIOLATION"):
        _dcgm("Detected 120 ecc_sbe_volatile_total for GPU 0 which is above the threshold 100"),
    ("dcgm_fr.tsv", "DCGM_FR_DBE_THRESHOLD_VIOLATION"):
        _dcgm("Detected 2 ecc_dbe_volatile_total for GPU 0 which is above the threshold 0"),
    ("dcgm_fr.tsv", "DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION"):
        _dcgm("Detected 120 pcie_replay_counter for GPU 0 which is above the threshold 8"),
    ("dcgm_fr.tsv", "DCGM_FR_GFLOPS_THRESHOLD_VIOLATION"):
        _dcgm("Detected 18250.12 GFLOPS for GPU 0 which is below the threshold 25000.00"),
    ("dcgm_fr.tsv", "DCGM_FR_IMEX_UNHEALTHY"): _dcgm("IMEX daemon status is DOWN (connection refused)"),
    ("pytorch.tsv", "pytorch: The node '<node>' can't complete rendezvous: deadline reached / not enough parti"):
        ("The node 'gpu-node07_48213_0' can't complete rendezvous: deadline reached",
         "The node 'gpu-node07_48213_0' can't complete rendezvous: not enough participants"),
    ("pytorch.tsv", "pytorch: CUDA initialization: <msg> (UserWarning) / CUDA unknown error - this may be due "):
        ("/usr/lib/python3/dist-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: CUDA unknown "
         "error - this may be due to an incorrectly set up environment, e.g. changing env variable "
         "CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
         "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
         "functions before calling NumCudaDevices() that might have already set an error? Error 804: forward "
         "compatibility was attempted on non supported HW"),
    ("pytorch.tsv", "pytorch: cuDNN error: <cudnnGetErrorString> (e.g. CUDNN_STATUS_INTERNAL_ERROR, CUDNN_STAT"):
        ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
         "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"),
    ("pytorch.tsv", "deepspeed: Killing subprocess <pid>"):
        ("[2026-11-29 14:01:02,481] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 48213",),
    ("infra.tsv", "kernel/oops: BUG: unable to handle page fault for address: <addr> / general protection fault,"):
        (KERNEL + "BUG: unable to handle page fault for address: ffffb9a0c3a5f000",
         KERNEL + "general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP NOPTI"),
    ("infra.tsv", "kernel/trap: traps: <comm>[<pid>] trap invalid opcode / general protection ip:<ip> sp:<sp> er"):
        (KERNEL + "traps: python3[48213] trap invalid opcode ip:7f3a2c0e1a2b sp:7ffd3c1e9a10 error:0 in "
                  "libtorch_cpu.so[7f3a2a000000+1c000000]",
         KERNEL + "traps: python3[48213] general protection fault ip:7f3a2c0e1a2b sp:7ffd3c1e9a10 error:0 in "
                  "libc.so.6[7f3a2c000000+195000]"),
    ("infra.tsv", "kernel/pcie_aer: <driver> <bdf>: device [<vendor>:<device>] error status/mask=<hex>/<hex>"):
        (KERNEL + "nvidia 0000:3b:00.0:   device [10de:2330] error status/mask=00001000/0000e000",),
    ("infra.tsv", "kernel/mce: mce: [Hardware Error]: CPU <n>: Machine Check[ Exception]: <status> Bank <b>: <h"):
        (KERNEL + "mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank 9: b200000000070005",),
    ("infra.tsv", "nvidia_driver/nvswitch: nvidia-nvswitch<n>: SXid (PCI:<bdf>): <code>, <Fatal|Non-fatal|Correctable>, Lin"):
        (KERNEL + "nvidia-nvswitch3: SXid (PCI:0000:86:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error",),
    ("infra.tsv", "nvidia_driver/nvrm: Timeout after <n>s of waiting for RPC response from GPU<n> GSP! Expected functio"):
        (KERNEL + "NVRM: _kgspRpcRecvPoll: Timeout after 45s of waiting for RPC response from GPU1 GSP! Expected "
                  "function 76 (GSP_RM_CONTROL) sequence 20372 (0x20803032 0x4).",),
    ("infra.tsv", "network/mlx5: mlx5_core <bdf> <ifname>: Link down / Link up"):
        (KERNEL + "mlx5_core 0000:3b:00.0 ens1np0: Link down",),
    ("infra.tsv", "network/mlx5: mlx5_core <bdf>: mlx5e_tx_timeout_work / TX timeout on queue: <n>, SQ: <n>, CQ: "):
        (KERNEL + "mlx5_core 0000:3b:00.0 ens1np0: TX timeout on queue: 3, SQ: 0x1234, CQ: 0x5678, SQ Cons: 0x0 "
                  "SQ Prod: 0x12, usecs since last trans: 16384000",),
    ("infra.tsv", "network/ib_port: ibstat port State: <Down|Initializing|Armed|Active>; Physical state: <Sleep|Poll"):
        ("\t\tState: Down", "\t\tPhysical state: Polling"),
    ("infra.tsv", "network/ib_port: ibv_devinfo port state: PORT_DOWN / PORT_INIT / PORT_ARMED / PORT_ACTIVE ; phys_"):
        ("\t\t\tstate:\t\t\tPORT_DOWN (1)", "\t\t\tphys_state:\t\tPOLLING (2)"),
    ("infra.tsv", "network/ib_async: IB async events (NCCL prints them): port error / local catastrophic error / port"):
        (NCCL_WARN + "NET/IB : mlx5_0:1 Got async event : port error",
         NCCL_WARN + "NET/IB : mlx5_0:1 Got async event : local catastrophic error"),
    ("infra.tsv", "storage/nfs: Stale file handle (ESTALE) / NFS: <fn>: <err> ... stale"):
        ("OSError: [Errno 116] Stale file handle: '/mnt/nfs/ckpt/step_1000.pt'",),
}


# ---------------------------------------------------------------------------------------------
# Checking


@pytest.fixture(scope="module")
def engine(catalog: Catalog) -> ReEngine:
    return ReEngine(catalog.signatures)


def matches(engine: ReEngine, line: str) -> list[Signature]:
    return [engine.signatures[idx] for idx in match_line(engine, line)]


def problem(engine: ReEngine, case: Case) -> str | None:
    """Why the case is not covered, or None when every one of its lines is."""
    lines = OVERRIDES.get((case.file, case.key), case.lines)
    if not lines:
        return "no text to match"
    for line in lines:
        sigs = matches(engine, line)
        ids = sorted(s.id for s in sigs)
        if case.expect.startswith(("xid:", "sxid:")):
            family, code = case.expect.split(":")
            fam_ids = [i for i in ids if i.split(".")[0] == family]
            if fam_ids != [f"{family}.{code}"]:
                return f"{line!r} -> {fam_ids}"
        elif case.expect == "cuda":
            if not any(s.family == "cuda" for s in sigs):
                return f"{line!r} -> {ids}"
        elif case.expect == "owned":
            if not any(s.owner != "none" for s in sigs):
                return f"{line!r} -> {ids}"
        elif not sigs:
            return f"{line!r} -> []"
    return None


def load_exceptions() -> dict[str, dict[str, str]]:
    with EXCEPTIONS.open("rb") as fh:
        data = tomllib.load(fh)
    return {str(k): {str(kk): str(vv) for kk, vv in v.items()} for k, v in data.items()}


def test_exceptions_name_known_files_and_give_reasons() -> None:
    for name, rows in load_exceptions().items():
        assert name in CASES, f"{name}: not a reference file this test covers"
        for key, reason in rows.items():
            assert len(reason.split()) >= 3, f"{name} {key!r}: give a written reason"


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_rows_are_covered_or_excepted(engine: ReEngine, name: str) -> None:
    cases = list(CASES[name]())
    keys = [c.key for c in cases]
    assert cases, f"{name}: no rows in scope"
    excepted = load_exceptions().get(name, {})
    unknown = sorted(set(excepted) - set(keys))
    missing: list[str] = []
    stale: list[str] = []
    seen: set[str] = set()
    for case in cases:
        if case.key in seen:  # the same text listed twice (e.g. two NCCL versions)
            continue
        seen.add(case.key)
        why = problem(engine, case)
        if why and case.key not in excepted:
            missing.append(f"{case.key!r}: {why}")
        elif not why and case.key in excepted:
            stale.append(case.key)
    report = []
    if missing:
        report.append(f"{len(missing)} rows neither covered nor excepted:\n  " + "\n  ".join(missing))
    if stale:
        report.append(f"{len(stale)} exceptions for rows that are covered now (remove them):\n  "
                      + "\n  ".join(repr(s) for s in stale))
    if unknown:
        report.append(f"{len(unknown)} exceptions for rows not in {name}:\n  " + "\n  ".join(map(repr, unknown)))
    assert not report, f"{name}:\n" + "\n".join(report)


def _nvlink5_severity(sheet: str) -> str:
    return "Nonfatal" if sheet.lower().startswith("non") else "Fatal"


def test_nvlink5_xids_decoded_by_unit_and_severity(engine: ReEngine, catalog: Catalog) -> None:
    """Xid 144-150: each decode-sheet row's unit and severity reach the right signature."""
    bad = []
    for row in read_tsv("xid_nvlink5_decode.tsv"):
        code, unit, sev = row["xid"], row["unit"], _nvlink5_severity(row["severity"])
        line = (f"{KERNEL}NVRM: Xid (PCI:0000:18:01:00): {code}, {unit} {sev} XC0 i0 Link 09 "
                f"(0x025525c6 {row['error_status']} 0x00000000 0x00000000 0x00000000 0x00000000)")
        want = f"xid.{code}" if sev == "Fatal" else f"xid.{code}_nonfatal"
        sigs = [s for s in matches(engine, line) if s.family == "xid"]
        if [s.id for s in sigs] != [want]:
            bad.append(f"{line!r} -> {[s.id for s in sigs]}, want {want}")
            continue
        fields = sigs[0].extract_fields(line)
        if fields.get("unit") != unit or fields.get("error_status") != row["error_status"]:
            bad.append(f"{line!r}: extracted {fields}")
        if row["immediate_action"] == "RESET_GPU" and sigs[0].severity != "fatal":
            bad.append(f"{line!r}: NVIDIA says RESET_GPU but {want} is {sigs[0].severity}")
    assert not bad, "\n".join(bad)


def test_xid_meaning_owner_and_first_action(catalog: Catalog) -> None:
    """Each Xid has its own title, and NVIDIA's first response decides how hard the verdict is."""
    bad = []
    for row in read_tsv("xid.tsv"):
        sig = catalog.by_id.get(f"xid.{row['code']}")
        if sig is None:
            bad.append(f"xid.{row['code']}: missing")
            continue
        first = row["nvidia_immediate_action"]
        if not sig.title.startswith(f"Xid {row['code']}: "):
            bad.append(f"{sig.id}: title {sig.title!r}")
        if not sig.steps or not sig.explanation.strip():
            bad.append(f"{sig.id}: no steps or explanation")
        hw_cause = "HW error" in row["cause_categories_nvidia"]
        if first == "RESTART_APP" and (sig.rma == "candidate"
                                       or (sig.owner == "gpu_hardware" and not hw_cause)):
            bad.append(f"{sig.id}: RESTART_APP is not a hardware verdict (owner {sig.owner}, rma {sig.rma})")
        if first == "RESTART_APP" and sig.rma != "none" and not hw_cause:
            bad.append(f"{sig.id}: RESTART_APP without a hardware cause, but rma {sig.rma}")
        if first == "IGNORE" and sig.rma == "candidate":
            bad.append(f"{sig.id}: IGNORE first, but rma candidate")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Generated tables


@pytest.mark.parametrize("script", sorted(GENERATORS))
def test_generated_tables_are_current(script: str) -> None:
    r = subprocess.run([sys.executable, str(REPO / script), "--check"], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, f"{script} --check: regenerate, never hand-edit\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("script", sorted(GENERATORS))
def test_generated_files_say_so(script: str) -> None:
    for rel in GENERATORS[script]:
        head = (REPO / rel).read_text(encoding="utf-8").splitlines()[0]
        assert f"generated by {script}" in head and "from shared/reference/" in head, f"{rel}: {head!r}"
        text = " ".join((REPO / rel).read_text(encoding="utf-8").splitlines()[:2])
        assert "do not edit" in text, f"{rel}: header must say 'do not edit'"
