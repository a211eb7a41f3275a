"""Cleaning of untrusted text (node output, node names) before it reaches any report.

``clean`` makes a string safe for every output format we write: C0/C1 control characters
(which XML 1.0 forbids or discourages, and which terminals interpret) become visible
``\\xNN`` text, lone surrogates become U+FFFD, and the length is capped. ``esc`` is
``clean`` followed by HTML escaping (quotes too: values also land in attributes).
"""

from __future__ import annotations

import hashlib
import html
import re

# C0 controls except TAB and LF, DEL, C1 controls; CR is dropped separately (CRLF output).
# C0/C1 controls, and the bidi controls that reorder what a reader sees (ALM, LRM/RLM,
# embeddings/overrides, isolates: "Trojan Source", CVE-2021-42574), as nodegate.textsafe does
_CTRL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")

#: Default cap on one cell / property value, characters.
CELL_CAP = 2000


def _ctrl_repl(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def clean(value: object, limit: int = CELL_CAP, keep_newlines: bool = True) -> str:
    """Any value -> str without control characters, at most ``limit`` characters
    (a cut is marked with `` … [N more characters]``). ``None`` -> ``""``."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():
        # fast path (most values; ~10 per test item and phase): a printable string has no
        # C0/C1 control, CR, LF, TAB or surrogate, so every substitution below is a no-op
        return f"{s[:limit]} … [{len(s) - limit} more characters]" if limit and len(s) > limit else s
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    if not keep_newlines:
        s = s.replace("\n", " ").replace("\t", " ")
    s = _SURROGATE_RE.sub("\ufffd", _CTRL_RE.sub(_ctrl_repl, s))
    if limit and len(s) > limit:
        s = f"{s[:limit]} … [{len(s) - limit} more characters]"
    return s


def one_line(value: object, limit: int = CELL_CAP) -> str:
    """``clean`` with newlines and tabs turned into spaces (CSV cells, table cells)."""
    return clean(value, limit, keep_newlines=False)


def esc(value: object, limit: int = CELL_CAP, keep_newlines: bool = True) -> str:
    """``clean`` then HTML-escape (``<>&"'``): safe as element text and attribute value."""
    return html.escape(clean(value, limit, keep_newlines), quote=True)


class FileNames:
    """The run's file names of one folder's kind (node pages, evidence archives): node ->
    file stem, injective over the run whatever the node names are. The stem is
    ``safe_filename(node)`` unless another node of the run already has it (compared case-folded:
    a report folder on a case-insensitive share) or it is ``reserved`` (the names of other
    entries of that folder, e.g. a live run's ``bundles/<node>/`` beside ``bundles/<node>.tar.gz``);
    then ``~2``, ``~3``... is added (``~`` is in no safe or digested name) and the clash is
    recorded in ``clashes`` as (node, wanted stem, stem given)."""

    def __init__(self, reserved=()):
        self._of: dict[str, str] = {}
        self._taken: set[str] = {r.casefold() for r in reserved}
        self.clashes: list[tuple[str, str, str]] = []

    def stem(self, node: str) -> str:
        got = self._of.get(node)
        if got is not None:
            return got
        want = got = safe_filename(node)
        i = 2
        while got.casefold() in self._taken:
            got = f"{want}~{i}"
            i += 1
        if got != want:
            self.clashes.append((node, want, got))
        self._taken.add(got.casefold())
        self._of[node] = got
        return got


def excerpt(text: object, max_lines: int = 40, max_chars: int = 4000) -> str:
    """The first ``max_lines`` lines / ``max_chars`` characters of evidence, cleaned."""
    s = clean(text, limit=0)
    lines = s.split("\n")
    cut = ""
    if len(lines) > max_lines:
        cut = f"\n… [{len(lines) - max_lines} more lines]"
        lines = lines[:max_lines]
    s = "\n".join(lines)
    if len(s) > max_chars:
        s = s[:max_chars] + " … [cut]"
    return s + cut


#: what a digested name ends with (``safe_filename``): a plain name that ends so is digested
#: too, so that no node can name itself exactly what another node's unsafe name becomes
_DIGESTED_RE = re.compile(r"-[0-9a-f]{12}$")


def safe_filename(node: str) -> str:
    """A node name as a file name: unchanged when it is plain (letters, digits, ``_.-``) and
    does not end like a digested name (``-`` and 12 hex digits), else a slug plus a hash of the
    original, so two hostile names never collide, no plain name equals a digested one (issue 31,
    item 10: a bundle naming its node ``evil_node-0123456789ab`` shared another node's page), and
    no name escapes the directory (``..``, ``/``). Injective over a run only with ``FileNames``
    (a 48-bit digest prefix can be searched for)."""
    if _SAFE_NAME_RE.match(node) and node not in (".", "..") and not _DIGESTED_RE.search(node):
        return node
    slug = re.sub(r"[^A-Za-z0-9_.\-]+", "_", node).strip("._")[:60] or "node"
    digest = hashlib.sha256(node.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug}-{digest}"
