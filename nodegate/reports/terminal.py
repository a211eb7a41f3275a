"""The end-of-run terminal summary: the verdict line (N accepted, N need action, N not
evaluated), one line per node (worst first: not gathered, critical FAILs, FAILs, ERRORs; at most
``MAX_NODES`` lines so it fits one screen at any fleet size), fleet totals, and output paths.
Node strings are cleaned (no terminal escape sequences from a hostile node name)."""

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
    for what, path in outputs:
        out.append(f"{what}: {one_line(path, 500)}")
    return out


def run_lines(spec_sources: dict[str, str], nodes: list[str], shared_gpus=()) -> list[str]:
    """Where each node's spec came from (one line per origin; nodes judged by their own bundle's
    spec flagged), and GPUs that two nodes report (one serial or UUID on two nodes)."""
    from ..session.specfile import from_bundle, summary
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
