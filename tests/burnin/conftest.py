"""Helpers: run a burn-in scenario on local:// with PATH-injected shims, then judge it."""

from __future__ import annotations

import threading

import pytest

from nodegate.bundle import Bundle
from nodegate.burnin import rules as R
from nodegate.burnin.runner import BurninJob, burnin_node
from nodegate.burnin.series import BurninData, burnin_data
from nodegate.burnin.spec import BurninSpec
from nodegate.errors import EvidenceError
from nodegate.run import GatherOptions

from .shims import Scenario, write_shims


def judge(b: Bundle, bspec: BurninSpec, link=(5, 16)) -> dict[str, str]:
    """{rule id: outcome} for every rule, as the plugin would evaluate them (ids as test ids)."""
    try:
        data = burnin_data(b)
    except EvidenceError as e:
        return {"error": str(e)}
    ctx = R.Context(bspec=bspec)
    for i in data.gpu_indices():
        ctx.expected_link[i] = (link[0], link[1], "test")
    R.attach_evidence(ctx, b, data)
    out = {}
    for name, rd in R.RULES.items():
        if name == "burnin_dcgm":
            for r in ctx.dcgm if isinstance(ctx.dcgm, list) else []:
                out[f"{name}[gpu{r.gpu}-{r.slug}]"] = R.rule_dcgm(r, ctx).outcome.value
            continue
        if rd.scope == "node":
            out[name] = rd.func(data, ctx, None).outcome.value
        else:
            for i in data.gpu_indices():
                out[f"{name}[gpu{i}]"] = rd.func(data, ctx, i).outcome.value
    return out


def run_scenario(tmp_path, monkeypatch, sc: Scenario, duration: int, **spec) -> tuple[Bundle, BurninData | None]:
    d = write_shims(tmp_path / "bin", sc)
    monkeypatch.setenv("PATH", f"{d}:/usr/bin:/bin:/usr/sbin:/sbin")
    bspec = BurninSpec(interval_s=1, grace_s=5, stop_grace_s=2, **spec)
    ev = burnin_node(BurninJob("n1", "local://", bspec), GatherOptions(), duration, threading.Event())
    b = Bundle("n1", ev, {"status": "ok"})
    b.write(tmp_path / "bundles")
    try:
        return b, burnin_data(b)
    except EvidenceError:
        return b, None


def soak_evidence(tmp, duration: int, sc: Scenario | None = None) -> dict:
    """The burn-in evidence (``burnin.*`` items) of one real local burn-in run with shims, for tests
    that graft it onto other bundles (module-scoped fixtures: no function monkeypatch there)."""
    mp = pytest.MonkeyPatch()
    try:
        b, _ = run_scenario(tmp, mp, sc or Scenario(), duration)
    finally:
        mp.undo()
    return {k: e for k, e in b.items.items() if k.startswith("burnin.")}


@pytest.fixture
def scenario(tmp_path, monkeypatch):
    def go(sc: Scenario, duration: int = 6, **spec):
        b, data = run_scenario(tmp_path, monkeypatch, sc, duration, **spec)
        return b, data, judge(b, BurninSpec(interval_s=1, grace_s=5, stop_grace_s=2, **spec))
    return go
