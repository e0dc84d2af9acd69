"""Generate the CUDA error signatures from the shared reference list.

Input: ``cuda_errors.tsv`` (every ``cudaError_t`` and ``CUresult`` value with its
``cudaGetErrorString`` / ``cuGetErrorString`` text) and ``tools/cuda_notes.toml`` (our own
explanation, owner, priority and steps, per group of codes and per important code).
Output: ``src/denpex/catalog/rules/cuda/cuda.toml`` and ``cuda.examples.log``, both marked
generated.

One signature per distinct error: the runtime and driver values with the same number (and
values that share one message, such as 200/300) are merged. Patterns are the enum names and
the message text; messages too generic to stand alone ("invalid argument", "unknown error")
only match behind a CUDA error prefix. Every code must be covered by a note group, so that
no signature ships without an explanation written by us.

    python tools/gen_cuda_catalog.py [--reference DIR] [--notes FILE] [--out DIR] [--check]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generated import write_or_check  # tools/generated.py

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference"
DEFAULT_NOTES = Path(__file__).resolve().parent / "cuda_notes.toml"
DEFAULT_OUT = ROOT / "src" / "denpex" / "catalog" / "rules" / "cuda"

RUNTIME_DOC = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
DRIVER_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"

# The ways a cudaGetErrorString text is printed with a prefix: PyTorch and most C++ code
# ("CUDA error: <msg>"; its driver-API checks print "CUDA driver error: <msg>"; TurboMind
# "CUDA runtime error: <msg>"), Paddle/glog
# ("Cuda Error: <msg>"), Triton ("Triton Error [CUDA]: <msg>"), old PyTorch THC
# ("cuda runtime error (2) : out of memory at ...") and NCCL ("NCCL WARN Cuda failure
# 'named symbol not found'", "Cuda failure 700 '...'") and tiny-cuda-nn-style checks
# ("cudaMalloc(&ptr, n) failed with error out of memory") and CTranslate2 ("CUDA failed with error
# out of memory", faster-whisper's runtime) and HPC codes (AmgX "Cuda failure: 'out of memory'",
# SPECFEM3D "CUDA error !!!!! <out of memory> !!!!!") and TVM/MLC's CUDA_CALL check ("Check failed:
# (e == cudaSuccess || e == cudaErrorCudartUnloading) is false: CUDA: out of memory").
PREFIX = (r"(?:(?:CUDA|Cuda|cuda) (?:driver |runtime )?(?:[Ee]rror|ERROR): |Triton Error \[CUDA\]: "
          r"|cuda runtime error \(\d+\) : |THCudaCheck FAIL file=\S+ line=\d+ error=\d+ : "
          r"|Cuda failure:? (?:\d+ )?'"
          r"|\bcu\w*\((?:[^()]|\([^()]*\))*\) failed with error |CUDA failed with error "
          r"|CUDA error !+ <|is false: CUDA: )")
# After a message that is the start of another message ("unspecified launch failure" vs
# "... in prior launch"): the line ends, or punctuation, or a space and a non-letter.
GUARD = r"(?:$|[^ a-z]| [^a-z])"
# Rank prefixes seen in front of these lines: "[rank3]: ", "[PG ID 2 PG GUID 3 Rank 5] ".
RANK_EXTRACT = r"\[(?:rank|[^\]]*Rank )(?P<rank>\d+)\]"
# TensorRT-LLM's executor: "Failed to initialize executor on rank 6: [TensorRT-LLM][ERROR] CUDA driver error ..."
RANK_ON_EXTRACT = r"\bon rank (?P<rank>\d+): "

FIELD_ORDER = ("id", "title", "patterns", "extract", "owner", "category", "severity", "role",
               "priority", "rma", "explanation", "steps", "clear_when", "missing", "references",
               "status")


@dataclass
class Row:
    api: str
    name: str
    number: int
    message: str


@dataclass
class Group:
    """Rows that make one signature."""

    rows: list[Row] = field(default_factory=list)

    @property
    def numbers(self) -> list[int]:
        return sorted({r.number for r in self.rows})

    @property
    def messages(self) -> list[str]:
        seen: list[str] = []
        for r in self.rows:
            if r.message and r.message not in seen:
                seen.append(r.message)
        return seen

    def names(self, api: str) -> list[str]:
        return [r.name for r in self.rows if r.api == api]


def read_rows(path: Path) -> list[Row]:
    rows: list[Row] = []
    with path.open(encoding="utf-8", newline="") as fh:
        for rec in csv.DictReader(fh, delimiter="\t"):
            rows.append(Row(api=rec["api"], name=rec["name"], number=int(rec["number"]),
                            message=rec["message_string"].strip()))
    return rows


def group_rows(rows: list[Row], skip: set[int]) -> list[Group]:
    """Merge rows with the same number, then groups that share a message."""
    by_num: dict[int, Group] = {}
    for r in rows:
        if r.number in skip:
            continue
        by_num.setdefault(r.number, Group()).rows.append(r)
    groups = list(by_num.values())
    merged: list[Group] = []
    for g in sorted(groups, key=lambda g: g.numbers[0]):
        target = next((m for m in merged if set(m.messages) & set(g.messages)), None)
        if target is None:
            merged.append(g)
        else:
            target.rows.extend(g.rows)
    return merged


def snake(name: str) -> str:
    if name.startswith("cudaError"):
        body = name[len("cudaError"):]
        parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", body)
        return "_".join(p.lower() for p in parts)
    return name.removeprefix("CUDA_ERROR_").lower()


def toml_str(s: str) -> str:
    """A TOML literal string where possible (regexes stay readable), else a basic string."""
    if "'" not in s and "\n" not in s:
        return "'" + s + "'"
    return json.dumps(s, ensure_ascii=False)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        if "\n" in v:
            if '"""' in v or "\\" in v:
                return json.dumps(v, ensure_ascii=False)
            return '"""\n' + v.strip("\n") + '"""'
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        if v and isinstance(v[0], dict):
            return "[\n" + "".join("  " + toml_value(x) + ",\n" for x in v) + "]"
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


class Notes:
    def __init__(self, data: dict[str, Any]) -> None:
        self.defaults: dict[str, Any] = dict(data.get("defaults", {}))
        self.skip: set[int] = set(self.defaults.pop("skip", []))
        self.generic: set[int] = set(self.defaults.pop("generic", []))
        self.groups: list[dict[str, Any]] = list(data.get("group", []))
        self.codes: dict[int, dict[str, Any]] = {int(k): v for k, v in data.get("code", {}).items()}

    def for_group(self, numbers: list[int]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The group note (shared fields) and the code note (overrides) for these numbers."""
        group = next((g for g in self.groups if set(numbers) & set(g["codes"])), None)
        code = next((self.codes[n] for n in numbers if n in self.codes), None)
        if group is None and code is None:
            raise SystemExit(f"cuda_notes.toml: no group or code note covers {numbers}")
        return (group or {}), code


def build(groups: list[Group], notes: Notes) -> tuple[list[dict[str, Any]], list[str]]:
    all_messages = [m for g in groups for m in g.messages]
    sigs: list[dict[str, Any]] = []
    examples: list[str] = []
    for g in groups:
        group_note, code_note = notes.for_group(g.numbers)
        note: dict[str, Any] = {**notes.defaults, **group_note, **(code_note or {})}
        rt, drv = g.names("runtime"), g.names("driver")
        primary = (rt or drv)[0]
        sid = "cuda." + str(note.get("id") or snake(primary))
        nums = "/".join(str(n) for n in g.numbers)
        generic = bool(set(g.numbers) & notes.generic)
        patterns = [r"\b" + n + r"\b" for n in rt + drv]
        for msg in g.messages:
            body = re.escape(msg).replace("\\ ", " ")
            if any(o != msg and o.startswith(msg) for o in all_messages):
                body += GUARD
            patterns.append(PREFIX + body if generic else r"\b" + body)
        codes = [n for n in g.numbers if n > 0]
        if codes:
            # A bare number after "CUDA error" (hand-written check macros: "CUDA error = 999 at
            # main.cu:196", "CUDA Error code: 700") names the code as surely as its text does.
            patterns.append(r"(?i:\bcuda[ _]?error(?: code)?)\s*[=:]?\s*(?:" + "|".join(map(str, codes))
                            + r")(?:\D|$)")
            if drv:
                # A driver-API call's return code as runtimes print it (OpenACC/NVHPC:
                # "call to cuCtxCreate returned error 214: ...").
                patterns.append(r"\bcu[A-Z]\w* returned error (?:" + "|".join(map(str, codes)) + r")\b")
                # The same code from other callers' checks: CP2K's offload layer ("cuInit failed
                # with error:  34"; the colon keeps PhysX's "cuEventRecord failed with error 700",
                # which its own signature reads) and TensorFlow 1.x's CHECK macro ("CUDA_SUCCESS ==
                # dynload::cuCtxSetCurrent(context) (0 vs. 216)").
                patterns.append(r"\bcu[A-Z]\w*(?:\([\w&*, ]{0,60}\))? (?:failed with error: {1,3}|\(0 vs\. )(?:"
                                + "|".join(map(str, codes)) + r")\b")
        patterns.extend(note.get("extra_patterns", []))
        title = note.get("title") or f"CUDA error {nums}: {g.messages[0] if g.messages else primary}"
        intro = (f"CUDA returned {' / '.join(rt + drv)} (code {nums}"
                 + (f", printed as '{g.messages[0]}'" if g.messages else "") + ").")
        explanation = intro + "\n" + str(note["explanation"]).strip()
        refs = list(note.get("references", []))
        for url, names in ((RUNTIME_DOC, rt), (DRIVER_DOC, drv)):
            if names and url not in refs:
                refs.append(url)
        sig: dict[str, Any] = {
            "id": sid, "title": title, "patterns": patterns, "extract": [RANK_EXTRACT, RANK_ON_EXTRACT],
            "owner": note["owner"], "category": note["category"], "severity": note["severity"],
            "role": note["role"], "priority": note["priority"], "rma": note.get("rma", "none"),
            "explanation": explanation, "steps": note["steps"],
            "clear_when": note.get("clear_when", []), "missing": note.get("missing", []),
            "references": refs, "status": note.get("status", "stable"),
        }
        sigs.append(sig)
        examples.extend(example_block(sid, g, generic, note, all_messages))
    return sigs, examples


def example_block(sid: str, g: Group, generic: bool, note: dict[str, Any],
                  all_messages: list[str]) -> list[str]:
    out: list[str] = []
    rt, drv = g.names("runtime"), g.names("driver")
    num = g.numbers[0]
    rank = num % 8
    msgs = g.messages
    if msgs:
        out += [f"# expect: {sid} rank={rank}", f"[rank{rank}]: RuntimeError: CUDA error: {msgs[0]}"]
    if rt:
        out += [f"# expect: {sid}",
                f'CUDA error at /src/bench/kernel.cu:{100 + num % 400} code={num}({rt[0]}) '
                '"cudaDeviceSynchronize()"']
    if drv:
        text = f"{drv[0]}: {msgs[0]}" if msgs else drv[0]
        if 700 <= num < 800:
            line = (f"jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to complete all kernels "
                    f"launched on stream 0x55d3a8c0: {text}")
        else:
            line = f"E1106 03:18:44.585000 8213 cuda_driver.cc:282] failed call to cuInit: {text}"
        out += [f"# expect: {sid}", line]
        if generic and msgs:  # PyTorch's C10_CUDA_DRIVER_CHECK
            out += [f"# expect: {sid}", f"RuntimeError: CUDA driver error: {msgs[0]}"]
    if num > 0:
        out += [f"# expect: {sid}", f"CUDA error = {num}at main.cu:196'cudaDeviceSynchronize()/n"]
    if num > 0 and drv:
        out += [f"# expect: {sid}", f"Accelerator Fatal Error: call to cuCtxCreate returned error {num}"]
        out += [f"# expect: {sid}",
                f"ERROR: cuInit failed with error:  {num} /opt/cp2k/src/offload/offload_library.c 57"]
        out += [f"# expect: {sid}", f"F tensorflow/stream_executor/cuda/cuda_driver.cc:334] Check failed: "
                f"CUDA_SUCCESS == dynload::cuCtxSetCurrent(context) (0 vs. {num})"]
    for ex in note.get("examples", []):
        out += [f"# expect: {sid}{_fields(ex)}", ex["line"]]
    near: list[str] = [
        "[rank0]: CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect."]
    for msg in msgs:
        if generic:
            near.append(f"RuntimeError: {msg}")
        for other in all_messages:
            if other != msg and other.startswith(msg):
                near.append(f"RuntimeError: CUDA error: {other}")
    if num > 0:
        near.append(f"CUDA error = {num}0 at main.cu:12")  # another code, not this one
        near.append(f"call to cuMemAlloc returned error {num}0")
        if drv:
            near.append(f"PhysX error: SynchronizeStreams cuEventRecord failed with error {num}")
    near.extend(note.get("near_miss", []))
    for line in near:
        out += [f"# expect-none: {sid}", line]
    out.append("")
    return out


def _fields(ex: dict[str, Any]) -> str:
    return "".join(f" {k}={v}" for k, v in ex.items() if k != "line")


def render_toml(sigs: list[dict[str, Any]], source: str) -> str:
    lines = [
        f"# generated by tools/gen_cuda_catalog.py from {source} and tools/cuda_notes.toml;",
        "# do not edit: change the notes file and re-run the generator.",
        "# One signature per distinct CUDA runtime/driver error, as printed by PyTorch",
        "# ('CUDA error: <text>'), JAX/XLA ('CUDA_ERROR_<NAME>: <text>'), TensorFlow and the CUDA",
        "# samples ('code=700(cudaErrorIllegalAddress)').",
        "",
    ]
    for sig in sigs:
        lines.append("[[signature]]")
        for key in FIELD_ORDER:
            val = sig[key]
            if val in ([], "") or (key == "rma" and val == "none") or (key == "status" and val == "stable"):
                continue
            if key == "patterns" or key == "extract":
                lines.append(f"{key} = [" + ", ".join(toml_str(p) for p in val) + "]")
            else:
                lines.append(f"{key} = {toml_value(val)}")
        lines.append("")
    return "\n".join(lines)


def render_examples(examples: list[str], source: str) -> str:
    head = [f"## generated by tools/gen_cuda_catalog.py from {source} and tools/cuda_notes.toml;",
            "## do not edit: change the notes file and re-run the generator.", ""]
    return "\n".join(head + examples).rstrip("\n") + "\n"


def self_check(sigs: list[dict[str, Any]], examples: list[str]) -> list[str]:
    """Each generated expect line must match its own signature and no other CUDA signature."""
    compiled = {s["id"]: [re.compile(p) for p in s["patterns"]] for s in sigs}
    problems: list[str] = []
    pending: list[tuple[str, str]] = []
    for line in examples:
        m = re.match(r"^# (expect|expect-none): (\S+)", line)
        if m:
            pending.append((m.group(1), m.group(2)))
            continue
        if not line:
            continue
        for kind, sid in pending:
            hits = {i for i, pats in compiled.items() if any(p.search(line) for p in pats)}
            if kind == "expect" and sid not in hits:
                problems.append(f"{sid} does not match its example: {line}")
            if kind == "expect" and hits - {sid}:
                problems.append(f"{sorted(hits - {sid})} also match the example of {sid}: {line}")
            if kind == "expect-none" and sid in hits:
                problems.append(f"{sid} matches its near miss: {line}")
        pending = []
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE,
                    help="folder holding cuda_errors.tsv (default ../shared/reference)")
    ap.add_argument("--notes", type=Path, default=DEFAULT_NOTES)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="fail if the output files are not up to date")
    args = ap.parse_args(argv)
    with args.notes.open("rb") as fh:
        notes = Notes(tomllib.load(fh))
    rows = read_rows(args.reference / "cuda_errors.tsv")
    sigs, examples = build(group_rows(rows, notes.skip), notes)
    problems = self_check(sigs, examples)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    source = "shared/reference/cuda_errors.tsv"
    outputs = {args.out / "cuda.toml": render_toml(sigs, source),
               args.out / "cuda.examples.log": render_examples(examples, source)}
    if args.check:
        return write_or_check(outputs, check=True)
    write_or_check(outputs, check=False)
    print(f"wrote {len(sigs)} signatures to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
