"""What masking looks for: a table of typed detectors, data first, ordered by precedence.

Each detector names a kind of value (an AWS key, an email, a host), the regex that finds it,
the named group ``v`` that is replaced (the rest of the match is context that stays), and
examples that must and must not mask; ``tests/minimize`` walks the table like the catalog's
examples. Order is precedence: when two detectors claim overlapping text the earlier one wins,
so specific token formats come before ``key=value`` guesses, and secrets before identity.

``generic`` detectors guess from shape or context; they may not touch the diagnostic tokens in
``PROTECTED`` (Xid codes, PCI bus ids, ranks, NCCL sequence numbers, sizes, times), so masking
never changes what diagnosis reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from denpex.scan.frames import FRAMEWORK_TREES

SECRET = "secret"
PERSONAL = "personal"
IDENTITY = "identity"

Refine = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class Detector:
    name: str  # stable id; the placeholder type for secrets (<secret:NAME:h>)
    category: str  # secret | personal | identity
    regex: re.Pattern[str]
    literals: tuple[str, ...]  # lowercase substrings; a line without any of them is skipped
    must: tuple[tuple[str, str], ...] = ()  # (line, value that must not survive)
    must_not: tuple[str, ...] = ()  # lines this detector must leave alone
    generic: bool = False  # keeps off PROTECTED diagnostic tokens
    label: str = ""  # placeholder type for personal/identity values (email, host, ip, ...)
    accept: Refine | None = None  # extra check on a match; False drops it
    learn_host: bool = False  # the value is a host name: remember it and mask it everywhere
    label_from_key: bool = False  # key=value: the placeholder type follows the key's name
    tags: tuple[str, ...] = field(default_factory=tuple)
    # A cheaper regex every match of ``regex`` contains (a necessary condition, never more):
    # a line without it is skipped. For detectors whose literals are in most lines (':', '.')
    # and whose regex has no literal to start from, so that re would try it at every position.
    gate: re.Pattern[str] | None = None


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# Diagnostic tokens generic detectors must not touch. Each with an example it protects.
PROTECTED: tuple[re.Pattern[str], ...] = (
    # PCI bus ids: "(PCI:0000:3b:00)", "00000000:3B:00.0", NCCL "busId 3b000"
    _rx(r"\(PCI:[0-9a-fA-F:.]+\)|(?<![\w:])[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\b"
        r"|\bbusId [0-9a-fA-F]+\b"),
    # "NVRM: Xid (PCI:0000:3b:00): 79," / "Xid 79"
    _rx(r"\bXid\b[^:]{0,40}: \d+|\bXid \d+\b"),
    # ranks: "[rank3]:", "[default3]:", "[Rank 3]", "rank 3", "rank=3", "global rank 3"
    _rx(r"\[(?:rank|default|worker|trainer)\d+\]:?|\b[Rr]ank[ =:]\s?\d+\b|\b(?:local_|global_)?rank\s?\d+\b"),
    # NCCL sequence numbers and counts: "SeqNum=48211", "NumelIn=1024", "last completed NCCL work: 12"
    _rx(r"\b(?:SeqNum|NumelIn|NumelOut|Timeout\(ms\)|OpType)=\S+|NCCL work: \d+"),
    # sizes: "12.50 GiB", "20 MiB", "1024 bytes"
    _rx(r"\b\d+(?:\.\d+)? ?(?:[KMGTP]i?B|bytes)\b"),
    # times: "14:01:02.481", "2024-05-01T12:00:00"
    # (a real time of day: "fsdp-worker-1:73:73" is a host name and a pid:tid, not a time)
    _rx(r"(?<![\d-])(?:[01]?\d|2[0-3]):[0-5]\d:[0-5]\d(?:[.,]\d+)?(?!\d)|\b\d{4}-\d{2}-\d{2}[T ]"),
    # hex addresses and C++ scopes: "0x7f3a", "c10::DistBackendError", "at::Tensor"
    _rx(r"\b0x[0-9a-fA-F]+\b|\b(?:(?=\w*[g-zG-Z_])[A-Za-z_]\w*::[A-Za-z_~]\w*|[A-Za-z_]\w*::(?=\w*[g-zG-Z_~])"
        r"[A-Za-z_~]\w*)"),
)

# Placeholders already written by masking: never masked again, so masking is idempotent.
PLACEHOLDER = _rx(r"<(?:secret:[a-z0-9_]+|[a-z_]+):[0-9a-f]{6,8}>|\bhost-[0-9a-f]{8}\b|<blob>")
HOST_PLACEHOLDER = _rx(r"host-[0-9a-f]{8}")

_NOT_SECRET_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "yes", "no", "n/a", "na", "***", "****", "*****", "xxx", "xxxx",
    "redacted", "<redacted>", "hidden", "masked", "required", "optional", "str", "string", "int", "bool",
    "undefined", "empty", "unset", "default", "auto", "env", "secret", "token", "password", "changeme?",
})
_NOT_SECRET_KEYS = frozenset({
    "pad_token", "eos_token", "bos_token", "unk_token", "sep_token", "cls_token", "mask_token",
    "pwd", "oldpwd", "--pwd", "cache_token", "next_token", "page_token", "tokenizer_token",
})
_SYSTEM_DIRS = ("/usr/", "/lib/", "/lib64/", "/lib32/", "/bin/", "/sbin/", "/etc/", "/proc/", "/sys/", "/dev/",
                "/var/log/", "/var/lib/", "/run/", "/opt/conda/", "/opt/nvidia/", "/boot/")


def _plausible_secret(m: re.Match[str]) -> bool:
    """A key=value guess is a secret only if the value could be one (not a flag, number or stand-in)."""
    v = m.group("v").strip("\"'")
    key = m.group("k").lower().strip("\"'")
    if key in _NOT_SECRET_KEYS or key.endswith(("_token_id", "_tokens")):
        return False
    if v.lower() in _NOT_SECRET_VALUES or v.startswith(("$", "<", "%", "{{", "${", "*")):
        return False
    return not (v.isdigit() and len(v) < 8)


def _mixed_token(m: re.Match[str]) -> bool:
    """Provider tokens are random: a letter and a digit both present (not a hyphenated word)."""
    v = m.group("v")
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


# Source trees of inference engines, as checked out in their containers (/sgl-workspace/sglang/...).
PUBLIC_PACKAGE_DIRS = ("sglang", "vllm", "tensorrt_llm", "lmdeploy", "text-generation-inference",
                       "text_generation_server", "llama.cpp", "ComfyUI")


def _user_path(m: re.Match[str]) -> bool:
    """Directories of the site (not /usr, /proc, ...), with at least two levels."""
    path = m.group(0)
    return not (path + "/").startswith(_SYSTEM_DIRS) and path.count("/") >= 2


def _public_ip(m: re.Match[str]) -> bool:
    v = m.group("v")
    return v not in ("0.0.0.0", "255.255.255.255") and not v.startswith("127.")


def _ipv6(m: re.Match[str]) -> bool:
    v = m.group("v")
    return len([g for g in v.split(":") if g]) >= 3 and v != "::1"


def _hostlike(m: re.Match[str]) -> bool:
    """Where the context is weaker ("on node X", "X: [rank3]:"), a host name has a digit, '-' or '.'."""
    v = m.group("v")
    return _hostname(m) and any(c.isdigit() or c in "-._" for c in v)


# Words that stand where a syslog line has its host but are a log level ("<stamp> ERROR engine.start: ...").
_LOG_LEVELS = frozenset({"error", "err", "warn", "warning", "info", "debug", "trace", "fatal", "critical", "notice"})


def _hostname(m: re.Match[str]) -> bool:
    v = m.group("v")
    return (len(v) >= 2 and not v.isdigit() and v.lower() not in ("localhost", "kernel", "none", "null")
            and v.lower() not in _LOG_LEVELS
            and not HOST_PLACEHOLDER.fullmatch(v) and re.fullmatch(r"[\d.]+", v) is None)


_KV_KEYS = (r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|"
            r"secret[_-]?key|private[_-]?key|client[_-]?secret|credentials?|session[_-]?key|signing[_-]?key|"
            r"encryption[_-]?key|auth[_-]?key|master[_-]?key|account[_-]?key|dsn|webhook[_-]?url)")

DETECTORS: tuple[Detector, ...] = (
    # ---- specific secret formats: the token announces itself -----------------------------------
    Detector("private_key", SECRET,
             _rx(r"(?P<v>-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----.{0,16384}?"
                 r"-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----)"),
             ("private key",),
             must=(('{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
                    '-----END PRIVATE KEY-----\\n"}', "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),),
             must_not=("ssh: no private key loaded",)),
    Detector("anthropic_key", SECRET, _rx(r"\b(?P<v>sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{20,200})"),
             ("sk-ant-",),
             must=(("ANTHROPIC_API_KEY=sk-ant-api03-Xy7_kQ9r2LmN8pQ4sT6vW1zA3bC5dE7fG9hJ2kL4mN6pQ8rS0tU-AAAA",
                    "sk-ant-api03-Xy7_kQ9r2LmN8pQ4sT6vW1zA3bC5dE7fG9hJ2kL4mN6pQ8rS0tU-AAAA"),),
             must_not=("see sk-ant-docs for details",)),
    Detector("openai_key", SECRET,
             _rx(r"\b(?P<v>sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,200})(?![\w-])"), ("sk-",),
             must=(("openai.AuthenticationError: Incorrect API key provided: sk-proj-4fT9qWx2LmZ8vB3nR7kP1sD6hJ0"
                    "cY5gE2aU9iO4tQ8wX3", "sk-proj-4fT9qWx2LmZ8vB3nR7kP1sD6hJ0cY5gE2aU9iO4tQ8wX3"),),
             must_not=("pip install scikit-learn sk-learn-compatible-wrapper-package",), accept=_mixed_token),
    Detector("github_token", SECRET,
             _rx(r"\b(?P<v>(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}))\b"),
             ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
             must=(("git clone https://ghp_R4nd0mT0k3nV4lu3abcdefghijklmnopqr12@github.com/org/repo",
                    "ghp_R4nd0mT0k3nV4lu3abcdefghijklmnopqr12"),),
             must_not=("ghp_short is not a token",)),
    Detector("gitlab_token", SECRET,
             _rx(r"\b(?P<v>gl(?:pat|dt|rt|ptt|cbt|imt|ft|oas|soat)-[A-Za-z0-9_-]{20,200})"),
             ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glft-", "gloas-", "glsoat-"),
             must=(("export GITLAB_TOKEN=glpat-xY3kP9mQ2rT7vW1zB5nL", "glpat-xY3kP9mQ2rT7vW1zB5nL"),),
             must_not=("glpat-short",)),
    Detector("npm_token", SECRET, _rx(r"\b(?P<v>npm_[A-Za-z0-9]{36})\b"), ("npm_",),
             must=(("//registry.npmjs.org/:_authToken npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
                    "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),),
             must_not=("npm_config_cache=/tmp/npm",)),
    Detector("pypi_token", SECRET, _rx(r"\b(?P<v>pypi-AgE[A-Za-z0-9_-]{50,300})"), ("pypi-age",),
             must=(("TWINE_PASSWORD pypi-AgEIcHlwaS5vcmcCJGE4ZDk1YTM2LWM1ZTEtNDQ2Ni04ZDYxLWRhMGE5NTVmNjE",
                    "pypi-AgEIcHlwaS5vcmcCJGE4ZDk1YTM2LWM1ZTEtNDQ2Ni04ZDYxLWRhMGE5NTVmNjE"),),
             must_not=("pypi-AgE",)),
    Detector("huggingface_token", SECRET, _rx(r"\b(?P<v>(?:hf_|api_org_)[A-Za-z0-9]{30,40})\b"), ("hf_", "api_org_"),
             must=(("huggingface_hub login --token hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH",
                    "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"),),
             must_not=("from transformers import hf_argparser",)),
    Detector("ngc_key", SECRET, _rx(r"\b(?P<v>nvapi-[A-Za-z0-9_-]{40,100})"), ("nvapi-",),
             must=(("NGC_CLI_API_KEY=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",
                    "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"),),
             must_not=("nvapi-docs",)),
    Detector("slack_token", SECRET,
             _rx(r"\b(?P<v>xox[abposre]-[A-Za-z0-9-]{10,200}|xapp-\d-[A-Za-z0-9-]{10,200})"), ("xox", "xapp-"),
             must=(("SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
                    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),),
             must_not=("xoxo hugs",)),
    Detector("slack_webhook", SECRET,
             _rx(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/-]{20,200})"),
             ("hooks.slack.com",),
             must=(("alert url https://hooks.slack.com/services/T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoPqRsTuVwX",
                    "T0123ABCD/B0456EFGH/aBcDeFgHiJkLmNoPqRsTuVwX"),),
             must_not=("see https://api.slack.com/messaging/webhooks",)),
    Detector("stripe_key", SECRET,
             _rx(r"\b(?P<v>(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,99}|whsec_[A-Za-z0-9]{24,99})\b"),
             ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
             must=(("stripe.api_key = 'sk_live_51HqLyjWDarjtT1zdp7dcXWvJ8pQ3mR5'",
                    "sk_live_51HqLyjWDarjtT1zdp7dcXWvJ8pQ3mR5"),),
             must_not=("pk_live_51HqLyjWDarjtT1zdp7dcXWvJ8pQ3mR5 is publishable",)),
    Detector("google_api_key", SECRET, _rx(r"\b(?P<v>AIza[0-9A-Za-z_-]{35})(?![\w-])"), ("aiza",),
             must=(("GOOGLE_API_KEY AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
                    "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),),
             must_not=("AIzaShort",)),
    Detector("google_oauth", SECRET, _rx(r"\b(?P<v>GOCSPX-[A-Za-z0-9_-]{20,40}|ya29\.[0-9A-Za-z_-]{20,400})"),
             ("gocspx-", "ya29."),
             must=(("Authorization header ya29.a0AfH6SMBx3kPqL9vR2tY7uI1oP5aS8dF0gH4jK6lZ",
                    "ya29.a0AfH6SMBx3kPqL9vR2tY7uI1oP5aS8dF0gH4jK6lZ"),),
             must_not=("ya29 is a prefix",)),
    Detector("docker_pat", SECRET, _rx(r"\b(?P<v>dckr_pat_[A-Za-z0-9_-]{20,60})"), ("dckr_pat_",),
             must=(("docker login -u bot --password-stdin <<< dckr_pat_2b3c4d5e6f7g8h9i0jKLMNOPqrs",
                    "dckr_pat_2b3c4d5e6f7g8h9i0jKLMNOPqrs"),),
             must_not=("dckr_pat_ is the prefix",)),
    Detector("databricks_token", SECRET, _rx(r"\b(?P<v>dapi[0-9a-f]{32})(?:-\d)?\b"), ("dapi",),
             must=(("DATABRICKS_TOKEN dapi0123456789abcdef0123456789abcdef", "dapi0123456789abcdef0123456789abcdef"),),
             must_not=("dapi is a word",)),
    Detector("sendgrid_key", SECRET, _rx(r"\b(?P<v>SG\.[\w-]{22}\.[\w-]{43})"), ("sg.",),
             must=(("SENDGRID 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",
                    "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"),),
             must_not=("SG.short",)),
    Detector("aws_access_key", SECRET,
             _rx(r"(?<![A-Za-z0-9])(?P<v>(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16})"
                 r"(?![A-Za-z0-9])"),
             ("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "aipa", "anpa", "anva", "apka"),
             must=(("botocore.credentials Found credentials: AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),),
             must_not=("ASIAN characters in ASIA region",)),
    Detector("jwt", SECRET,
             _rx(r"\b(?P<v>eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,4096}\.[A-Za-z0-9_-]{0,4096})"), ("eyj",),
             must=(("token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                    "eyJzdWIiOiJhbGljZSJ9"),),
             must_not=("eyJ is base64 for {\"",)),
    # ---- secrets told by their context ---------------------------------------------------------
    Detector("aws_secret_key", SECRET,
             _rx(r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[=:]\s*[\"']?(?P<v>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"),
             ("secret",),
             must=(("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),),
             must_not=("aws_secret_access_key = <from vault>",)),
    Detector("url_password", SECRET,
             _rx(r"\b[A-Za-z][\w+.-]{1,20}://(?:[^:@/\s\"']{1,256}):(?P<v>[^@\s/\"']{1,512})@[\w.\[\]-]"), ("://",),
             must=(("sqlalchemy.exc.OperationalError: postgresql://mlflow:S3cr3tPa55@db.internal:5432/mlflow",
                    "S3cr3tPa55"),),
             must_not=("https://github.com/pytorch/pytorch/issues/1", "tcp://10.0.0.1:29500")),
    Detector("azure_account_key", SECRET,
             _rx(r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=(?P<v>[^;\s\"']{8,512})"),
             ("accountkey=", "sharedaccess"),
             must=(("DefaultEndpointsProtocol=https;AccountName=ckpts;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4==;",
                    "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4=="),),
             must_not=("AccountName=ckpts;",)),
    Detector("signed_url", SECRET,
             _rx(r"(?i)[?&](?:X-Amz-Signature|X-Amz-Security-Token|X-Amz-Credential|X-Goog-Signature|"
                 r"X-Goog-Credential|Signature|sig|AWSAccessKeyId|GoogleAccessId)=(?P<v>[^&\s\"'<>]{8,4096})"),
             ("signature", "sig=", "credential", "security-token", "accesskeyid", "googleaccessid"),
             must=(("GET https://b.s3.amazonaws.com/ckpt.pt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
                    "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
                    "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"),),
             must_not=("Signature verification failed for package",)),
    Detector("authorization", SECRET,
             _rx(r"(?i)(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest|negotiate|"
                 r"AWS4-HMAC-SHA256|Splunk|ApiKey)\s+)?(?P<v>[^\s\"',]{6,4096})"),
             ("authorization",),
             must=(("curl -H 'Authorization: Bearer abc123def456ghi789' https://api.example.com",
                    "abc123def456ghi789"),),
             must_not=("authorization failed for user",)),
    Detector("bearer_token", SECRET, _rx(r"\b[Bb]earer\s+(?P<v>[A-Za-z0-9._~+/=-]{16,4096})"), ("bearer",),
             must=(("requests: headers={'X': 'Bearer 9f8e7d6c5b4a39281706f5e4'}", "9f8e7d6c5b4a39281706f5e4"),),
             must_not=("Bearer token expired",)),
    Detector("wandb_key", SECRET,
             _rx(r"(?i)(?:wandb[\w.-]{0,20}(?:api[_-]?key|key)?[\"']?\s*[=:]\s*[\"']?|wandb login\s+(?:--\S+\s+)*)"
                 r"(?P<v>(?:local-)?[0-9a-f]{40,86})\b"),
             ("wandb",),
             must=(("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
                    "0123456789abcdef0123456789abcdef01234567"),),
             must_not=("wandb: Tracking run with wandb version 0.16.0",)),
    Detector("netrc_password", SECRET,
             _rx(r"\bmachine\s+\S+\s+login\s+\S+\s+password\s+(?P<v>\S{1,512})"), ("machine",),
             must=(("machine api.wandb.ai login user password 0a1b2c3d4e5f", "0a1b2c3d4e5f"),),
             must_not=("machine learning login page",)),
    Detector("cli_password", SECRET,
             _rx(r"\b(?:sshpass|mysql|mysqladmin|mysqldump|docker login|podman login|helm registry login|"
                 r"ngc config set|psql)\b[^\n]{0,200}?\s(?:-p|--password)(?:[ =]|(?=[^\s-]))[\"']?"
                 r"(?P<v>[^\s\"']{1,512})"),
             ("sshpass", "mysql", "login", "ngc", "psql"),
             must=(("docker login nvcr.io -u '$oauthtoken' -p bmdjX2tleV9leGFtcGxl", "bmdjX2tleV9leGFtcGxl"),),
             must_not=("docker login nvcr.io --password-stdin",)),
    Detector("curl_user", SECRET,
             _rx(r"\b(?:curl|wget)\b[^\n]{0,200}?\s(?:-u|--user|--http-password=?)\s*[\"']?[^:\s\"']{1,128}:"
                 r"(?P<v>[^\s\"']{1,512})"),
             ("curl", "wget"),
             must=(("curl -u admin:hunter22 https://grafana.internal/api", "hunter22"),),
             must_not=("curl -u admin https://grafana.internal/api",)),
    Detector("flag_secret", SECRET,
             _rx(r"(?i)(?<![\w-])(?P<k>--?[\w-]{0,40}?" + _KV_KEYS + r")\s+[\"']?(?P<v>[^\s\"',;&]{3,2048})"),
             ("--", "-p"),
             must=(("python train.py --hf-token R4nd0mV4lu3xyz --epochs 3", "R4nd0mV4lu3xyz"),),
             must_not=("python train.py --tokens-per-batch 4096",),
             generic=True, accept=_plausible_secret, label_from_key=True),
    Detector("key_value_secret", SECRET,
             _rx(r"(?i)(?<![\w-])(?P<k>[\w.-]{0,60}?" + _KV_KEYS + r")[\"']?\s*[=:]\s*(?P<q>[\"']?)"
                 r"(?P<v>[^\s\"',;&)}\]]{3,2048})"),
             ("pass", "pwd", "secret", "token", "key", "credential", "dsn", "webhook"),
             gate=_rx(r"(?i)" + _KV_KEYS + r"[\"']?\s*[=:]"),
             must=(("db:\n  password: hunter2-xyz", "hunter2-xyz"), ("MLFLOW_TRACKING_PASSWORD=abc%def", "abc%def"),
                   ('{"api_key": "q1w2e3r4t5y6"}', "q1w2e3r4t5y6")),
             must_not=("max_new_tokens=2048", "pad_token: <pad>", "num_tokens: 512", "tokenizer=gpt2",
                       "[rank3]: token_id=42 SeqNum=48211"),
             generic=True, accept=_plausible_secret, label_from_key=True),
    # ---- infrastructure identity (with --identity) whose span would otherwise be a user's -----
    Detector("path", IDENTITY,
             _rx(r"(?<![\w.~>:/-])(?P<v>/(?:[\w.@+-]{1,255}/){0,63}?[\w.@+-]{1,255})"
                 # A package's own tree in a source checkout is public and says which engine
                 # ran (a packaged-engine rule reads it), and Python's own library says a frame
                 # is the standard library's (the raising-frame rule skips those): the site's
                 # part ends before either.
                 r"(?=/(?:site|dist)-packages/|/lib/python\d+(?:\.\d+)?/"
                 r"|/(?:" + "|".join(map(re.escape, PUBLIC_PACKAGE_DIRS + FRAMEWORK_TREES)) + r")/"
                 r"|/[\w.@+-]{1,255}(?![\w.@+/-]))"),
             ("/",), label="path", generic=True,
             accept=_user_path,
             must=(("torch.save failed: /scratch/team-a/run42/ckpt/step_1000.pt", "/scratch/team-a/run42/ckpt"),
                   ('File "/home/alice/sglang/python/sglang/srt/managers/scheduler.py"', "/home/alice"),
                   ('File "/cvmfs/soft/python/3.10.13/lib/python3.10/socket.py"', "/cvmfs/soft/python/3.10.13")),
             must_not=("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "see https://pytorch.org/docs/stable/a.html")),
    # ---- personal data ---------------------------------------------------------------------------
    Detector("email", PERSONAL,
             _rx(r"(?<![\w.+%-])(?P<v>[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24})"
                 r"\b"),
             ("@",), label="email", generic=True,
             accept=lambda m: re.search(r"\.(?:service|slice|mount|socket|target|timer|scope)$", m.group("v")) is None,
             must=(("Author: Jane Doe <jane.doe@example.com>", "jane.doe@example.com"),),
             must_not=("torch==2.1.0 @ file:///wheels", "model@step 100", "task_memcg=/user.slice/user@1000.service")),
    Detector("home_user", PERSONAL,
             _rx(r"(?:(?<![\w.-])/(?:home|Users|export/home|u)/|[A-Za-z]:\\Users\\)(?P<v>[A-Za-z0-9_][\w.-]{0,63})"
                 r"(?=[/\\\s\"':#$]|$)"),
             ("/home/", "/users/", "/u/", "\\users\\"), label="user",
             must=(('File "/home/alice/proj/train.py", line 12', "alice"),),
             must_not=("/usr/lib/python3.11/os.py",)),
    Detector("user_field", PERSONAL,
             _rx(r"(?<![\w-])(?:UserId|USER|LOGNAME|[Uu]ser(?:_?[Nn]ame)?|owner)\s*[=:]\s*[\"']?"
                 r"(?P<v>[A-Za-z_][\w.-]{0,31})(?=[\s(\"',;]|$)"),
             ("user", "logname", "owner"), label="user", generic=True,
             accept=lambda m: m.group("v").lower() not in ("none", "null", "root", "nobody", "unknown",
                                                          "user_code", "gpu_hardware"),
             must=(("JobId=42 JobName=train UserId=alice(1001) GroupId=ml(100)", "alice"),),
             must_not=("owner: user_code",)),
    # ---- infrastructure identity (with --identity) ----------------------------------------------
    Detector("nccl_host", IDENTITY,
             _rx(r"(?:^|(?<=[\s:\]>]))(?P<v>[A-Za-z0-9][\w.-]{0,252}):\d+:\d+ \[\d+\] "), (" [",), label="host",
             learn_host=True, accept=_hostname,
             must=(("gpu-node07:2451:2580 [3] NCCL INFO comm 0x55d0 rank 3 nranks 8", "gpu-node07"),),
             must_not=("14:01:02 [3] started",)),
    Detector("syslog_host", IDENTITY,
             _rx(r"^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)? "
                 r"(?P<v>[A-Za-z0-9][\w.-]{0,252}) [\w./-]{1,64}(?:\[\d+\])?: "),
             (":",), label="host", learn_host=True, accept=_hostname,
             must=(("May  7 12:00:00 gpu-node07 kernel: NVRM: Xid (PCI:0000:3b:00): 79", "gpu-node07"),),
             must_not=("May  7 12:00:00 localhost kernel: hello",)),
    Detector("iso_host", IDENTITY,
             _rx(r"^\d{4}-\d{2}-\d{2}T[\d:.,]+(?:Z|[+-]\d{2}:?\d{2})? (?P<v>[A-Za-z0-9][\w.-]{0,252}) "
                 r"[\w./-]{1,64}(?:\[\d+\])?: "),
             (":",), label="host", learn_host=True, accept=_hostname,
             must=(("2024-05-01T12:00:00+0000 dgx-a17 kernel: NVRM: Xid", "dgx-a17"),),
             must_not=("2024-05-01T12:00:00+0000 started run",
                       "2025-04-26T20:46:29.907Z ERROR engine.start: nixlBackendError('NIXL_ERR_BACKEND')")),
    Detector("scheduler_host", IDENTITY,
             _rx(r"(?:\b(?:NodeName|BatchHost|NodeList|nodename|Nodes|hostname|HOSTNAME|MASTER_ADDR|master_addr|"
                 r"master-addr|SLURMD_NODENAME|SLURM_NODELIST|SLURM_JOB_NODELIST)[=:]\s?|\bNodes? (?=\S+ not resp)|"
                 r"\bon node |\bsrun: error: (?=[^:\s]+: task)|\b(?:JOB|STEP) \S+ ON |TERMINATED ON |"
                 r"Node failure on |\btcp://|\bc10d://|rdzv_endpoint[=:]\s?)"
                 r"(?P<v>[A-Za-z][\w.\[\],-]{0,252}?)(?=[\s:\"',;)]|$)"),
             ("node", "host", "master", "srun", " on ", "tcp://", "c10d://", "rdzv", "batchhost"),
             label="host", learn_host=True, accept=_hostlike,
             must=(("slurmstepd: error: *** JOB 123 ON gpu-node07 CANCELLED AT 2024-01-01T00:00:00 ***", "gpu-node07"),
                   ("srun: error: dgx-b12: task 3: Exited with exit code 1", "dgx-b12")),
             must_not=("Task on node failed",)),
    Detector("pdsh_host", IDENTITY,
             _rx(r"^(?P<v>[A-Za-z][\w.-]{0,252}): (?=\[(?:rank|default)\d+\]:|\d{1,5}: )"), (": ",),
             label="host", learn_host=True, accept=_hostlike,
             must=(("worker-3: [rank3]: RuntimeError: boom", "worker-3"),),
             must_not=("Traceback: [rank3] x",)),
    Detector("internal_fqdn", IDENTITY,
             _rx(r"(?<![\w.-])(?P<v>(?:[A-Za-z0-9][\w-]{0,62}\.){1,8}(?:internal|local|lan|corp|cluster|svc|intra|"
                 r"localdomain|home\.arpa|private))(?![\w-])|(?<![\w.-])(?P<aws>ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3})\b"),
             (".internal", ".local", ".lan", ".corp", ".cluster", ".svc", ".intra", ".private", "ip-"),
             label="host", generic=True,
             must=(("connect to db.ml.internal:5432 refused", "db.ml.internal"),),
             must_not=("torch.cuda.local_rank",)),
    Detector("ipv4", IDENTITY,
             _rx(r"(?<![\w.])(?P<v>(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})"
                 r"(?![\w]|\.\d)"),
             (".",), label="ip", generic=True, accept=_public_ip, gate=_rx(r"\d\.\d{1,3}\.\d{1,3}\.\d"),
             must=(("NCCL INFO NET/Socket : Using [0]eth0:10.12.0.7<0>", "10.12.0.7"),),
             must_not=("driver 535.104.05 CUDA 12.2", "bind 0.0.0.0:8000")),
    Detector("ipv6", IDENTITY,
             _rx(r"(?<![0-9a-fA-F:.])(?P<v>(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|(?<![\w:.])"
                 r"(?:[0-9a-fA-F]{1,4}:){1,6}:(?:[0-9a-fA-F]{1,4}:){0,5}[0-9a-fA-F]{1,4})(?![\w:.])"),
             ("::", ":"), label="ip", generic=True, accept=_ipv6, gate=_rx(r":[0-9a-fA-F]{0,4}:"),
             must=(("GID fe80::ba59:9fff:fe3d:1a2b port 1", "fe80::ba59:9fff:fe3d:1a2b"),
                   ("remoteGidsfd00:1148:9000:5000:4:200:3:ff21 hca", "fd00:1148:9000:5000:4:200:3:ff21")),
             must_not=("c10::Error at::Tensor", "14:01:02.481")),
    Detector("mac", IDENTITY,
             _rx(r"(?<![\w:-])(?P<v>[0-9a-fA-F]{2}(?:([:-])[0-9a-fA-F]{2})(?:\2[0-9a-fA-F]{2}){4})(?![\w:-])"),
             (":", "-"), label="mac", generic=True, gate=_rx(r"[:-][0-9a-fA-F]{2}[:-][0-9a-fA-F]{2}[:-]"),
             must=(("link/ether 0c:42:a1:3b:5d:7e brd ff:ff:ff:ff:ff:ff", "0c:42:a1:3b:5d:7e"),),
             must_not=("0000:3b:00.0", "12:00:00")),
    Detector("gpu_uuid", IDENTITY,
             _rx(r"\b(?P<v>(?:GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b"),
             ("gpu-", "mig-"), label="gpu_uuid",
             must=(("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f1c7a0e-2b3d-4e5f-8a9b-0c1d2e3f4a5b)",
                    "GPU-5f1c7a0e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"),),
             must_not=("GPU-util 100%",)),
    Detector("serial", IDENTITY,
             _rx(r"(?i)\b(?:serial(?:[ _]?(?:number|no))?|board[ _]serial)\s*[:=]\s*(?P<v>[A-Za-z0-9-]{4,64})\b"),
             ("serial",), label="serial", generic=True,
             must=(("    Serial Number                         : 1322621047611", "1322621047611"),),
             must_not=("    Serial Number                         : N/A",)),
    Detector("job_id", IDENTITY,
             _rx(r"(?i)(?:\b(?:SLURM_JOB_ID|SLURM_JOBID|SLURM_ARRAY_JOB_ID|JobId|JOB_ID|jobid|StepId|"
                 r"LSB_JOBID|PBS_JOBID)[=:]\s?|\bslurm-|\b(?:JOB|STEP) |\[job |\bjob )(?P<v>\d{2,12})"
                 r"(?=[\s._\]):,]|$)"),
             ("job", "stepid", "slurm-"), label="job", generic=True,
             must=(("slurmstepd: error: *** JOB 4406711 ON gpu07 CANCELLED AT 2024-01-01T00:00:00 ***", "4406711"),),
             must_not=("job finished in 12.5 s",)),
)

BY_NAME: dict[str, Detector] = {d.name: d for d in DETECTORS}

# Host names learnt from positions where a host must stand are then masked everywhere.
KNOWN_HOST = Detector("known_host", IDENTITY, _rx(r"(?!)"), (), label="host", generic=True)

# key=value secrets: the placeholder says what the key held, from the key's name.
_KV_LABELS = (("pass", "password"), ("pwd", "password"), ("private", "private_key"), ("secret", "secret"),
              ("token", "token"), ("credential", "credential"), ("dsn", "dsn"), ("webhook", "webhook"),
              ("key", "api_key"))


def kv_label(key: str) -> str:
    low = key.lower()
    for needle, label in _KV_LABELS:
        if needle in low:
            return label
    return "secret"
