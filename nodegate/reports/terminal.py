"""The end-of-run terminal summary, printed before pytest's own sections: the verdict line (N
accepted, N need action, N not evaluated), one line per node (worst first: not gathered,
critical FAILs, FAILs, ERRORs; at most ``MAX_NODES`` lines so it fits one screen at any fleet
size), fleet totals, one line per node problem with its fix (``NodeInfo.problem``, at most
``MAX_NODES``), and output paths. Node strings are cleaned (no terminal escape sequences from a
hostile node name). ``fold_unreached`` takes the items of nodes that were never gathered out of
pytest's sections (their one problem line says it all)."""

from __future__ import annotations

from collections import Counter

from .records import NodeInfo
from .status import ACCEPTED, NOT_EVALUATED, verdict_line
from .text import one_line

MAX_NODES = 20


def _short(s: str, n: int) -> str:
    s = one_line(s, 0)
    return s if len(s) <= n else s[: n - 1] + "…"


def _accepted(i: NodeInfo) -> bool:
    """The node's status (nodegate.reports.status) when the reports decided it, else no problem."""
    return i.status == ACCEPTED if i.status else not i.has_problem


def _worst_first(i: NodeInfo):
    """Unreachable nodes, then critical FAILs, FAILs, ERRORs; accepted nodes last; then by name."""
    c = i.counts
    return (_accepted(i), i.gather_status == "ok", -c["fail_critical"], -c["fail_major"], -c["fail"],
            -c["error"], i.node)


def lines(infos: list[NodeInfo], outputs: list[tuple[str, str]], max_nodes: int = MAX_NODES,
          statuses: Counter | None = None) -> list[str]:
    """Lines to print; ``outputs`` are (what, path) pairs of files written; ``statuses``: node
    status -> nodes (the verdict line, first)."""
    total: Counter = Counter()
    for i in infos:
        total.update(i.counts)
    # "healthy" is the status accepted: a node not evaluated (deselected, not run) never is
    bad = [i for i in infos if not _accepted(i)]
    out = [f"nodegate verdict: {verdict_line(statuses)}"] if statuses is not None else []
    unjudged = sum(1 for i in infos if (i.status == NOT_EVALUATED if i.status else not i.evaluated))
    out.append(f"{len(infos)} node(s): {len(infos) - len(bad)} healthy, {len(bad)} with problems"
               + (f" ({unjudged} not evaluated)" if unjudged else "") + "; "
               f"checks: {total['pass']} pass, {total['fail']} fail, {total['skip']} skip, "
               f"{total['error']} error")
    shown = sorted(infos, key=_worst_first)[:max_nodes]
    if shown:
        w = min(40, max(len(_short(i.node, 40)) for i in shown))
        out.append(f"{'node':<{w}}  {'pass':>5} {'fail':>5} {'skip':>5} {'error':>5}  gather")
        for i in shown:
            c = i.counts
            out.append(f"{_short(i.node, 40):<{w}}  {c['pass']:>5} {c['fail']:>5} {c['skip']:>5} "
                       f"{c['error']:>5}  {_short(i.status_text, 80)}")
    if len(infos) > len(shown):
        hidden_bad = len(bad) - sum(1 for i in shown if not _accepted(i))
        out.append(f"... {len(infos) - len(shown)} more node(s) not listed "
                   f"({hidden_bad} with problems): see the HTML report")
    every = [i for i in sorted(infos, key=_worst_first) if not _accepted(i) and i.problem]
    if every:
        out.append("problems (one line a node, worst first; the fix after '->'; every finding in the HTML report):")
        for i in every[:max_nodes]:
            out.append(f"  {_short(i.node, 40)}: {_short(i.problem, 400)}")
        if len(every) > max_nodes:
            out.append(f"  ... {len(every) - max_nodes} more node(s) with problems: see the HTML report")
    every = [i for i in sorted(infos, key=_worst_first) if i.spec_off]
    if every:
        # issue 37.5: what the spec turned off, per node, with the file that set it
        out.append("checks turned off by the spec (key, and the file that set it):")
        for i in every[:max_nodes]:
            out.append(f"  {_short(i.node, 40)}: {_short(i.spec_off, 400)}")
        if len(every) > max_nodes:
            out.append(f"  ... {len(every) - max_nodes} more node(s): see the HTML report")
    for what, path in outputs:
        out.append(f"{what}: {one_line(path, 500)}")
    return out


def fold_unreached(stats: dict, infos: list[NodeInfo]) -> dict[str, list]:
    """Take the reports of nodes never gathered (``gather_status`` not ok) out of pytest's
    terminal ``stats`` ("error", "failed"): one node is ~200 identical ERRORs, ~600 lines of
    pytest's ERRORS section and short summary. Returns what was taken, to be put back before
    pytest's last line counts them. A report's node is its test id's parameter (``[node]`` or
    ``[node-gpuN]``, nodegate.reports.records)."""
    from .records import param_node_gpu
    gone = {i.node for i in infos if i.gather_status != "ok"}
    taken: dict[str, list] = {}
    if not gone:
        return taken
    for key in ("error", "failed"):
        keep, out = [], []
        for rep in stats.get(key, []) or []:
            m = param_node_gpu(str(getattr(rep, "nodeid", "")))
            (out if m and m[0] in gone else keep).append(rep)
        if out:
            stats[key] = keep
            taken[key] = out
    return taken


def run_lines(spec_sources: dict[str, str], nodes: list[str], shared_gpus=()) -> list[str]:
    """Where each node's spec came from (one line per origin; nodes judged by their own bundle's
    spec flagged), and GPUs that two nodes report (one serial or UUID on two nodes)."""
    from ..specsource import from_bundle, summary
    out = [f"spec: {one_line(line, 500)}" for line in summary(spec_sources, nodes)]
    if from_bundle(spec_sources):
        out.append("spec: a bundle's own spec is only as trusted as the bundle: judge it by yours with --spec FILE "
                   "or --inventory")
    for what, value, where in list(shared_gpus)[:20]:
        names = ", ".join(f"{_short(n, 40)} (gpu{'?' if i is None else i})" for n, i in where[:8])
        out.append(f"GPU {what} {_short(value, 60)} is reported by {len({n for n, _ in where})} nodes: {names}")
    if len(shared_gpus) > 20:
        out.append(f"... {len(shared_gpus) - 20} more GPU serials/UUIDs reported by more than one node")
    return out


def stale_line(removed) -> str:
    """``nodegate: removed 2 file(s) an earlier run left in the reports: bundles/gpu001.tar.gz, ...``
    (nodegate.reports.stale)."""
    from pathlib import Path
    names = [f"{Path(p).parent.name}/{Path(p).name}" for p in removed]
    shown_ = ", ".join(one_line(n, 200) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return f"nodegate: removed {len(names)} file(s) an earlier run left in the reports (not of this run): {shown_}"


#: why nodegate refuses testinfra's options (``help_first``): hosts and connections, or its output
REFUSED_WHY = {"--nagios": "exit codes and output are nodegate's (README \"Exit codes\")"}
#: testinfra's options a nodegate run uses, and how
USED_HOW = {"--sudo": "the probe and the site checks run through sudo -n"}


def help_first(parser, refused: list[str]) -> None:
    """Reorder pytest's ``--help``: nodegate's option groups (titles starting "nodegate") right
    after the positional arguments, pytest's own and other plugins' after them; each of
    ``refused`` (testinfra's host and connection options, which a nodegate run stops on) gets
    "[refused by nodegate]" in front of its help. Works on the argparse parser pytest builds
    (``Parser.optparser``, pytest 9; pytest 8 builds it later and keeps its own order): anything
    else leaves the help as it is."""
    ap = getattr(parser, "optparser", None)
    groups = getattr(ap, "_action_groups", None)
    if not isinstance(groups, list):
        return
    ours = [g for g in groups if str(getattr(g, "title", "") or "").lower().startswith("nodegate")]
    rest = [g for g in groups if g not in ours]
    lead = [g for g in rest if getattr(g, "title", "") in ("positional arguments", "positionals")]
    groups[:] = lead + ours + [g for g in rest if g not in lead]
    for act in getattr(ap, "_actions", []):
        flags = set(getattr(act, "option_strings", ()))
        if not act.help or "[refused" in act.help or "[nodegate:" in act.help:
            continue
        hit = sorted(flags & set(refused))
        if hit:
            why = REFUSED_WHY.get(hit[0], "hosts and connections come from --inventory")
            act.help = f"[refused by nodegate: {why}] " + act.help
        used = sorted(flags & set(USED_HOW))
        if used:
            act.help = f"[nodegate: {USED_HOW[used[0]]}] " + act.help


#: the loaded NVIDIA kernel module writes its version here (the driver's own procfs entry)
NVIDIA_PROC = "/proc/driver/nvidia/version"


def local_mode_line(option, proc: str = NVIDIA_PROC) -> str:
    """"" unless the run checks this machine (no --inventory, no --replay, --target unset or
    local://) and it has no NVIDIA driver loaded (``/proc/driver/nvidia/version`` absent): then
    the line saying so, printed first (issue 32)."""
    import os
    if getattr(option, "inventory", None) or getattr(option, "replay", None):
        return ""
    target = getattr(option, "target", None) or "local://"
    if not str(target).startswith("local"):
        return ""
    if os.path.exists(proc):
        return ""
    return (f"nodegate: local mode (no --inventory): this machine has no NVIDIA driver loaded ({proc} is absent), "
            "so its checks fail or cannot be evaluated; to check GPU nodes give --inventory FILE (or --replay DIR)")
