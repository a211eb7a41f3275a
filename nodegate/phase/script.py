"""The script machinery both second-exec phases share (burn-in, performance): assemble a phase's
template with the shared shell prelude, fill its ``@@...@@`` fields, and split its framed,
streamed output.

``render(template_text, fields, marker)`` -> ``(script, marker)``; ``split(data, marker)`` ->
``Stream``: the framed items (same framing as the probe: ``M BEGIN/END/ERR/ERREND``) plus the
phase's own lines (``M EV``, ``M HB``) which may sit anywhere, even inside an item, and are
removed first.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from importlib import resources

from ..probe import split_stream, RawItem

#: Per-item cap, bytes (the burn-in's load output item holds at most 4 MiB of dcgmi JSON).
ITEM_CAP = 8 * 1024 * 1024


def prelude() -> str:
    """The shared shell prelude (prelude.sh: framing, heartbeats, exit traps), without its
    trailing newline (it replaces the ``@@PRELUDE@@`` line's text)."""
    return resources.files(__package__).joinpath("prelude.sh").read_text().rstrip("\n")


def template(package: str, name: str) -> str:
    """The phase script ``name`` of ``package`` with the shared prelude spliced in."""
    return resources.files(package).joinpath(name).read_text().replace("@@PRELUDE@@", prelude())


def render(text: str, fields: dict[str, str], marker: str | None = None) -> tuple[str, str]:
    """Return ``(script, marker)``: ``text`` with each ``@@KEY@@`` replaced by ``fields[KEY]``
    (in order) and ``@@MARKER@@`` by ``marker`` (a fresh random one when None). Raises
    ValueError for a marker not of the form ``@@NG-<hex>``."""
    marker = marker or f"@@NG-{secrets.token_hex(12)}"
    if not re.fullmatch(r"@@NG-[0-9a-f]{8,64}", marker):
        raise ValueError("bad marker")
    s = text
    for k, v in {"MARKER": marker, **fields}.items():
        s = s.replace(f"@@{k}@@", v)
    return s, marker


@dataclass
class Event:
    name: str
    epoch: int | None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class Stream:
    """A split phase stream. ``items``: key -> RawItem with ``begin`` (uptime, epoch) in
    ``starts``; ``events`` in order; ``heartbeats``: count; ``complete``: DONE seen."""

    items: dict[str, RawItem] = field(default_factory=dict)
    starts: dict[str, tuple[float | None, int | None]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    heartbeats: int = 0
    last_heartbeat: int | None = None
    complete: bool = False


def _num(b: bytes, conv):
    try:
        return conv(b.decode())
    except (ValueError, UnicodeDecodeError):
        return None


def split(data: bytes, marker: str) -> Stream:
    """Split the framed output (never raises on hostile input; unknown frames are dropped)."""
    mk = marker.encode() + b" "
    st = Stream()
    kept: list[bytes] = []
    for line in data.split(b"\n"):
        if line.startswith(mk):
            rest = line[len(mk):]
            word, _, tail = rest.partition(b" ")
            if word == b"HB":
                st.heartbeats += 1
                st.last_heartbeat = _num(tail.strip(), int)
                continue
            if word == b"EV":
                parts = tail.split(b" ")
                name = parts[0].decode(errors="replace")[:40]
                ev = Event(name, _num(parts[1], int) if len(parts) > 1 else None)
                for p in parts[2:]:
                    k, eq, v = p.partition(b"=")
                    if eq:
                        ev.fields[k.decode(errors="replace")[:40]] = v.decode(errors="replace")[:200]
                if len(st.events) < 1000:
                    st.events.append(ev)
                continue
            if word == b"BEGIN":
                parts = tail.split(b" ")
                if parts and parts[0]:
                    key = parts[0].decode(errors="replace")
                    st.starts.setdefault(key, (_num(parts[1], float) if len(parts) > 1 else None,
                                              _num(parts[2], int) if len(parts) > 2 else None))
        kept.append(line)
    st.items, st.complete = split_stream(b"\n".join(kept), marker, cap=ITEM_CAP)
    return st
