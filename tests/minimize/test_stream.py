"""Bad input is masked, not skipped: binary, invalid UTF-8, huge lines, key blocks, compressed."""

from __future__ import annotations

import gzip
import io
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.minimize import stream
from denpex.minimize.keys import KEY_FILE, load_or_create_key
from denpex.minimize.masker import Masker
from denpex.minimize.stream import mask_stream, open_input
from tests.minimize.conftest import KEY

AWS = "AKIAIOSFODNN7EXAMPLE"
HF = "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"


def _mask(data: bytes, identity: bool = False) -> bytes:
    out = io.BytesIO()
    mask_stream(io.BytesIO(data), out, Masker(KEY, identity=identity))
    return out.getvalue()


@pytest.mark.parametrize(("name", "data", "kept"), [
    ("invalid utf-8 around a key", b"\xff\xfe bad " + AWS.encode() + b" \xc3\x28 tail\n", [b"\xff\xfe bad ", b" \xc3\x28 tail\n"]),
    ("binary with NULs", b"\x00\x01\x02" * 100 + b"token=" + HF.encode() + b"\x00" * 50, [b"\x00\x01\x02" * 100]),
    ("CRLF lines", b"password=hunter2-xyz\r\nnext\r\n", [b"\r\nnext\r\n"]),
    ("no trailing newline", b"line\nAWS " + AWS.encode(), [b"line\nAWS <secret:aws_access_key:"]),
])
def test_bad_input_is_masked_and_other_bytes_round_trip(name: str, data: bytes, kept: list[bytes]) -> None:
    out = _mask(data)
    for secret in (AWS, HF, "hunter2-xyz"):
        assert secret.encode() not in out, name
    for piece in kept:
        assert piece in out, name


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_bytes_without_secrets_round_trip_exactly(data: bytes) -> None:
    """Undecodable bytes come out as they went in (surrogateescape), whatever the input."""
    if any(c in data.lower() for c in (b"key", b"pass", b"token", b"secret", b"@", b"/home", b"bearer", b"://",
                                       b"auth", b"user", b"pwd", b"sk-", b"dsn", b"login", b"owner", b"webhook",
                                       b"credential", b"-----", b"-p", b"--")):
        return
    assert _mask(data) == data


def test_very_long_line_is_masked_in_segments_with_secrets_everywhere() -> None:
    seg = stream.SEGMENT
    words = []
    size = 0
    positions = {10, seg // 2, seg - 20, seg - 5, seg + 3, 2 * seg - 40, 3 * seg}
    i = 0
    while size < 3 * seg + 1000:
        w = f"password={HF}" if any(size <= p < size + 60 for p in positions) else f"word{i}"
        words.append(w)
        size += len(w) + 1
        i += 1
    data = (" ".join(words) + "\nafter\n").encode()
    out = _mask(data)
    assert HF.encode() not in out
    assert out.endswith(b"\nafter\n")
    assert out.count(b"\n") == 2
    assert out.count(b"<secret:") == sum(1 for w in words if HF in w)


def test_whitespace_free_run_beyond_half_a_segment_becomes_a_blob() -> None:
    blob = b"A" * (3 * stream.SEGMENT) + AWS.encode() + b"B" * 100
    out = _mask(b"head " + blob + b" tail\nnext\n")
    assert AWS.encode() not in out
    assert out == b"head <blob> tail\nnext\n"


def test_private_key_block_is_masked_whole_and_keeps_line_count() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nq2w3e4r5t6y7u8i9\n-----END RSA PRIVATE KEY-----"
    data = f"[rank0]: loading key\n{block} trailing\nnext line\n".encode()
    out = _mask(data).decode()
    assert "MIIE" not in out and "q2w3e4" not in out
    assert out.count("\n") == data.decode().count("\n")
    assert out.splitlines()[1].startswith("<secret:private_key:")
    assert out.splitlines()[4] == " trailing"


def test_truncated_private_key_block_still_masked() -> None:
    out = _mask(b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0\nTraceback (most recent call last):\n").decode()
    assert "MIIEvQ" not in out
    assert out.endswith("Traceback (most recent call last):\n")
    assert out.count("\n") == 3


def test_gzip_input_is_read_decompressed(tmp_path: Path) -> None:
    p = tmp_path / "log.gz"
    p.write_bytes(gzip.compress(f"AWS {AWS}\n".encode()))
    out = io.BytesIO()
    with open_input(str(p)) as fin:
        mask_stream(fin, out, Masker(KEY))
    assert out.getvalue().startswith(b"AWS <secret:aws_access_key:")


def test_key_is_created_owner_only_and_stable(denpex_home: Path) -> None:
    k1 = load_or_create_key()
    mode = stat.S_IMODE(os.stat(denpex_home / KEY_FILE).st_mode)
    assert mode == 0o600
    assert load_or_create_key() == k1 and len(k1) == 32
