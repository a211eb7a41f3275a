"""One deadline per node, from TCP connect to the last byte, enforced by the controller.

paramiko's own timeouts are per step or per read, and some steps have none: the banner timeout
restarts with every read (a server sending its banner one byte a second holds a client about
255 s per line, for up to 100 lines), ``Channel.exec_command`` waits for the server's reply with
no timeout at all, ``sendall`` waits for window space the server never grants, and a channel's
CLOSE waits up to 30 s for a stalled key exchange (paramiko 5.1 ``transport.py``,
``channel.py``). The OpenSSH client's ``ConnectTimeout`` covers the TCP connect, banner and key
exchange only (ssh_config(5)), not authentication nor the session. So no call is trusted to
return: a ``Deadline`` is armed with the closers of what it guards (a socket, a process group),
and one watchdog thread per process calls them when it is due. Shutting a socket down makes
every call blocked on it fail at once; the caller then sees ``Deadline.expired()`` and raises
``Deadline.error()``: TransportError("timeout") naming the stage that was running.

Reusable per command: ``with Deadline(30, label="command") as dl: dl.add_closer(...); ...``.
``limit(seconds)`` bounds the stages from now on (the connect budget inside a node's deadline);
``stop`` (a threading.Event, its ``reason`` attribute saying why) ends the deadline early: an
interrupted run (SIGINT, SIGTERM, SIGHUP) closes every connection within ``POLL_S``;
``interrupt_all(reason)`` does so for every armed deadline of the process at once.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from .base import TransportError

#: The stages of one node's connection, in order (``Deadline.stage``; TransportError.stage).
STAGES = ("name resolution", "TCP connect", "SSH banner", "key exchange", "authentication",
          "channel open", "exec request", "sending the probe", "reading the output", "closing")

#: What did not happen, per stage, for the error message.
_WHAT = {
    "name resolution": "name resolution did not finish",
    "TCP connect": "TCP connect did not finish",
    "SSH banner": "TCP connected but no SSH banner (protocol version line) arrived",
    "key exchange": "the SSH key exchange did not finish",
    "authentication": "authentication did not finish",
    "channel open": "the server did not open a session channel",
    "exec request": "the server did not answer the exec request",
    "sending the probe": "the server did not accept the probe script on stdin (channel window closed)",
    "reading the output": "the probe did not finish",
    "closing": "the connection did not close",
}

#: Seconds between two looks at the armed deadlines' stop events.
POLL_S = 0.2


def set_stop(stop: threading.Event, reason: str) -> None:
    """Set ``stop`` and record why (shown in the cut evidence and the errors)."""
    if not stop.is_set():
        stop.reason = reason  # type: ignore[attr-defined]
        stop.set()


def stop_reason(stop: threading.Event | None) -> str:
    return str(getattr(stop, "reason", "") or "the run was interrupted") if stop is not None else ""


class Deadline:
    """A deadline ``seconds`` from now (monotonic clock) for a sequence of stages.

    ``label`` names the budget in messages ("connect", "node"); ``stop``: an Event that ends
    the deadline early (an interruption). ``stage(name)``: the stage now running (one of
    ``STAGES``); ``stage_fn``: a callable that names it more precisely when asked (the SSH
    handshake reads paramiko's transport state); ``note``: a detail for the message (bytes
    sent). ``fired``: "" until the watchdog (or ``fire``) ended it: "deadline" or
    "interrupted: <why>"; ``fired_stage``: the stage it ended in."""

    def __init__(self, seconds: float, *, label: str = "deadline", stop: threading.Event | None = None):
        self.seconds = float(seconds)
        self.start = time.monotonic()
        self.end = self.start + self.seconds
        self.label = label
        self.stop = stop
        self.note = ""
        self.stage_fn: Callable[[], str] | None = None
        self.fired = ""
        self.fired_stage = ""
        self._limit: tuple[float, float, str] | None = None     # (end, seconds, label)
        self._stage = ""
        self._stage_at = self.start
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ time
    def due(self) -> float:
        """Monotonic time at which the running stages must be done."""
        return self.end if self._limit is None else min(self.end, self._limit[0])

    def remaining(self) -> float:
        """Seconds left (0.0 once due)."""
        return max(0.0, self.due() - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def expired(self) -> bool:
        """Due, fired, or stopped."""
        return bool(self.fired) or time.monotonic() >= self.due() or (self.stop is not None and self.stop.is_set())

    def limit(self, seconds: float | None, label: str = "") -> None:
        """Bound the stages from now on to ``seconds`` (never past the overall end): e.g. the
        connect stages of a node's deadline get ``--connect-timeout``. None lifts the bound."""
        if seconds is None:
            self._limit = None
        else:
            self._limit = (time.monotonic() + float(seconds), float(seconds), label or self.label)
        _WATCHDOG.changed()

    # ------------------------------------------------------------------ stages
    def stage(self, name: str) -> None:
        self._stage = name
        self._stage_at = time.monotonic()

    def current_stage(self) -> str:
        fn = self.stage_fn
        if fn is not None:
            try:
                return fn() or self._stage
            except Exception:  # noqa: BLE001 - a stage name is a courtesy, never a failure
                pass
        return self._stage

    # ------------------------------------------------------------------ closers and the watchdog
    def add_closer(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` (it must not block: shut a socket down, kill a process group) when the
        deadline is due or stopped; at once when it already is."""
        with self._lock:
            if not self.fired:
                self._closers.append(fn)
                return
        _call(fn)

    def arm(self) -> "Deadline":
        _WATCHDOG.add(self)
        return self

    def disarm(self) -> None:
        _WATCHDOG.discard(self)

    def __enter__(self) -> "Deadline":
        return self.arm()

    def __exit__(self, *exc) -> None:
        self.disarm()

    def fire(self, why: str = "deadline") -> None:
        """End it now: record why and the stage, then call every closer (once)."""
        with self._lock:
            if self.fired:
                return
            self.fired_stage = self.current_stage()
            self.fired = why
            closers, self._closers = self._closers, []
        for fn in closers:
            _call(fn)

    def cancel(self, reason: str) -> None:
        """An interruption (``reason``: "SIGTERM", "Ctrl-C"...): ``fire`` with that reason."""
        self.fire(f"interrupted: {reason}")

    @property
    def interrupted(self) -> str:
        """Why the run was interrupted, when that (not time) ended this deadline; else ""."""
        if self.fired.startswith("interrupted: "):
            return self.fired[len("interrupted: "):]
        if not self.fired and self.stop is not None and self.stop.is_set():
            return stop_reason(self.stop)
        return ""

    def _due_reason(self, now: float) -> str:
        if self.stop is not None and self.stop.is_set():
            return f"interrupted: {stop_reason(self.stop)}"
        return "deadline" if now >= self.due() else ""

    # ------------------------------------------------------------------ the error
    def error(self, target: str) -> TransportError:
        """The TransportError for a connection this deadline ended: kind ``timeout`` (or
        ``interrupted``), the stage, what did not happen, and the budget that ran out."""
        stage = self.fired_stage or self.current_stage() or "connect"
        why = self.interrupted
        note = f" ({self.note})" if self.note else ""
        if why:
            return TransportError("interrupted", f"{target}: run interrupted ({why}) during {stage}{note}", stage)
        what = _WHAT.get(stage, f"{stage} did not finish")
        if self._limit is not None and self._limit[0] <= self.end:
            budget = f"{self._limit[2]} deadline of {self._limit[1]:g}s"
        else:
            budget = f"{self.label} deadline of {self.seconds:g}s"
        return TransportError("timeout", f"{target}: {what} within the {budget}{note} "
                                         f"[stage: {stage}, {self.elapsed():.1f}s after the start]", stage)


def _call(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - closing what is already broken must never raise
        pass


class _Watchdog:
    """One thread per process: fires every armed Deadline that is due or stopped. Firing runs
    the closers in a short-lived thread of their own, so one slow close delays no other node."""

    def __init__(self):
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition()
        self._armed: set[Deadline] = set()
        self._thread: threading.Thread | None = None

    def add(self, d: Deadline) -> None:
        with self._cond:
            self._armed.add(d)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="nodegate-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def discard(self, d: Deadline) -> None:
        with self._cond:
            self._armed.discard(d)

    def changed(self) -> None:
        with self._cond:
            self._cond.notify()

    def armed(self) -> list[Deadline]:
        with self._cond:
            return list(self._armed)

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [(d, why) for d in self._armed if (why := d._due_reason(now))]
                for d, _ in due:
                    self._armed.discard(d)
                if not due:
                    wait = min((d.due() for d in self._armed), default=now + 60.0) - now
                    if any(d.stop is not None for d in self._armed):
                        wait = min(wait, POLL_S)
                    self._cond.wait(max(0.0, wait))
                    continue
            for d, why in due:
                threading.Thread(target=d.fire, args=(why,), name="nodegate-deadline-fire", daemon=True).start()


_WATCHDOG = _Watchdog()
# A forked gathering process inherits the parent's armed set but not its thread.
os.register_at_fork(after_in_child=_WATCHDOG._reset)


def interrupt_all(reason: str) -> int:
    """End every armed deadline of this process now (``reason``: "SIGTERM"...): every SSH
    connection is shut down and every local process group killed. Returns how many."""
    ds = _WATCHDOG.armed()
    for d in ds:
        d.cancel(reason)
    return len(ds)
