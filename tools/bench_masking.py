"""Leak benchmark for masking: a seeded corpus of realistic secrets inside real-looking GPU job
log lines, masked by Denpex and scanned by detect-secrets (the peer), both recalls reported.

    .venv/bin/python tools/bench_masking.py [--seed 7] [--secrets 400] [--out DIR]

The corpus is deterministic for a seed. Every planted secret is recorded with its kind; after
masking, a secret "survives" if its value (or any 16-character piece of a long one) is still in
the text. Diagnostic lines (Xid, NCCL, PCI, ranks) are interleaved and must come out unchanged.
tests/minimize/test_leak.py imports ``generate`` for a smaller slice.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import random
import string
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = string.ascii_letters + string.digits + "+/"

# Lines diagnosis depends on; masking (with --identity) must leave each of them byte-identical.
DIAGNOSTIC_LINES = (
    "[Sun Nov 29 14:01:01 2026] NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', name=<unknown>, "
    "GPU has fallen off the bus.",
    "[rank3]:[E1129 14:11:02.500000 4100 ProcessGroupNCCL.cpp:616] [PG 0 (default_pg) Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=262144000, "
    "NumelOut=262144000, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 3.81 MiB is free.",
    "[default2]:[rank2]: RuntimeError: CUDA error: an illegal memory access was encountered",
    "[1,5]<stderr>:MPI_ABORT was invoked on rank 5 in communicator MPI_COMM_WORLD with errorcode 1",
    "NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x56:1474)",
    "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
    "E1129 14:07:47.123456 12345 ProcessGroupNCCL.cpp:1595] [Rank 7] Process group watchdog thread terminated",
    "3: [rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5",
    "[ 1234.567890] pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received: 0000:41:00.0",
)


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mixed(rng: random.Random, n: int) -> str:
    while True:
        s = _r(rng, ALNUM, n)
        if any(c.isdigit() for c in s) and any(c.isalpha() for c in s):
            return s


def _jwt(rng: random.Random) -> str:
    def seg(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    head = seg({"alg": "RS256", "typ": "JWT"})
    body = seg({"sub": _r(rng, string.ascii_lowercase, 8), "iat": rng.randint(1_600_000_000, 1_800_000_000)})
    return f"{head}.{body}.{_r(rng, ALNUM + '-_', 43)}"


def _pem(rng: random.Random, kind: str) -> str:
    body = "\n".join(_r(rng, B64, 64) for _ in range(rng.randint(3, 8)))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


# kind -> (secret factory, line templates with {s}); a template may span lines.
Factory = Callable[[random.Random], str]
KINDS: dict[str, tuple[Factory, tuple[str, ...]]] = {
    "aws_access_key": (lambda r: "AKIA" + _r(r, string.ascii_uppercase + "234567", 16), (
        "botocore.credentials: Found credentials in environment variables. AWS_ACCESS_KEY_ID={s}",
        "[rank0]: boto3 client config: {{'aws_access_key_id': '{s}', 'region_name': 'us-east-1'}}",
    )),
    "aws_secret_key": (lambda r: _r(r, ALNUM + "/+", 40), (
        "aws_secret_access_key = {s}",
        "+ export AWS_SECRET_ACCESS_KEY={s}",
    )),
    "github_token": (lambda r: "ghp_" + _r(r, ALNUM, 36), (
        "+ git clone https://{s}@github.com/acme/llm-train.git",
        "[rank0]: GITHUB_TOKEN={s} pip install git+https://github.com/acme/kernels",
    )),
    "github_pat": (lambda r: "github_pat_" + _r(r, ALNUM + "_", 82), ("Using token {s} for private repo access",)),
    "gitlab_token": (lambda r: "glpat-" + _r(r, ALNUM + "_-", 20), (
        "CI_JOB_TOKEN={s} pip install --index-url https://gitlab.acme.io/api/v4/projects/12/packages/pypi/simple pkg",
    )),
    "npm_token": (lambda r: "npm_" + _r(r, ALNUM, 36), ("//registry.npmjs.org/:_authToken={s}",)),
    "huggingface": (lambda r: "hf_" + _r(r, string.ascii_letters, 34), (
        "[rank0]: huggingface_hub.login(token='{s}')",
        "HF_TOKEN={s} torchrun --nproc_per_node=8 train.py --model meta-llama/Llama-3-8B",
    )),
    "openai": (lambda r: "sk-proj-" + _mixed(r, 48), (
        "openai.AuthenticationError: Error code: 401 - Incorrect API key provided: {s}.",
        "eval harness: OPENAI_API_KEY={s}",
    )),
    "anthropic": (lambda r: "sk-ant-api03-" + _r(r, ALNUM + "_-", 93) + "AA", (
        "judge model client: anthropic.Anthropic(api_key=\"{s}\")",
    )),
    "ngc": (lambda r: "nvapi-" + _r(r, ALNUM + "_-", 64), (
        "+ docker login nvcr.io -u '$oauthtoken' -p {s}",
        "NGC_API_KEY={s} ngc registry model download-version nvidia/nemo/llama",
    )),
    "wandb": (lambda r: _r(r, HEX, 40), (
        "wandb: WANDB_API_KEY={s}",
        "+ wandb login --relogin {s}",
        "machine api.wandb.ai login user password {s}",
    )),
    "slack_token": (lambda r: f"xoxb-{r.randint(10**11, 10**12)}-{r.randint(10**12, 10**13)}-{_r(r, ALNUM, 24)}", (
        "notifier: posting failure to #gpu-alerts with SLACK_BOT_TOKEN={s}",
    )),
    "slack_webhook": (lambda r: f"T{_r(r, string.ascii_uppercase + string.digits, 8)}/"
                                f"B{_r(r, string.ascii_uppercase + string.digits, 10)}/{_r(r, ALNUM, 24)}", (
        "alert hook: https://hooks.slack.com/services/{s}",
    )),
    "stripe": (lambda r: "sk_live_" + _r(r, ALNUM, 32), ("billing sidecar: stripe.api_key={s}",)),
    "google_api_key": (lambda r: "AIza" + _r(r, ALNUM + "_-", 35), ("gemini eval: GOOGLE_API_KEY={s}",)),
    "jwt": (_jwt, (
        "[rank0]: requests.exceptions.HTTPError: 401 for url with token={s}",
        "k8s: using service account token {s}",
    )),
    "private_key": (lambda r: _pem(r, r.choice(("RSA ", "EC ", "OPENSSH ", ""))), (
        "{s}",
        "cat ~/.ssh/id_rsa\n{s}",
    )),
    "url_password": (lambda r: _mixed(r, 14), (
        "sqlalchemy.exc.OperationalError: could not connect to postgresql://mlflow:{s}@db.ml.internal:5432/mlflow",
        "redis.exceptions.ConnectionError: redis://default:{s}@cache-01:6379/0",
        "mongodb+srv://trainer:{s}@cluster0.example.net/runs?retryWrites=true",
    )),
    "authorization": (lambda r: _mixed(r, 32), (
        "+ curl -sf -H 'Authorization: Bearer {s}' https://artifacts.acme.io/ckpt/latest",
        "urllib3 DEBUG send: b'GET /v1/models HTTP/1.1\\r\\nAuthorization: Token {s}\\r\\n'",
    )),
    "basic_auth": (lambda r: _mixed(r, 12), ("+ curl -u admin:{s} https://grafana.acme.io/api/annotations",)),
    "s3_presigned": (lambda r: _r(r, HEX, 64), (
        "Downloading https://ckpts.s3.amazonaws.com/run42/step_1000.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Date=20241129T140101Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s}",
    )),
    "azure_sas": (lambda r: base64.b64encode(bytes(r.randrange(256) for _ in range(32))).decode(), (
        "blob url https://acme.blob.core.windows.net/ckpt/model.pt?sv=2022-11-02&ss=b&srt=o&sp=r&sig={s}",
        "DefaultEndpointsProtocol=https;AccountName=acmeckpt;AccountKey={s};EndpointSuffix=core.windows.net",
    )),
    "password_kv": (lambda r: _mixed(r, 12) + r.choice("!#%"), (
        "  db_password: {s}",
        "--- config ---\nmlflow:\n  tracking_password: \"{s}\"",
        "[rank0]: Namespace(lr=0.0003, batch_size=32, hub_password='{s}', seed=42)",
        "+ python train.py --wandb-project llm --db-password={s} --epochs 3",
    )),
    "generic_token_kv": (lambda r: _mixed(r, 24), (
        '{{"run": "llm-8b", "api_token": "{s}", "world_size": 64}}',
        "INFO:root:registry client_secret={s}",
    )),
    "databricks": (lambda r: "dapi" + _r(r, HEX, 32), ("DATABRICKS_HOST=https://adb-1.azuredatabricks.net "
                                                     "DATABRICKS_TOKEN={s}",)),
    "sendgrid": (lambda r: "SG." + _r(r, ALNUM + "_-", 22) + "." + _r(r, ALNUM + "_-", 43), (
        "mailer: SENDGRID_API_KEY={s}",
    )),
}

FILLER = (
    "[rank{r}]: [2026-11-29 14:00:{s:02d},000] [INFO] [logging.py:96:log_dist] [Rank {r}] step={n}, skipped=0, "
    "lr=[0.0003]",
    "gpu-node{r:02d}:{p}:{p} [{r}] NCCL INFO comm 0x55d0c1{r}0 rank {r} nranks 8 cudaDev {r} busId {r}b000 - Init "
    "COMPLETE",
    "[default{r}]:/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader "
    "will create 8 worker processes in total.",
    "INFO 11-29 14:00:{s:02d} model_runner.py:1060] Loading model weights took 14.9595 GB",
)


@dataclass
class Planted:
    kind: str
    value: str
    line_no: int  # 1-based line of the corpus where the secret starts


@dataclass
class LeakCorpus:
    text: str
    planted: list[Planted] = field(default_factory=list)
    diagnostic_lines: list[str] = field(default_factory=list)


def generate(seed: int = 7, n_secrets: int = 400) -> LeakCorpus:
    """A deterministic corpus: every kind in turn, random templates, filler and diagnostic lines between."""
    rng = random.Random(seed)
    kinds = sorted(KINDS)
    lines: list[str] = []
    corpus = LeakCorpus(text="")
    for i in range(n_secrets):
        kind = kinds[i % len(kinds)]
        factory, templates = KINDS[kind]
        value = factory(rng)
        for _ in range(rng.randint(0, 2)):
            lines.append(rng.choice(FILLER).format(r=rng.randint(0, 7), s=rng.randint(0, 59),
                                                   n=rng.randint(1, 9999), p=rng.randint(1000, 99999)))
        if rng.random() < 0.3:
            diag = rng.choice(DIAGNOSTIC_LINES)
            lines.append(diag)
            corpus.diagnostic_lines.append(diag)
        block = rng.choice(templates).format(s=value)
        first = len(lines) + 1
        lines.extend(block.split("\n"))
        corpus.planted.append(Planted(kind, value, first + next(
            (k for k, ln in enumerate(block.split("\n")) if value.split("\n")[0] in ln), 0)))
    corpus.text = "\n".join(lines) + "\n"
    return corpus


def survives(value: str, text: str) -> bool:
    """The secret, or any 16-character piece of a long one, still in the text."""
    for part in value.split("\n"):
        part = part.strip()
        if part.startswith("-----"):
            continue
        if part and part in text:
            return True
        if len(part) > 24:
            for i in range(0, len(part) - 16, 8):
                if part[i:i + 16] in text:
                    return True
    return False


def denpex_mask(text: str, identity: bool = True) -> tuple[str, float]:
    from denpex.minimize.masker import Masker
    from denpex.minimize.stream import mask_stream

    masker = Masker(b"bench-key-0123456789abcdef", identity=identity)
    out = io.BytesIO()
    t0 = time.perf_counter()
    mask_stream(io.BytesIO(text.encode()), out, masker)
    return out.getvalue().decode("utf-8", "surrogateescape"), time.perf_counter() - t0


def detect_secrets_hits(path: Path) -> dict[int, list[str]]:
    """line -> secret values detect-secrets (default plugins and filters) reports there."""
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings

    secrets = SecretsCollection()
    with default_settings():
        secrets.scan_file(str(path))
    hits: dict[int, list[str]] = {}
    for _, secret in secrets:
        hits.setdefault(secret.line_number, []).append(secret.secret_value or "")
    return hits


def peer_caught(p: Planted, hits: dict[int, list[str]]) -> bool:
    """detect-secrets flags a line; it caught the secret if a value it reports overlaps the planted one."""
    n_lines = p.value.count("\n") + 1
    for ln in range(p.line_no - 1, p.line_no + n_lines + 1):
        for v in hits.get(ln, []):
            if v and (v in p.value or p.value in v or (len(v) >= 8 and v[:8] in p.value)):
                return True
            if p.kind == "private_key" and "PRIVATE KEY" in v.upper():
                return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--secrets", type=int, default=400)
    ap.add_argument("--out", type=Path, help="also write corpus.log and masked.log here")
    args = ap.parse_args(argv)
    corpus = generate(args.seed, args.secrets)
    masked, secs = denpex_mask(corpus.text)
    missed = [p for p in corpus.planted if survives(p.value, masked)]
    lost = [d for d in corpus.diagnostic_lines if d not in masked]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.out or tmp) / "corpus.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(corpus.text)
        if args.out:
            (args.out / "masked.log").write_text(masked)
        t0 = time.perf_counter()
        hits = detect_secrets_hits(path)
        ds_secs = time.perf_counter() - t0
    caught = [p for p in corpus.planted if peer_caught(p, hits)]
    kinds = sorted({p.kind for p in corpus.planted})
    per_kind = {k: (sum(1 for p in corpus.planted if p.kind == k and p not in missed),
                    sum(1 for p in caught if p.kind == k),
                    sum(1 for p in corpus.planted if p.kind == k)) for k in kinds}
    n = len(corpus.planted)
    lines = corpus.text.count("\n")
    print(f"corpus: seed {args.seed}, {n} secrets of {len(kinds)} kinds in {lines} lines, "
          f"{len(corpus.diagnostic_lines)} diagnostic lines")
    print(f"denpex mask --identity: recall {(n - len(missed)) / n:.1%} ({n - len(missed)}/{n}), "
          f"diagnostic lines changed {len(lost)}, {lines / secs:,.0f} lines/s")
    print(f"detect-secrets 1.5.0:   recall {len(caught) / n:.1%} ({len(caught)}/{n}), {lines / ds_secs:,.0f} lines/s")
    print("| kind | denpex | detect-secrets | planted |")
    print("|---|---:|---:|---:|")
    for k, (ours, peer, total) in per_kind.items():
        print(f"| {k} | {ours} | {peer} | {total} |")
    for p in missed[:20]:
        print(f"MISSED {p.kind} line {p.line_no}: {p.value[:40]}", file=sys.stderr)
    return 1 if missed or lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
