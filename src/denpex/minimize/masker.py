"""The masking engine: text in, the same text with every detected value replaced by a typed
placeholder carrying a keyed pseudonym.

One engine serves every path that shows, stores or sends evidence (``denpex mask``, egress
payloads, stored incidents), so what an operator previews is what any of them would produce.
Masking is idempotent (placeholders are never masked again), keeps line counts (a private-key
block becomes one placeholder and blank lines), and never touches the diagnostic tokens listed
in ``detectors.PROTECTED``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from denpex.minimize.detectors import (
    DETECTORS,
    IDENTITY,
    KNOWN_HOST,
    PERSONAL,
    PLACEHOLDER,
    PROTECTED,
    SECRET,
    Detector,
    kv_label,
)
from denpex.minimize.keys import pseudonym

SECRET_HASH = 6  # secrets and personal data only need to correlate, rarely and within one incident
IDENTITY_HASH = 8  # hosts and addresses of a 10 000-node fleet must not collide

# A PCI bus id, masked only when asked (--mask-pci): "0000:3b:00.0", "(PCI:0000:3b:00)".
_PCI = Detector("pci", IDENTITY, re.compile(
    r"(?<![\w:])(?P<v>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\b|\bbusId (?P<aws>[0-9a-fA-F]+)\b"),
    (":", "busid"), label="pci")

_BEGIN_KEY = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----")
_END_KEY = re.compile(r"-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----")
# Lines inside a key block: base64 or armour headers, possibly behind a launcher prefix.
_KEY_MATERIAL = re.compile(r"^\s*(?:\[[^\]]{1,40}\]:?\s?|\d{1,5}: |[\w.-]{1,64}: )*\s*"
                           r"(?:[A-Za-z0-9+/=]{1,256}|(?:Proc-Type|DEK-Info|Comment|Version):.*)?\s*$")
KEY_BLOCK_MAX_LINES = 1024


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    detector: str
    replacement: str


@dataclass
class Masker:
    """Masks text with one site key. ``identity`` adds hosts, IPs, paths, GPU ids, job ids."""

    key: bytes
    identity: bool = False
    mask_pci: bool = False
    counts: Counter[str] = field(default_factory=Counter)
    known_hosts: set[str] = field(default_factory=set)
    _known_rx: re.Pattern[str] | None = None
    _known_size: int = -1

    def __post_init__(self) -> None:
        cats = {SECRET, PERSONAL} | ({IDENTITY} if self.identity else set())
        self._detectors = [d for d in DETECTORS if d.category in cats]
        if self.mask_pci:
            self._detectors.insert(0, _PCI)
        # Which detectors can match a line is decided before any detector's regex runs, in as
        # few C-level searches as possible: a Python loop over every literal of ~50 detectors
        # on every line cost more than the regexes themselves.
        self._literal_rx = [_literal_regex(d) for d in self._detectors]
        # Detectors whose literals are all words or token prefixes ("sk-ant-", "ghp_", "job")
        # are absent from most lines: one search for any of their literals skips them together.
        self._is_rare = [_rare(d) for d in self._detectors]
        rare = {lit for d, r in zip(self._detectors, self._is_rare, strict=True) if r for lit in d.literals}
        self._rare_rx = _any_of(rare)

    def _may_match(self, i: int, text: str, lower: str, any_rare: bool) -> bool:
        """Whether detector ``i`` can match the line: its literals, then its gate (both cheap)."""
        literal_rx = self._literal_rx[i]
        if literal_rx is not None and ((self._is_rare[i] and not any_rare) or literal_rx.search(lower) is None):
            return False
        gate = self._detectors[i].gate
        return gate is None or gate.search(text) is not None

    def _any_rare(self, lower: str) -> bool:
        return self._rare_rx is not None and self._rare_rx.search(lower) is not None

    # -- finding ------------------------------------------------------------------------------
    def spans(self, text: str) -> list[Span]:
        """Every value to replace, earlier detectors first, no two overlapping."""
        lower = text.lower()
        taken: list[tuple[int, int]] = []
        if "<" in text or "host-" in text:
            taken = [m.span() for m in PLACEHOLDER.finditer(text)]
        protected: list[tuple[int, int]] | None = None
        out: list[Span] = []
        any_rare = self._any_rare(lower)
        for i, det in enumerate(self._detectors):
            if det.name == "internal_fqdn":
                self._known(text, taken, out)
            if not self._may_match(i, text, lower, any_rare):
                continue
            for m in det.regex.finditer(text):
                vs, ve = _value_span(m)
                if vs < 0 or vs == ve or _overlaps(vs, ve, taken):
                    continue
                if det.accept is not None and not det.accept(m):
                    continue
                if det.generic and det is not _PCI:
                    if protected is None:
                        protected = [p.span() for rx in PROTECTED for p in rx.finditer(text)]
                    if _overlaps(vs, ve, protected):
                        continue
                value = text[vs:ve]
                if det.learn_host and _learnable(value):
                    self.known_hosts.add(value)
                taken.append((vs, ve))
                out.append(Span(vs, ve, det.name, self._placeholder(det, value, m)))
        out.sort(key=lambda s: s.start)
        return out

    def _known(self, text: str, taken: list[tuple[int, int]], out: list[Span]) -> None:
        rx = self._known_regex()
        if rx is None:
            return
        for m in rx.finditer(text):
            vs, ve = m.span()
            if _overlaps(vs, ve, taken):
                continue
            taken.append((vs, ve))
            out.append(Span(vs, ve, KNOWN_HOST.name, self._placeholder(KNOWN_HOST, m.group(0), m)))

    def _known_regex(self) -> re.Pattern[str] | None:
        if not self.known_hosts:
            return None
        if self._known_rx is None or self._known_size != len(self.known_hosts):
            alts = "|".join(re.escape(h) for h in sorted(self.known_hosts, key=lambda h: (-len(h), h)))
            self._known_rx = re.compile(rf"(?<![A-Za-z0-9])(?:{alts})(?![A-Za-z0-9])")
            self._known_size = len(self.known_hosts)
        return self._known_rx

    def _placeholder(self, det: Detector, value: str, m: re.Match[str]) -> str:
        if det.category == SECRET:
            label = kv_label(m.group("k")) if det.label_from_key else det.name
            return f"<secret:{label}:{pseudonym(self.key, 'secret', value, SECRET_HASH)}>"
        if det.category == PERSONAL:
            return f"<{det.label}:{pseudonym(self.key, det.label, value, SECRET_HASH)}>"
        h = pseudonym(self.key, det.label, value, IDENTITY_HASH)
        # A host must still read as a host where the readers expect one (NCCL host:pid:tid,
        # syslog host field): a bare word, no ':' or spaces.
        return f"host-{h}" if det.label == "host" else f"<{det.label}:{h}>"

    # -- applying -----------------------------------------------------------------------------
    def mask_text(self, text: str) -> str:
        """Mask one line (or one segment of an over-long line)."""
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        pos = 0
        for s in spans:
            parts.append(text[pos:s.start])
            parts.append(s.replacement)
            pos = s.end
            self.counts[s.detector] += 1
        parts.append(text[pos:])
        return "".join(parts)

    def learn(self, text: str) -> None:
        """Remember host names a line shows in host positions, so earlier lines get them masked too."""
        if not self.identity:
            return
        lower = text.lower()
        any_rare = self._any_rare(lower)
        for i, det in enumerate(self._detectors):
            if not det.learn_host or not self._may_match(i, text, lower, any_rare):
                continue
            for m in det.regex.finditer(text):
                if det.accept is None or det.accept(m):
                    value = m.group("v")
                    if _learnable(value):
                        self.known_hosts.add(value)

    def mask_name(self, name: str) -> str:
        """A file name safe to show: masked, and placeholders in file-name form (``job-3f9a1c2b``)."""
        masked = self.mask_text(name)
        return re.sub(r"<(?:secret:)?([a-z_]+):([0-9a-f]{6,8})>", r"\1-\2", masked)


def _any_of(literals: set[str] | tuple[str, ...]) -> re.Pattern[str] | None:
    """A regex finding any of the literals (longest first); None for none."""
    if not literals:
        return None
    return re.compile("|".join(re.escape(lit) for lit in sorted(literals, key=lambda x: (-len(x), x))))


def _literal_regex(det: Detector) -> re.Pattern[str] | None:
    """Finds any of the detector's literals in the lowered line; None when it has none."""
    return _any_of(det.literals)


def _rare(det: Detector) -> bool:
    return bool(det.literals) and all(len(lit) >= 3 for lit in det.literals)


def _value_span(m: re.Match[str]) -> tuple[int, int]:
    groups = m.re.groupindex
    for name in ("v", "aws"):
        if name in groups and m.group(name) is not None:
            return m.span(name)
    return m.span()


def _overlaps(s: int, e: int, spans: list[tuple[int, int]]) -> bool:
    return any(s < pe and ps < e for ps, pe in spans)


def _learnable(value: str) -> bool:
    """Single host names only: not lists ("gpu[01-04]"), not placeholders."""
    return not any(c in value for c in "[],") and PLACEHOLDER.search(value) is None


class LineMasker:
    """Masks a stream of lines, holding back private-key blocks until they can be masked whole."""

    def __init__(self, masker: Masker) -> None:
        self.masker = masker
        self._block: list[str] | None = None
        self._prefix = ""
        self._swallow = False

    def push(self, line: str) -> list[str]:
        if self._swallow:
            return self._swallowing(line)
        if self._block is not None:
            return self._in_block(line)
        m = _BEGIN_KEY.search(line)
        if m is not None and _END_KEY.search(line, m.end()) is None:
            self._block = [line[m.start():]]
            self._prefix = line[:m.start()]
            return []
        return [self.masker.mask_text(line)]

    def finish(self) -> list[str]:
        if self._block is not None:
            return self._close_block(None)
        self._swallow = False
        return []

    def _in_block(self, line: str) -> list[str]:
        assert self._block is not None
        end = _END_KEY.search(line)
        if end is not None:
            self._block.append(line[:end.end()])
            out = self._close_block(None)
            out[-1] = self.masker.mask_text(line[end.end():])
            return out
        if not _KEY_MATERIAL.match(line):
            return self._close_block(line)
        self._block.append(line)
        if len(self._block) >= KEY_BLOCK_MAX_LINES:
            out = self._close_block(None)
            self._swallow = True
            return out
        return []

    def _close_block(self, next_line: str | None) -> list[str]:
        """The block as one placeholder plus blank lines, so line numbers stay put."""
        assert self._block is not None
        block, self._block = self._block, None
        h = pseudonym(self.masker.key, "secret", "\n".join(block), SECRET_HASH)
        self.masker.counts["private_key"] += 1
        out = [self.masker.mask_text(self._prefix) + f"<secret:private_key:{h}>"] + [""] * (len(block) - 1)
        if next_line is not None:
            out.extend(self.push(next_line))
        return out

    def _swallowing(self, line: str) -> list[str]:
        end = _END_KEY.search(line)
        if end is not None:
            self._swallow = False
            return [self.masker.mask_text(line[end.end():])]
        if _KEY_MATERIAL.match(line):
            return [""]
        self._swallow = False
        return self.push(line)
