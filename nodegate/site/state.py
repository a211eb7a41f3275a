"""The site checks' state in one pytest session (``config.stash[SITE_KEY]``)."""

from __future__ import annotations

import time

import pytest

from .backend import budget_spent  # noqa: F401  (re-exported)
from .pool import SitePool, SiteUnavailable

SITE_KEY = pytest.StashKey["SiteRun"]()


class SiteRun:
    """``pool`` (SitePool), ``results`` ({node: {result key: {check_id, outcome, title}}}, what
    the bundles and ``--baseline`` get), ``last`` ({node: nodeid of its last site item}),
    ``order`` (nodes whose site items use ``host``, in item order: opened ahead), ``problems`` (recordings not written),
    ``merged`` (nodes whose site results went into the baseline comparison)."""

    def __init__(self, run, pool: SitePool):
        self.run = run
        self.pool = pool
        self.results: dict[str, dict[str, dict]] = {}
        self.last: dict[str, str] = {}
        self.order: list[str] = []
        self.problems: list[str] = []
        self.merged: set[str] = set()
        self.current: tuple[str, str, float | None] | None = None   # (node, check id, timeout) of the running item
        self._evidence: dict[str, object] = {}
        #: {node: time.monotonic() its site budget ends}: set at its first site item (issue 31,
        #: item 11: one slow node held a run 107 s against a 25 s connect+probe budget)
        self.until: dict[str, float] = {}

    def bundle(self, node: str):
        b = self.run.bundles.get(node)
        return b if b is not None else self.run.wait(node)

    def spec_value(self, node: str, name: str):
        return getattr(self.run.spec.get(node), name, None)

    def host(self, node: str):
        """The node's testinfra Host (SiteUnavailable -> the fixture errors: ERROR)."""
        sh = self.pool.host(node)
        cur = self.current
        if cur is not None and cur[0] == node:
            sh.backend.begin(cur[1], cur[2], until=self.until.get(node), budget_s=self.budget_s)
        return sh.host

    def track(self, node: str, evidence):
        self._evidence[node] = evidence
        return evidence

    def begin(self, node: str, check_id: str, timeout_s: float | None) -> None:
        """An item of ``node`` starts (before its fixtures): its commands are attributed to
        ``check_id`` and get its deadline."""
        self.current = (node, check_id, timeout_s)
        if node not in self.until:
            self.until[node] = time.monotonic() + self.budget_s
        sh = self.pool.hosts.get(node)
        if sh is not None:
            sh.backend.begin(check_id, timeout_s, until=self.until[node], budget_s=self.budget_s)

    @property
    def budget_s(self) -> float:
        """Seconds all the site checks of one node may take together (PoolOptions.site_timeout)."""
        return float(getattr(self.pool.opts, "site_timeout", 190.0))

    def over_budget(self, node: str) -> str | None:
        """Why ``node``'s remaining site checks are not run (its budget is spent), or None."""
        until = self.until.get(node)
        if until is None or time.monotonic() < until:
            return None
        return budget_spent(self.budget_s)

    def backend(self, node: str):
        sh = self.pool.hosts.get(node)
        return sh.backend if sh is not None else None


def site_state(config) -> SiteRun:
    st = config.stash.get(SITE_KEY, None)
    if st is None:
        raise SiteUnavailable("nodegate's site checks are not active in this run")
    return st
