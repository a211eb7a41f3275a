"""Declared site evidence: the spec's ``site_evidence`` commands, run inside the ONE probe exec.

``nodegate: {site_evidence: {ib_ports: "ibstat", fm_log: "tail -n 200 /var/log/fabricmanager.log"}}``
adds one probe item per entry, ``site_evidence.<name>``, after the built-in items: the command
runs as ``sh -c '<command>'`` under the probe's own framing, node-side deadline (``timeout``,
``--command-timeout``) and caps (``head -c``, ``probe.DEFAULT_ITEM_CAP`` / ``ITEM_STDERR_CAP``),
in the probe's environment (POSIX sh, ``LC_ALL=C``, PATH with the sbin directories, ``--sudo``
as for the whole probe). A site test reads the result through the ``site_evidence`` fixture:
no SSH exec of its own, so a site check on a thousand nodes costs nothing extra.

The items are evidence like any other: in the bundle (docs/bundle.md), replayed by ``--replay``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import NodegateError

PREFIX = "site_evidence."
#: names become bundle keys (``nodegate.bundle`` key pattern) and file names
NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
#: longest declared command, characters (it travels inside the probe script)
MAX_COMMAND = 4096
MAX_ITEMS = 64


class SiteEvidenceError(NodegateError):
    """Declared evidence that cannot be used: not declared, not collected, cut, failed (ERROR)."""


def validate(declared: dict) -> dict[str, str]:
    """The ``site_evidence`` mapping checked (names, commands); raises ValueError (the spec
    loader turns it into a SpecError naming the key)."""
    if len(declared) > MAX_ITEMS:
        raise ValueError(f"at most {MAX_ITEMS} entries")
    out = {}
    for name, cmd in declared.items():
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise ValueError(f"name {name!r}: lower-case letters, digits and _ only (1-64), it names the bundle item")
        if not isinstance(cmd, str) or not cmd.strip():
            raise ValueError(f"{name}: the command must be a non-empty string")
        if len(cmd) > MAX_COMMAND or "\x00" in cmd:
            raise ValueError(f"{name}: the command must be under {MAX_COMMAND} characters, without NUL")
        out[name] = cmd
    return out


def _sh_quote(s: str) -> str:
    return "'" + s.replace("'", "'\"'\"'") + "'"


def probe_items(spec_raw) -> str:
    """Probe shell for the node's declared evidence (``spec_raw``: its ``nodegate:`` mapping,
    validated at start-up); "" when it declares none. One ``ng_item`` per entry, in the spec's
    order (probe.sh: ``ng_item KEY ng_to CMD...`` frames, caps and times out like ``ng_tool``)."""
    declared = spec_raw.get("site_evidence") if isinstance(spec_raw, dict) else None
    if not isinstance(declared, dict) or not declared:
        return ""
    lines = ["# site_evidence (nodegate/site/evidence.py): the spec's declared commands"]
    for name, cmd in validate(declared).items():
        lines.append(f"ng_item {PREFIX}{name} ng_to sh -c {_sh_quote(cmd)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class EvidenceItem:
    """One declared command's result, as the probe recorded it: ``stdout``/``stderr`` text
    (UTF-8, invalid bytes replaced), ``stdout_bytes``, ``rc`` (None: it did not finish),
    ``duration_s`` (node uptime between the item's frames), ``status`` (ok | timeout |
    truncated | malformed, nodegate.bundle.Evidence)."""

    name: str
    command: str
    key: str
    stdout_bytes: bytes
    stderr_bytes: bytes
    rc: int | None
    duration_s: float | None
    status: str
    why: str = ""

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", errors="replace")

    @property
    def succeeded(self) -> bool:
        return self.status == "ok" and self.rc == 0

    def text(self, ok_rcs: tuple[int, ...] = (0,)) -> str:
        """stdout, when the command finished with an exit code in ``ok_rcs``; else
        SiteEvidenceError with the reason (tool missing, exit code, deadline): the test is ERROR."""
        why = self.problem(ok_rcs)
        if why:
            raise SiteEvidenceError(f"site_evidence {self.name} ({self.command!r}): {why}")
        return self.stdout

    def problem(self, ok_rcs: tuple[int, ...] = (0,)) -> str | None:
        if self.status == "timeout":
            return "timed out (deadline reached before it finished)"
        if self.status == "truncated":
            return "output exceeded the per-item cap; not evaluated"
        if self.status == "malformed":
            return "the probe output for this item was malformed"
        if self.status != "ok":   # nodegate.bundle's verdict on the files: refused, inconsistent
            return f"bundle item {self.status}" + (f": {self.why}" if self.why else "")
        if self.rc == 127:
            first = self.stderr.strip().splitlines()[:1]
            return f"tool missing ({first[0][:200] if first else 'command not found'})"
        if self.rc == 124:
            return "timed out on the node (timeout exit 124)"
        if self.rc not in ok_rcs:
            first = self.stderr.strip().splitlines()[:1] or self.stdout.strip().splitlines()[:1]
            return f"exit code {self.rc}" + (f": {first[0][:300]}" if first else "")
        return None


class DeclaredEvidence:
    """The ``site_evidence`` fixture's value for one node: ``site_evidence["ib_ports"]`` ->
    EvidenceItem; a name the node's spec does not declare, or an item the probe did not
    collect, raises SiteEvidenceError (the test is ERROR). ``declared``: {name: command}."""

    def __init__(self, node: str, declared: dict[str, str], bundle):
        self.node, self.declared, self.bundle = node, dict(declared), bundle

    def __contains__(self, name: str) -> bool:
        return name in self.declared

    def __iter__(self):
        return iter(self.declared)

    def __len__(self) -> int:
        return len(self.declared)

    def __getitem__(self, name: str) -> EvidenceItem:
        if name not in self.declared:
            raise SiteEvidenceError(f"site_evidence {name!r} is not declared in {self.node}'s spec "
                                    f"(nodegate.site_evidence declares: {', '.join(self.declared) or 'nothing'})")
        key = PREFIX + name
        ev = self.bundle.items.get(key) if self.bundle is not None else None
        if ev is None:
            why = "not collected"
            cut = (self.bundle.meta or {}).get("cut_at") if self.bundle is not None else None
            if cut:
                why += f" (probe stopped at {cut}: {self.bundle.meta.get('cut_reason') or 'deadline'})"
            raise SiteEvidenceError(f"site_evidence {name} ({self.declared[name]!r}): {why} [{key}]")
        return EvidenceItem(name, self.declared[name], key, ev.stdout, ev.stderr, ev.rc, ev.duration_s, ev.status,
                            getattr(ev, "why", "") or "")

    get = __getitem__
