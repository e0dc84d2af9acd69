"""Scan benchmark (``make bench``): denpex diagnose, both engines, against ripgrep and grep.

Generates a seeded corpus with ../shared/bench/gen_logs.py (one big file and the same bytes
split into per-rank files), then times in one run, on the same files:
  denpex diagnose (hyperscan engine, stdlib engine), rg -c --no-unicode -f, grep -c -E -f
(rg's default Unicode mode and grep on slices, since they are orders of magnitude slower),
with the patterns from `denpex signatures export`. Prints MB/s and ratios to rg --no-unicode.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GEN = REPO.parent / "shared" / "bench" / "gen_logs.py"
DENPEX = [sys.executable, "-m", "denpex"]


def _size(text: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    t = text.lower().rstrip("ib")
    return int(float(t[:-1]) * units[t[-1]]) if t[-1] in units else int(t)


PEAK_RSS: dict[str, float] = {}
# (name, input, command, environment, MB, every round or only the first)
Spec = tuple[str, str, list[str], dict[str, str] | None, float, bool]


def _time(cmd: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run; the peak RSS of its largest process is kept in PEAK_RSS (MB, the most over runs)."""
    t0 = time.perf_counter()
    # Output goes to a pipe, never /dev/null: GNU grep stops at the first match when it sees
    # its output is /dev/null, which would time a single match instead of a scan.
    with tempfile.TemporaryFile() as err_file:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_file, env=env)
        assert proc.stdout is not None
        while proc.stdout.read(1 << 16):
            pass
        _, status, usage = os.wait4(proc.pid, 0)
        err_file.seek(0)
        err = err_file.read()
    elapsed = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err.decode()[:300]}")
    key = " ".join(cmd) + " " + (env or {}).get("DENPEX_ENGINE", "")
    PEAK_RSS[key] = max(PEAK_RSS.get(key, 0.0), usage.ru_maxrss / 1024)
    return elapsed


def _ensure_rg() -> str | None:
    rg = shutil.which("rg")
    if rg is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "ripgrep"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        rg = shutil.which("rg")
    return rg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="corpus size (default 1GiB)")
    ap.add_argument("--ranks", type=int, default=1024, help="per-rank files for the split run")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--skip-stdlib", action="store_true", help="skip the (slow) stdlib engine run")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds; each tool keeps its best time")
    args = ap.parse_args()
    if not GEN.exists():
        print(f"bench: generator not found at {GEN}", file=sys.stderr)
        return 2
    work = args.workdir or Path(tempfile.mkdtemp(prefix="denpex-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    big = work / "corpus.log"
    size = _size(args.size)
    if not big.exists() or big.stat().st_size != size:
        subprocess.run([sys.executable, str(GEN), "--size", str(size), "--seed", str(args.seed), "--out", str(big)],
                       check=True, stdout=subprocess.DEVNULL)
    ranks = work / f"ranks-{args.ranks}"
    if not ranks.exists():
        ranks.mkdir()
        per = size // args.ranks
        with big.open("rb") as src:
            for r in range(args.ranks):
                data = src.read(per)
                data += src.readline()  # keep whole lines
                (ranks / f"rank{r}.log").write_bytes(data)
    pats_rg, pats_grep = work / "patterns.rg.txt", work / "patterns.grep.txt"
    pats_rg.write_bytes(subprocess.run([*DENPEX, "signatures", "export", "--format", "rg"],
                                       capture_output=True, check=True).stdout)
    pats_grep.write_bytes(subprocess.run([*DENPEX, "signatures", "export", "--format", "grep"],
                                         capture_output=True, check=True).stdout)
    mb = size / 1e6
    files = f"{args.ranks} files"
    rg = _ensure_rg()
    env = dict(os.environ)
    env["DENPEX_ENGINE"] = "hyperscan"
    env_re = dict(os.environ)
    env_re["DENPEX_ENGINE"] = "re"
    slice_ = work / "slice.log"  # 1 MiB for rg's Unicode mode
    slice8 = work / "slice8.log"  # 8 MiB for GNU grep, which runs 1,700 extended regexes at < 1 MB/s
    with big.open("rb") as src:
        slice_.write_bytes(src.read(min(size, 1024 * 1024)))
        src.seek(0)
        slice8.write_bytes(src.read(min(size, 8 * 1024 * 1024)))
    specs: list[Spec] = []
    diagnose = [*DENPEX, "diagnose"]
    for what, target in (("1 file", big), (files, ranks)):
        if rg:
            specs.append(("rg -c --no-unicode -f", what, [rg, "-c", "--no-unicode", "-f", str(pats_rg), str(target)],
                          None, mb, True))
        specs.append(("denpex diagnose (hyperscan)", what, [*diagnose, str(target), "--format", "json"], env, mb, True))
        if not args.skip_stdlib:
            specs.append(("denpex diagnose (stdlib re)", what, [*diagnose, str(target), "--format", "json"], env_re,
                          mb, True))
    if rg:
        # Unicode mode compiles the catalog's case-insensitive classes past rg's default
        # 100 MB regex limit (since 1,339 signatures); the limit only lets it compile.
        specs.append(("rg -c -f (Unicode, 1 MiB slice)", "1 file",
                      [rg, "-c", "--regex-size-limit", "2G", "-f", str(pats_rg), str(slice_)],
                      None, slice_.stat().st_size / 1e6, False))
    specs.append(("grep -c -E -f (8 MiB slice)", "1 file", ["grep", "-c", "-E", "-f", str(pats_grep), str(slice8)],
                  None, slice8.stat().st_size / 1e6, False))
    _time([*diagnose, str(slice_), "--format", "json"], env)  # warm the caches
    # The machine is shared: every tool runs once per round, interleaved, and keeps its best time.
    best: dict[int, float] = {}
    for round_no in range(max(1, args.repeat)):
        for i, (_, _, cmd, run_env, _, every) in enumerate(specs):
            if round_no == 0 or every:
                secs = _time(cmd, run_env)
                best[i] = min(best.get(i, secs), secs)
    rows = [(name, what, best[i], size_mb, PEAK_RSS[" ".join(cmd) + " " + (run_env or {}).get("DENPEX_ENGINE", "")])
            for i, (name, what, cmd, run_env, size_mb, _) in enumerate(specs)]
    base = next((secs for name, what, secs, *_ in rows if name.startswith("rg -c --no") and what == "1 file"), None)
    base_files = next((secs for name, what, secs, *_ in rows if name.startswith("rg -c --no") and what == files), None)
    print(f"corpus: {size / 2**20:.0f} MiB ({work}); {os.cpu_count()} cores")
    print(f"{'tool':34} {'input':11} {'seconds':>8} {'MB/s':>8} {'peak RSS MB':>12} {'time / rg same input':>21}")
    for name, what, secs, size_mb, rss in rows:
        rate = size_mb / secs if secs else float("inf")
        peer = base_files if what == files else base
        ratio = f"{(secs / (peer * size_mb / mb)):.2f}" if peer else "n/a"
        print(f"{name:34} {what:11} {secs:8.2f} {rate:8.1f} {rss:12.0f} {ratio:>21}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
