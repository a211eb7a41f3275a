"""The burn-in script: render it for one node, and split its framed, streamed output.

``render(spec, duration_s)`` -> ``(script, marker)``; ``split(data, marker)`` -> ``Stream``: the
framed items (same framing as the probe: ``M BEGIN/END/ERR/ERREND``) plus the burn-in's own lines
(``M EV``, ``M HB``) which may sit anywhere, even inside an item, and are removed first.
"""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass, field
from importlib import resources

from ..probe import split_stream, RawItem
from .spec import BurninSpec

#: Per-item cap, bytes (the load's output item holds at most 4 MiB of dcgmi JSON).
ITEM_CAP = 8 * 1024 * 1024
#: Seconds one nvidia-smi sample may take on the node before ``timeout`` ends it (a GPU that
#: fell off the bus can hang nvidia-smi).
SAMPLE_TIMEOUT_S = 30


def template() -> str:
    return resources.files(__package__).joinpath("burnin.sh").read_text()


def render(spec: BurninSpec, duration_s: int, *, marker: str | None = None) -> tuple[str, str]:
    """Return ``(script, marker)``. Every spec value is shell-quoted or an int."""
    marker = marker or f"@@NG-{secrets.token_hex(12)}"
    if not re.fullmatch(r"@@NG-[0-9a-f]{8,64}", marker):
        raise ValueError("bad marker")
    cmd = (spec.command or "").replace("{seconds}", str(int(duration_s)))
    args = " ".join(shlex.quote(a) for a in spec.gpu_burn_args)
    fields = {
        "MARKER": marker, "DURATION": str(int(duration_s)), "INTERVAL": str(int(spec.interval_s)),
        "LOAD": shlex.quote(spec.load), "GPUBURN": shlex.quote(spec.gpu_burn), "GPUBURN_ARGS": shlex.quote(args),
        "COMMAND": shlex.quote(cmd), "DCGM_LEVEL": str(int(spec.dcgm_level)), "GRACE": str(int(spec.grace_s)),
        "KILL": str(int(spec.stop_grace_s)), "TIMEOUT": str(SAMPLE_TIMEOUT_S), "CAP": str(ITEM_CAP),
    }
    s = template()
    for k, v in fields.items():
        s = s.replace(f"@@{k}@@", v)
    return s, marker


def deadline_s(spec: BurninSpec, duration_s: int) -> float:
    """Controller-side deadline for the whole exec: the window, the grace, every stop signal,
    and set-up (field discovery, kernel log) with margin."""
    return duration_s + spec.grace_s + 3 * spec.stop_grace_s + 2 * spec.interval_s + 120


@dataclass
class Event:
    name: str
    epoch: int | None
    fields: dict[str, str] = field(default_factory=dict)


@dataclass
class Stream:
    """A split burn-in stream. ``items``: key -> RawItem with ``begin`` (uptime, epoch) in
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
