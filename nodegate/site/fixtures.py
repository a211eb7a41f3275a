"""The fixtures a site test uses in a nodegate run (registered by plugins/nodegate_site.py at
configure time, after testinfra's plugin, so this ``host`` is the one pytest gives).

- ``host``: testinfra's ``Host`` on the item's inventory node (``SiteBackend``): every module
  (``host.service``, ``host.file``, ``host.run``...) through the node's one site connection, or
  answered from its bundle on ``--replay``;
- ``site_evidence``: the node's declared evidence (``nodegate.site_evidence`` in the spec), read
  from the probe's one exec: ``site_evidence["ib_ports"].text()``;
- ``nodegate_node``: what nodegate knows of the node: ``name``, ``spec`` (nodegate.spec.Spec),
  ``vars`` (the spec's ``site_vars``), ``facts`` (nodegate.collect.NodeFacts), ``bundle_dir``.

All are session-scoped per node (``nodegate_site_node``, parametrized by the plugin with the
run's nodes: ids ``[<node>]``), like testinfra's module-scoped ``host``: fixtures of the site's
own with scope module or session may use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from .evidence import DeclaredEvidence
from .pool import SiteUnavailable
from .state import site_state


@dataclass(frozen=True)
class SiteNode:
    """``nodegate_node``: the inventory node a site test runs on."""

    name: str
    spec: object
    vars: dict
    facts: object
    bundle_dir: Path | None


@pytest.fixture(scope="session")
def nodegate_site_node(request):
    """The item's node: ``("site", <node>)`` (parametrized by nodegate.site.items.parametrize)."""
    return request.param


@pytest.fixture(scope="session")
def host(nodegate_site_node, request):
    """testinfra's Host on this inventory node, through nodegate's transport (docs/site-checks.md).
    A node that could not be gathered, or whose site connection fails, makes every test using
    it ERROR with the reason."""
    try:
        return site_state(request.config).host(nodegate_site_node[1])
    except SiteUnavailable as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def site_evidence(nodegate_site_node, request):
    """The node's declared evidence (spec ``site_evidence``), from the probe's one exec."""
    st = site_state(request.config)
    node = nodegate_site_node[1]
    return st.track(node, DeclaredEvidence(node, dict(st.spec_value(node, "site_evidence") or {}),
                                           st.bundle(node)))


@pytest.fixture(scope="session")
def nodegate_node(nodegate_site_node, request):
    """The node's name, spec, site_vars, facts and bundle directory."""
    st = site_state(request.config)
    node = nodegate_site_node[1]
    b = st.bundle(node)
    return SiteNode(node, st.run.spec.get(node), dict(st.spec_value(node, "site_vars") or {}),
                    st.run.facts.get(node), getattr(b, "path", None))
