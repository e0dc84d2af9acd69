"""Benchmark ``denpex run``: throughput under a terminal and with a pipe, and latency added per line.

Usage: python tools/bench_wrapper.py [--mb 200] [--repeat 3] [--child python|cat|both]

Throughput: a child writes MB megabytes of ~100-byte lines.
- terminal: everything inside an outer ``script`` (a real terminal for the wrapper); ``denpex run
  -- CHILD`` against a nested ``script -qfec CHILD /dev/null``. Target: within 1.05x.
- pipe: ``denpex run -- CHILD | cat`` against ``CHILD | cat``. Target: within 1.1x.
Latency: a child prints a line stamped with CLOCK_MONOTONIC every 2 ms; the reader stamps its
arrival. The median added over the bare child (same terminal or pipe) is reported. Target: < 1 ms.

Stdlib only; needs util-linux ``script``. Prints one table with the ratios and exits 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINE = "step {i:>9} loss 2.3456 lr 3.0e-04 grad_norm 1.234 tokens/s 123456.7 mem 71.2GiB | epoch 1 [ok]\n"
PY_CHILD = """
import sys
total = int(sys.argv[1])
line = {line!r}
n = total // len(line.format(i=0))
w = sys.stdout.write
for i in range(n):
    w(line.format(i=i))
"""
LAT_CHILD = """
import sys, time
for i in range(int(sys.argv[1])):
    print(f"{time.monotonic_ns()} latency probe line {i}", flush=True)
    time.sleep(0.002)
"""
TARGETS = {"terminal": 1.05, "pipe": 1.10}


def sh(args: list[str]) -> str:
    return shlex.join(args)


def _outer(inner: str) -> str:
    """Run ``inner`` on a terminal of its own: an outer ``script`` whose own output is discarded."""
    return sh(["script", "-qfec", inner, "/dev/null"])


def timed(cmd: str, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=True, check=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def median_pair(base: str, test: str, repeat: int, env: dict[str, str]) -> tuple[float, float]:
    b: list[float] = []
    t: list[float] = []
    for i in range(repeat):
        order = [(base, b), (test, t)] if i % 2 == 0 else [(test, t), (base, b)]
        for cmd, out in order:
            out.append(timed(cmd, env))
    return statistics.median(b), statistics.median(t)


def latency(cmd: list[str], use_pty: bool, lines: int, env: dict[str, str]) -> float:
    """Median microseconds from the child's print to the reader's read."""
    if use_pty:
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.DEVNULL, env=env)
        os.close(slave)
        fd = master
    else:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
    delays: list[float] = []
    pending = b""
    while True:
        select.select([fd], [], [])
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        now = time.monotonic_ns()
        if not data:
            break
        pending += data
        *done, pending = pending.split(b"\n")
        for ln in done:
            head = ln.strip(b"\r\x00").split(b" ", 1)[0]
            if head.isdigit():
                delays.append((now - int(head)) / 1000)
    proc.wait()
    if use_pty:
        os.close(fd)
    return statistics.median(delays) if delays else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=("python", "cat", "both"), default="both")
    ap.add_argument("--latency-lines", type=int, default=400)
    args = ap.parse_args()
    if not shutil.which("script"):
        print("bench_wrapper: util-linux 'script' is required", file=sys.stderr)
        return 2
    py = sys.executable
    total = args.mb * 1024 * 1024
    work = Path(tempfile.mkdtemp(prefix="denpex-bench-"))
    env = {**os.environ, "DENPEX_HOME": str(work / "home"), "NO_COLOR": "1"}
    child_py = work / "child.py"
    child_py.write_text(PY_CHILD.format(line=LINE))
    data = work / "lines.txt"
    with data.open("w") as fh:
        i = 0
        written = 0
        while written < total:
            s = LINE.format(i=i)
            fh.write(s)
            written += len(s)
            i += 1
    lat_py = work / "lat.py"
    lat_py.write_text(LAT_CHILD)
    denpex = [py, "-m", "denpex", "run", "--"]
    children = {"python": [py, str(child_py), str(total)], "cat": ["cat", str(data)]}
    kinds = ["python", "cat"] if args.child == "both" else [args.child]
    rows: list[tuple[str, str, float, float, float, str]] = []
    failed = False
    for kind in kinds:
        child = children[kind]
        inner_script = sh(["script", "-qfec", sh(child), "/dev/null"])
        inner_denpex = sh(denpex + child)
        b, t = median_pair(_outer(inner_script), _outer(inner_denpex), args.repeat, env)
        ok = t / b <= TARGETS["terminal"]
        failed |= not ok
        rows.append((f"terminal, {kind} child", "script -qfec", b, t, t / b,
                     f"<= {TARGETS['terminal']}x {'ok' if ok else 'MISSED'}"))
        b, t = median_pair(sh(child) + " | cat > /dev/null", inner_denpex + " | cat > /dev/null", args.repeat, env)
        ok = t / b <= TARGETS["pipe"]
        failed |= not ok
        rows.append((f"pipe, {kind} child", "bare command", b, t, t / b,
                     f"<= {TARGETS['pipe']}x {'ok' if ok else 'MISSED'}"))
    lat = [py, str(lat_py), str(args.latency_lines)]
    lat_rows: list[tuple[str, float, float, float]] = []
    for label, use_pty in (("terminal", True), ("pipe", False)):
        bare = latency(lat, use_pty, args.latency_lines, env)
        wrapped = latency(denpex + lat, use_pty, args.latency_lines, env)
        scripted = latency(["script", "-qfec", sh(lat), "/dev/null"], use_pty, args.latency_lines, env) \
            if use_pty else float("nan")
        lat_rows.append((label, bare, wrapped, scripted))
    mb = args.mb
    print(f"denpex run benchmark: {mb} MB of {len(LINE.format(i=0))}-byte lines, median of {args.repeat} runs, "
          f"{os.cpu_count()} CPUs")
    print(f"{'case':28} {'baseline':14} {'base s':>8} {'denpex s':>9} {'ratio':>7}  target")
    for case, base, bs, ts, ratio, verdict in rows:
        print(f"{case:28} {base:14} {bs:8.2f} {ts:9.2f} {ratio:7.3f}  {verdict}")
    print()
    print(f"{'latency per line (median)':28} {'bare us':>9} {'denpex us':>10} {'added us':>9} "
          f"{'script us':>10}  target")
    for label, bare, wrapped, scripted in lat_rows:
        added = wrapped - bare
        ok = added < 1000
        failed |= not ok
        sc = f"{scripted:10.0f}" if scripted == scripted else f"{'-':>10}"
        print(f"{label:28} {bare:9.0f} {wrapped:10.0f} {added:9.0f} {sc}  < 1000 us {'ok' if ok else 'MISSED'}")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
