"""A pytest plugin for tests/hostile/test_report_signals.py: sends signals to its own process
at a known point of report writing, so that the tests need no sleep and no race.

``NG_SIGNAL_AT="module:Class.method:N"`` (or ``module:function:N``): on the N-th call of that
function, before it runs, the process sends itself each signal of ``NG_SIGNALS`` (``INT,TERM``),
in order, each delivered (Python runs the handler) before the next is sent."""

from __future__ import annotations

import functools
import importlib
import os
import signal


def pytest_configure(config):  # noqa: ARG001
    at, sigs = os.environ.get("NG_SIGNAL_AT"), os.environ.get("NG_SIGNALS")
    if not at or not sigs:
        return
    mod_name, attr, nth = at.split(":")
    owner = importlib.import_module(mod_name)
    *path, name = attr.split(".")
    for p in path:
        owner = getattr(owner, p)
    fn = getattr(owner, name)
    calls = [0]

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        calls[0] += 1
        if calls[0] == int(nth):
            for s in sigs.split(","):
                os.kill(os.getpid(), getattr(signal, f"SIG{s}"))
                signal.sigtimedwait([], 0) if hasattr(signal, "sigtimedwait") else None   # a bytecode boundary
        return fn(*a, **kw)

    setattr(owner, name, wrapper)
