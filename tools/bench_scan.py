"""Scan benchmark (``make bench``): denpex diagnose, both engines, against ripgrep and grep.

Generates a seeded corpus with ../shared/bench/gen_logs.py (one big file and the same bytes
split into per-rank files), then times in one run, on the same files:
  denpex diagnose (hyperscan engine, stdlib engine), rg -c --no-unicode -f, grep -c -E -f
(and rg's default Unicode mode on a small slice, since it is orders of magnitude slower),
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


def _time(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    elapsed = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode()[:300]}")
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
    rows: list[tuple[str, str, float, float]] = []
    rg = _ensure_rg()
    base = None
    if rg:
        base = _time([rg, "-c", "--no-unicode", "-f", str(pats_rg), str(big)])
        rows.append(("rg -c --no-unicode -f", "1 file", base, mb))
        slice_ = work / "slice.log"
        with big.open("rb") as src:
            slice_.write_bytes(src.read(min(size, 1024 * 1024)))
        t = _time([rg, "-c", "-f", str(pats_rg), str(slice_)])
        rows.append(("rg -c -f (Unicode, 1 MiB slice)", "1 file", t, slice_.stat().st_size / 1e6))
    env = dict(os.environ)
    env["DENPEX_ENGINE"] = "hyperscan"
    _time([*DENPEX, "diagnose", str(big), "--format", "json"], env)  # warm the database cache
    one = _time([*DENPEX, "diagnose", str(big), "--format", "json"], env)
    rows.append(("denpex diagnose (hyperscan)", "1 file", one, mb))
    rows.append(("denpex diagnose (hyperscan)", f"{args.ranks} files",
                 _time([*DENPEX, "diagnose", str(ranks), "--format", "json"], env), mb))
    if not args.skip_stdlib:
        env_re = dict(os.environ)
        env_re["DENPEX_ENGINE"] = "re"
        rows.append(("denpex diagnose (stdlib re)", "1 file",
                     _time([*DENPEX, "diagnose", str(big), "--format", "json"], env_re), mb))
    rows.append(("grep -c -E -f", "1 file", _time(["grep", "-c", "-E", "-f", str(pats_grep), str(big)]), mb))
    print(f"corpus: {size / 2**20:.0f} MiB ({work}); {os.cpu_count()} cores")
    print(f"{'tool':38} {'input':12} {'seconds':>9} {'MB/s':>9} {'time vs rg --no-unicode':>24}")
    for name, what, secs, size_mb in rows:
        rate = size_mb / secs if secs else float("inf")
        ratio = f"{(secs / (base * size_mb / mb)):.2f}" if base else "n/a"
        print(f"{name:38} {what:12} {secs:9.2f} {rate:9.1f} {ratio:>24}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
