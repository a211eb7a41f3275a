"""Terminal output of a nodegate run: one progress line per node, "gathered N/M" lines."""

from __future__ import annotations

import sys

from ..run import RUN_KEY, FleetRun
from ..textsafe import shown
from .state import IDENTITY_ITEMS_KEY, ITEM_NODE_KEY, LIMIT_SAID_KEY, spec_get

#: ansible-core's warning for a host pattern part that matches no host or group
#: (InventoryManager._enumerate_matches: "Could not match supplied host pattern, ignoring: X")
NO_MATCH = "Could not match supplied host pattern"


def terminal_reporter(config):
    return config.pluginmanager.get_plugin("terminalreporter")


def terminal_writer(config):
    tr = terminal_reporter(config)
    return tr._tw if tr is not None else None


def limit_warnings(config, warnings, file=None) -> list[str]:
    """Say ansible-core's warnings among ``warnings`` that a ``--limit`` part matches nothing, as
    ``ansible --limit`` does, on the terminal (``file``: that stream instead, e.g. stderr beside
    --list-hosts' output), once a run, escaped; before pytest's terminal exists (pytest_configure)
    they wait for ``say_limit_warnings``. Returns the other warnings."""
    rest = [w for w in warnings if NO_MATCH not in w]
    if len(rest) == len(warnings):
        return rest
    said = config.stash.setdefault(LIMIT_SAID_KEY, {"said": set(), "pending": []})
    for w in warnings:
        if NO_MATCH not in w:
            continue
        text = w[w.index(NO_MATCH):]
        line = shown(f"nodegate: --limit {config.option.limit!r}: ansible-core: {text}", newlines=False)
        if line not in said["pending"]:
            said["pending"].append(line)
    say_limit_warnings(config, file)
    return rest


def say_limit_warnings(config, file=None) -> None:
    """The waiting lines of ``limit_warnings``, each once a run (the controller's terminal)."""
    said = config.stash.get(LIMIT_SAID_KEY, None)
    if not said or hasattr(config, "workerinput"):
        return
    if file is None and getattr(config.option, "list_hosts", None):
        file = sys.stderr   # --list-hosts' output is the hosts alone (--list-hosts=json: JSON)
    tw = terminal_writer(config) if file is None else None
    if file is None and tw is None:
        return
    for line in said["pending"]:
        if line in said["said"]:
            continue
        said["said"].add(line)
        if file is not None:
            file.write(line + "\n")
            file.flush()
        else:
            tw.line(line, yellow=True)
    said["pending"] = []


def is_tty(tw) -> bool:
    """Whether pytest's terminal writer writes to a terminal (markup on, or its file is a tty)."""
    if tw is None:
        return False
    f = getattr(tw, "_file", None)
    try:
        return bool(getattr(tw, "hasmarkup", False)) or bool(f is not None and f.isatty())
    except (AttributeError, ValueError):
        return False


def progress_line(tw, every_s: float = 10.0):
    """A ``write(text, final=False)`` for a progress line: on a terminal the line is rewritten in
    place (``\r``); to a file or pipe (a CI log) it is a whole line, written when the text's
    figures other than the elapsed time change and at most every ``every_s`` seconds, and at
    the end (``final``): no ``\r`` in a log (issue 32)."""
    import re
    import time as _time
    tty = is_tty(tw)
    state = {"key": None, "t": 0.0}

    def write(text: str, final: bool = False) -> None:
        if tw is None:
            return
        if tty:
            tw.write("\r" + text, flush=True)
            return
        key = re.sub(r"[\d.]+s\b", "", text)
        now = _time.monotonic()
        if final or (key != state["key"] and now - state["t"] >= every_s) or state["key"] is None:
            state["key"], state["t"] = key, now
            tw.line(text.rstrip())
    write.tty = tty
    return write


def group_by_node(config) -> None:
    """In pytest's default and -q output, one progress line per node (``node07 ....F... [ 12%]``)
    instead of a new line whenever the test file changes (items run node by node, so the file
    changes with nearly every item). Falls back to pytest's own output if its reporter differs."""
    tr = terminal_reporter(config)
    orig = getattr(tr, "write_fspath_result", None)
    if tr is None or orig is None or tr.verbosity > 0 or not hasattr(tr, "currentfspath"):
        return
    if getattr(orig, "_nodegate", False):
        return   # already wrapped (a sharded run collects once per shard)

    def write_fspath_result(nodeid: str, res: str, **markup: bool) -> None:
        node = config.stash.get(ITEM_NODE_KEY, {}).get(nodeid)
        if node is None and nodeid.startswith("suites/"):
            # an item whose entry is gone (a report written after its node was released: seen
            # once in a loaded full test run) is still a node's item: its id's parameter names it
            from ..reports.records import param_node_gpu
            m = param_node_gpu(nodeid)
            node = m[0] if m else None
        if node is None:
            return orig(nodeid, res, **markup)
        try:
            if nodeid in config.stash.get(IDENTITY_ITEMS_KEY, ()):
                key, label = ("nodegate-identity",), "node identity (every node)"
            else:
                key, label = ("nodegate-node", node), shown(node, newlines=False)  # a bundle's name: untrusted
            if tr.currentfspath != key:
                if tr.currentfspath is not None and tr._show_progress_info:
                    tr._write_progress_information_filling_space()
                tr.currentfspath = key
                tr._tw.line()
                tr._tw.write(label + " ")
            tr._tw.write(res, flush=True, **markup)
        except AttributeError:
            return orig(nodeid, res, **markup)
        return None

    write_fspath_result._nodegate = True
    tr.write_fspath_result = write_fspath_result


def wait_ticker(config, run: FleetRun):
    """While an item waits for its node to be gathered: a progress line of its own (default and
    -q output; -v lines already name each test)."""
    tr = terminal_reporter(config)
    if tr is None or tr.verbosity > 0 or not hasattr(tr, "currentfspath"):
        return None
    state = {"started": False}
    tty = is_tty(tr._tw)

    def tick() -> None:
        try:
            done, total, errors, dt = run.progress()
            line = f"nodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, {dt:.1f}s "
            if not state["started"]:
                state["started"] = True
                if tr.currentfspath is not None and tr._show_progress_info:
                    tr._write_progress_information_filling_space()
                tr.currentfspath = None   # the next result starts a new line
                tr._tw.line()
                if not tty:   # a log file: one line per wait, not a line rewritten 4 times a second
                    tr._tw.write(line, flush=True)
            if tty:
                tr._tw.write("\r" + line, flush=True)
        except AttributeError:
            pass
    return tick


def gathered_summary(terminalreporter, config) -> None:
    """pytest_terminal_summary: how the overlapped gather went, and GPUs beyond gpu.count."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.overlapped or hasattr(config, "workerinput") or config.option.collectonly:
        return
    done, total, errors, dt = run.progress()
    terminalreporter.write_line(f"nodegate: gathered {done}/{total} nodes, {errors} unreachable/errors in "
                                f"{dt:.1f}s, while the tests ran")
    extra = []
    from .granularity import of
    for node in sorted(of(config).from_count, key=run.all_nodes.index):   # per-GPU items from gpu.count
        want = spec_get(run.spec.get(node), "gpu.count")
        if node not in run.facts:   # released (bounded memory): what its gpu_count item saw
            n = run.surplus.get(node, 0)
        else:
            try:
                n = len(run.facts[node].gpus)
            except Exception:  # noqa: BLE001 - unreadable GPUs are the checks' to report
                continue
        if want and n > int(want):
            extra.append(f"{shown(node, newlines=False)} ({n} GPUs)")
    if extra:
        terminalreporter.write_line(
            "nodegate: GPUs beyond gpu.count have no per-GPU items (gpu_count FAILs for them; --per-gpu-items or a "
            "GPU named in the selection took their indices from the spec; correct gpu.count): " + ", ".join(extra[:20]) + (" ..." if len(extra) > 20 else ""),
            yellow=True)
