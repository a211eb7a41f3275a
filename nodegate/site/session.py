"""The session-level work of the site plugin: the run's pool, releasing a node, the end of the run."""

from __future__ import annotations

from .pool import PoolOptions, SitePool
from .state import SiteRun

#: nodes ahead of the current one whose site connections are opened in helper threads
LOOKAHEAD = 2


def make_pool(config, run, jobs) -> SitePool:
    """The run's SitePool: live (connections with the probe's transport policy: known_hosts,
    --accept-new-host-keys, --connect-timeout, --command-timeout per command, --sudo) unless
    the run replays bundles (``--replay``; an xdist worker of a live run opens its own
    connections to the nodes it is given, each node's items on one worker)."""
    from ..cmdline import gather_options
    o = config.option
    live = not getattr(o, "replay", None)
    if live and jobs is None:
        from ..session.api import build_jobs   # an xdist worker: the controller built them
        jobs = build_jobs(config)
    g = gather_options(config.option)
    site_timeout = getattr(o, "site_timeout", None)
    if site_timeout is None:   # the probe's own bound for one node (docs/security.md, Deadlines)
        site_timeout = g.connect_timeout + float(getattr(o, "probe_timeout", 180.0) or 180.0)
    opts = PoolOptions(hostkeys=g.hostkeys, connect_timeout=g.connect_timeout, command_timeout=g.command_timeout,
                       sudo=g.sudo, lookahead=LOOKAHEAD, site_timeout=float(site_timeout))
    return SitePool(run, live=live, urls={j.name: j.url for j in (jobs or [])}, options=opts)


def _baseline(config):
    try:
        from nodegate.plugins.nodegate_baseline import BASELINE_KEY
    except ImportError:   # pragma: no cover - the baseline plugin ships with nodegate
        return None
    return config.stash.get(BASELINE_KEY, None)


def merge_baseline(config, st: SiteRun, node: str) -> None:
    """This node's site outcomes into the --baseline comparison, once."""
    br = _baseline(config)
    if br is None or node in st.merged:
        return
    from .baseline import merge
    st.merged.add(node)
    merge(br, st.run, node, st.results.get(node, {}))


def release_node(config, st: SiteRun, node: str) -> None:
    """After the node's last site test: its connection closed, its recording and results
    written into its bundle (live runs), its outcomes compared with --baseline."""
    problem = st.pool.release(node, st.results.get(node, {}))
    if problem:
        st.problems.append(problem)
    merge_baseline(config, st, node)


def before_regression_item(item, st: SiteRun) -> None:
    """``test_regression_site[<node>]`` reads the comparison: make sure the node's site results
    are in it even if its site tests did not all run before (they are ordered to)."""
    if getattr(item, "originalname", "") != "test_regression_site":
        return
    cs = getattr(item, "callspec", None)
    p = cs.params.get("regression") if cs is not None else None
    if isinstance(p, tuple) and len(p) > 1:
        merge_baseline(item.config, st, p[1])


def finish(config, st: SiteRun) -> None:
    """Session finish (before the reports): every node still open released (interrupted runs)."""
    st.problems += st.pool.close_all(lambda n: st.results.get(n, {}))
    for node in list(st.results):
        merge_baseline(config, st, node)
