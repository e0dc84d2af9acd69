"""The wrapper is invisible to the job: same bytes, same exit status, signals delivered."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.wrapper.conftest import PY, denpex_cmd, run_pipe, run_pty, wait_for

QUIET = ["--diagnose", "never"]


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_status_is_the_childs(code: int, wenv: dict[str, str]) -> None:
    res = run_pipe(denpex_cmd(*QUIET, "--", "sh", "-c", f"echo out; echo err >&2; exit {code}"), wenv)
    assert (res.rc, res.out, res.err) == (code, b"out\n", b"err\n")


def test_killed_by_sigkill_exits_137(wenv: dict[str, str]) -> None:
    res = run_pipe(denpex_cmd(*QUIET, "--", "sh", "-c", "echo before; kill -KILL $$"), wenv)
    assert (res.rc, res.out) == (128 + 9, b"before\n")


# The child naps in short steps: CPython runs a Python-level handler only between bytecodes,
# and a signal that lands after the last check but before ``time.sleep`` enters the kernel waits
# for that whole sleep. One ``time.sleep(20)`` made these tests flaky under load (the child got
# the forwarded signal and printed "got ..." twenty seconds late); the wrapper was not at fault.
SIGNAL_CHILD = """
import os, signal, sys, time
def handler(signo, frame):
    sys.stdout.write(f"got {signal.Signals(signo).name}\\n"); sys.stdout.flush(); os._exit(40 + signo)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, handler)
print("ready", flush=True)
for _ in range(200):
    time.sleep(0.1)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                                 signal.SIGUSR2])
def test_signals_are_forwarded(sig: signal.Signals, wenv: dict[str, str]) -> None:
    proc = subprocess.Popen(denpex_cmd(*QUIET, "--", PY, "-c", SIGNAL_CHILD), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=wenv)
    wait_for(proc, b"ready")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 40 + sig
    assert f"got {sig.name}".encode() in out
    assert err == b""


def test_default_sigterm_kills_with_143(wenv: dict[str, str]) -> None:
    proc = subprocess.Popen(denpex_cmd(*QUIET, "--", PY, "-c", "import time; print('ready', flush=True); "
                                                               "time.sleep(20)"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=wenv)
    wait_for(proc, b"ready")
    proc.terminate()
    proc.communicate(timeout=15)
    assert proc.returncode == 128 + signal.SIGTERM


def test_a_daemon_holding_stdout_does_not_keep_the_wrapper(wenv: dict[str, str]) -> None:
    child = "sleep 30 & echo daemon $!; echo parent done"
    start = time.monotonic()
    proc = subprocess.Popen(denpex_cmd(*QUIET, "--", "sh", "-c", child), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=wenv)
    assert proc.stdout is not None
    out = wait_for(proc, b"parent done")
    rc = proc.wait(timeout=10)
    assert rc == 0 and b"parent done" in out
    assert time.monotonic() - start < 10
    daemon = int(out.split(b"daemon ", 1)[1].split(b"\n", 1)[0])
    os.kill(daemon, signal.SIGKILL)


def test_stdin_reaches_the_child_and_eof_ends_it(wenv: dict[str, str]) -> None:
    data = b"".join(b"line %d\n" % i for i in range(20000))
    res = run_pipe(denpex_cmd(*QUIET, "--", "cat"), wenv, stdin=data)
    assert (res.rc, res.out) == (0, data)


def test_binary_and_partial_lines_pass_unchanged(tmp_path: Path, wenv: dict[str, str]) -> None:
    blob = bytes(range(256)) * 4000 + b"\r\x00no newline at the end"
    src = tmp_path / "blob.bin"
    src.write_bytes(blob)
    res = run_pipe(denpex_cmd("--run-dir", str(tmp_path / "run"), *QUIET, "--", "cat", str(src)), wenv)
    assert (res.rc, res.out) == (0, blob)
    assert (tmp_path / "run" / "output.log").read_bytes() == blob


def test_partial_line_is_relayed_before_the_newline(wenv: dict[str, str]) -> None:
    child = "import sys,time; sys.stdout.write('progress 50%'); sys.stdout.flush(); time.sleep(20)"
    proc = subprocess.Popen(denpex_cmd(*QUIET, "--", PY, "-c", child), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=wenv)
    try:
        assert wait_for(proc, b"progress 50%", timeout=10) == b"progress 50%"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_full_capture_disk_leaves_output_and_status_alone(tmp_path: Path, wenv: dict[str, str]) -> None:
    """RLIMIT_FSIZE stands in for a full disk: every capture write past 64 KiB fails with EFBIG."""
    payload = b"".join(b"row %07d of the job's output\n" % i for i in range(40000))
    src = tmp_path / "big.txt"
    src.write_bytes(payload)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))

    res = run_pipe(denpex_cmd("--run-dir", str(tmp_path / "run"), "--diagnose", "never", "--", "sh", "-c",
                              f"cat {src}; exit 7"), wenv,
                   preexec_fn=limit)
    assert res.rc == 7
    assert res.out == payload
    lines = res.err.decode().splitlines()
    warnings = [ln for ln in lines if ln.startswith("denpex: warning:")]
    assert len(warnings) == 1 and "capture" in warnings[0] and "unaffected" in warnings[0]


def test_pipe_stdout_gives_the_child_pipes(tmp_path: Path, wenv: dict[str, str]) -> None:
    res = run_pipe(denpex_cmd("--run-dir", str(tmp_path / "r"), *QUIET, "--", PY, "-c",
                              "import os; print(os.isatty(1), os.isatty(2))"), wenv)
    assert res.out == b"False False\n"
    meta = json.loads((tmp_path / "r" / ".denpex" / "meta.json").read_text())
    assert meta["mode"] == "pipe" and meta["exit_code"] == 0


def test_terminal_stdout_gives_the_child_a_terminal(tmp_path: Path, wenv: dict[str, str]) -> None:
    child = ("import os, sys; print(os.isatty(0), os.isatty(1), os.isatty(2), os.getsid(0) == os.getpid()); "
             "sys.stdout.write('\\x1b[31mred\\x1b[0m 10%\\r20%\\n'); sys.exit(5)")
    res = run_pty(denpex_cmd("--run-dir", str(tmp_path / "r"), *QUIET, "--", PY, "-c", child), wenv)
    assert res.rc == 5
    assert b"True True True True" in res.out
    assert b"\x1b[31mred\x1b[0m 10%\r20%" in res.out
    meta = json.loads((tmp_path / "r" / ".denpex" / "meta.json").read_text())
    assert meta["mode"] == "pty"
    assert b"\x1b[31mred" in (tmp_path / "r" / "output.log").read_bytes()


def test_terminal_signal_forwarding(wenv: dict[str, str]) -> None:
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(denpex_cmd(*QUIET, "--", PY, "-c", SIGNAL_CHILD), stdin=slave, stdout=slave,
                            stderr=slave, env=wenv, start_new_session=True)
    os.close(slave)
    got = b""
    deadline = time.monotonic() + 15
    while b"ready" not in got and time.monotonic() < deadline:
        got += os.read(master, 4096)
    proc.send_signal(signal.SIGUSR1)
    rc = proc.wait(timeout=15)
    os.close(master)
    assert rc == 40 + signal.SIGUSR1


def test_command_not_found_is_127(wenv: dict[str, str]) -> None:
    res = run_pipe(denpex_cmd(*QUIET, "--", "no-such-command-denpex"), wenv)
    assert res.rc == 127 and b"command not found" in res.err


def test_no_command_is_a_usage_error(wenv: dict[str, str]) -> None:
    assert run_pipe(denpex_cmd(), wenv).rc == 2
