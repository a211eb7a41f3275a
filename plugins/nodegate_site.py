"""pytest plugin: the site's own testinfra tests on every inventory node (docs/site-checks.md).

Registered next to plugins/nodegate_plugin.py (pyproject pytest11 entry points, root conftest).
Passive unless the run is a nodegate run (nodegate.session.jobs.is_nodegate_run): a plain
testinfra run keeps testinfra's own ``host``.

Flow: pytest_configure refuses testinfra's connection options (exit 2 naming what to use),
registers the site fixtures (nodegate.site.fixtures: ``host``, ``site_evidence``,
``nodegate_node``) after testinfra's plugin so they are the ones pytest gives ->
site modules get ids named by their path as given (nodegate.site.nodeids) and, for molecule's files,
MOLECULE_INVENTORY_FILE (nodegate.site.hosts) ->
pytest_sessionstart (after the suite plugin built the FleetRun) makes the run's SitePool: live
connections through nodegate's transport, or the bundles' recordings on ``--replay`` ->
pytest_generate_tests parametrizes each site test by node (those its module's testinfra_hosts names) ->
pytest_runtest_setup runs the test
in setup and classifies it (nodegate.site.items) -> makereport attaches ``report.nodegate`` ->
after a node's last site test its connection closes and its recording goes into its bundle.
"""

from __future__ import annotations

import pytest

from nodegate.run import RUN_KEY
from nodegate.session.exitcodes import usage_error
from nodegate.session.scheduling import suites_only
from nodegate.session.state import ACTIVE_KEY, JOBS_KEY
from nodegate.site import items as site_items
from nodegate.site.state import SITE_KEY, SiteRun

_FIXTURES_NAME = "nodegate-site-fixtures"
#: testinfra's options that pick hosts or a connection: never silently ignored in a nodegate run
_REFUSED = (("hosts", "--hosts"), ("connection", "--connection"), ("ansible_inventory", "--ansible-inventory"),
            ("ssh_config", "--ssh-config"), ("ssh_identity_file", "--ssh-identity-file"),
            ("ssh_extra_args", "--ssh-extra-args"), ("force_ansible", "--force-ansible"),
            ("sudo_user", "--sudo-user"), ("nagios", "--nagios"))
_USE = ("site tests run on every node of --inventory FILE (an Ansible YAML inventory; --limit PATTERN "
        "selects hosts or groups), or on --target URL; connection settings are the inventory's ansible_host, "
        "ansible_port, ansible_user, ansible_ssh_private_key_file, ansible_connection; --sudo runs every "
        "command through sudo -n")


def refused_options(config) -> list[str]:
    o = config.option
    return [flag for dest, flag in _REFUSED if getattr(o, dest, None)]


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "nodegate_check(id, severity, remediation, title, timeout): a site "
                                       "test's check id, severity (critical|major|minor), remediation, title and "
                                       "command deadline in seconds (docs/site-checks.md)")
    if not config.stash.get(ACTIVE_KEY, False):
        return
    bad = refused_options(config)
    if "--nagios" in bad:
        # testinfra's Nagios mode replaces the summary and maps the exit status to Nagios' (2: CRITICAL
        # for any FAIL): README's table (2: usage error, no report written) would lie
        usage_error(config, "nodegate: --nagios is testinfra's Nagios output; a nodegate run's exit codes and summary "
                            "are its own (README \"Exit codes\": 0 accepted, 1 findings ...); a Nagios check can map them "
                            "or read <reports-dir>/results.jsonl")
    if bad:
        usage_error(config, f"nodegate: {', '.join(bad)} {'is' if len(bad) == 1 else 'are'} testinfra's; in a "
                            f"nodegate run {_USE}")
    from nodegate.site import fixtures
    if not config.pluginmanager.is_registered(fixtures):
        config.pluginmanager.register(fixtures, _FIXTURES_NAME)
    from nodegate.site import nodeids
    nodeids.install_terminal(config)
    if not getattr(config.option, "replay", None) and config.stash.get(JOBS_KEY, None) is not None \
            and not suites_only(config):
        # molecule's test files read MOLECULE_INVENTORY_FILE at import (preselect's collection too);
        # a run of nodegate's suites alone has none (the inventory file of 4,096 hosts is not written)
        from nodegate.site.hosts import molecule_env
        molecule_env(config, None)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    config = parent.config
    if config.stash.get(ACTIVE_KEY, False):
        from nodegate.site import nodeids
        return nodeids.make_module(config, module_path, parent)
    return None


def pytest_unconfigure(config):
    p = config.pluginmanager.get_plugin(_FIXTURES_NAME)
    if p is not None:
        config.pluginmanager.unregister(p)


@pytest.hookimpl(trylast=True)   # after the suite plugin's sessionstart built the FleetRun
def pytest_sessionstart(session):
    config = session.config
    run = config.stash.get(RUN_KEY, None)
    if run is None or not config.stash.get(ACTIVE_KEY, False):
        return
    from nodegate.site.session import make_pool
    config.stash[SITE_KEY] = SiteRun(run, make_pool(config, run, config.stash.get(JOBS_KEY, None)))
    if getattr(config.option, "replay", None) and not suites_only(config):
        from nodegate.site.hosts import molecule_env
        molecule_env(config, run)


def pytest_generate_tests(metafunc):
    if metafunc.config.stash.get(ACTIVE_KEY, False):
        site_items.parametrize(metafunc)


@pytest.hookimpl(trylast=True)   # after nodegate's node-by-node order and the baseline plugin
def pytest_collection_modifyitems(config, items):
    site_items.order(config, items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    st = item.config.stash.get(SITE_KEY, None)
    if st is not None and site_items.site_node(item) is not None:
        site_items.begin(item, st)
    elif st is not None and getattr(item, "originalname", "") == "test_regression_site":
        from nodegate.site.session import before_regression_item
        before_regression_item(item, st)


@pytest.hookimpl(trylast=True, specname="pytest_runtest_setup")
def pytest_runtest_setup_site_body(item):  # pytest_runtest_setup, last (specname)
    st = item.config.stash.get(SITE_KEY, None)
    if st is not None and site_items.site_node(item) is not None:
        site_items.run_in_setup(item, st)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return site_items.pyfunc_call(pyfuncitem)




@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):  # noqa: ARG001
    st = item.config.stash.get(SITE_KEY, None)
    node = site_items.site_node(item) if st is not None else None
    if node is not None and st.last.get(node) == item.nodeid:
        from nodegate.site.session import release_node
        release_node(item.config, st, node)


@pytest.hookimpl(tryfirst=True)   # before the reports plugin archives the bundles
def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001
    st = session.config.stash.get(SITE_KEY, None)
    if st is not None:
        from nodegate.site.session import finish
        finish(session.config, st)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    st = config.stash.get(SITE_KEY, None)
    if st is not None and st.problems:
        for p in st.problems[:20]:
            terminalreporter.write_line(f"nodegate: {p}", yellow=True)
