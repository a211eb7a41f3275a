"""Run the real probe inside a node root without sshd (``chroot <root> /bin/sh -s``) and evaluate
bundles with the registered checks, the way the suite does (nodegate/checks, slots.gpu_slots).

Used by tools/build_samples.py and the fleet tests; the SSH path is tested in tests/fleet and
tests/e2e.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from nodegate import probe
from nodegate.bundle import Bundle

#: sshd's default PATH for root on Debian (the probe appends its own directories).
SSHD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def probe_chroot(node: str, root: Path, spec: dict, *, command_timeout: int = 5,
                 deadline_s: float = 30.0) -> Bundle:
    """Probe one node root locally; returns its Bundle (meta mirrors nodegate.run.gather_node).

    ``deadline_s`` plays the controller's deadline: the probe's process group is killed when it
    passes, and the bundle records ``cut_at`` like a real gather.
    """
    pers = (spec.get("persistence") or {}).get("user", "nvidia-persistenced")
    samples = int((spec.get("clocks") or {}).get("samples", 3))
    script, marker = probe.render_script(user=pers, samples=samples, timeout_s=command_timeout)
    meta = {"node": node, "target": f"chroot://{node}", "probe_version": probe.PROBE_VERSION, "spec": spec,
            "status": "ok", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.monotonic()
    p = subprocess.Popen(["chroot", "--groups=0", str(root), "/bin/sh", "-s"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         env={"PATH": SSHD_PATH, "HOME": "/root", "USER": "root", "LOGNAME": "root", "SHELL": "/bin/bash"})
    timed_out = False
    try:
        out, err = p.communicate(script.encode(), timeout=deadline_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    items, complete = probe.split_stream(out, marker, stderr=err)
    _, err = probe.split_stderr(err, marker)
    meta.update(gather_s=round(time.monotonic() - t0, 3), complete=complete, exit_code=p.returncode,
                finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if err.strip():
        meta["probe_stderr"] = err[-4000:].decode("utf-8", errors="replace")
    if timed_out:
        open_items = [k for k, v in items.items() if v.status == "timeout"]
        meta["cut_at"] = open_items[-1] if open_items else (list(items)[-1] if items else "start")
        meta["cut_reason"] = f"probe stopped by the controller's deadline (probe {deadline_s:.0f}s)"
    return Bundle.from_raw(node, items, meta)


#: meta.json fields that change from run to run (ignored when comparing bundles).
VOLATILE_META = ("started_at", "finished_at", "gather_s", "connect_s", "exec_s")


def evaluate_bundle(bundle: Bundle, spec_raw: dict) -> dict[str, str]:
    """{test id: outcome} for one bundle, as the suite would report it."""
    from nodegate.checks import GpuSlot, evaluate, load_all
    from nodegate.checks.slots import gpu_slots
    from nodegate.collect import NodeFacts
    from nodegate.spec import load_spec

    spec = load_spec(spec_raw, f"profile {bundle.node}")
    facts = NodeFacts(bundle)
    # the suite ERRORs every item of a node that was not gathered before evaluating any check
    # (nodegate/session/verdicts.py), spec SKIPs included
    gathered = not bundle.gather_error
    out: dict[str, str] = {}
    slots: list[GpuSlot] | None = None
    for cid, c in sorted(load_all().items()):
        if c.scope == "node":
            out[f"test_{c.name}[{bundle.node}]"] = evaluate(cid, facts, spec).outcome.value if gathered else "error"
        else:
            if slots is None:
                slots = gpu_slots(facts, spec)
            for s in slots:
                out[f"test_{c.name}[{bundle.node}-{s.label}]"] = (
                    evaluate(cid, facts, spec, s).outcome.value if gathered else "error")
    return out
