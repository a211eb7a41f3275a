"""pytest plugin: nodegate's options and hook wiring; the work is in nodegate.session.

Flow: pytest_configure validates the inventory and every node's spec (nothing contacted; a bad
spec exits 2 naming file, key and reason) -> pytest_sessionstart gathers all nodes in parallel
(or loads bundles with --replay; xdist workers load the controller's bundles) ->
pytest_generate_tests parametrizes each suite test by node (a GPU check's GPUs folded into its
item, or one item per GPU: nodegate.session.granularity) -> pytest_runtest_setup
evaluates the check (ERROR fails the setup, SKIP skips) and the test asserts PASS.
"""

from __future__ import annotations

import os

import pytest

from nodegate import cmdline
from nodegate.errors import SpecError, UsageError, error_label
from nodegate.reports.records import attach_nodegate
from nodegate.run import RUN_KEY
from nodegate.session import (currenttest, exitcodes, fastlane, markers, memory, outputs, scheduling, selection,
                              shards, start, terminal)
from nodegate.session import items as ng_items
from nodegate.session import jobs
from nodegate.session.state import (ACTIVE_KEY, CONFIG, ITEM_NODE_KEY, JOBS_KEY, PRESENT_KEY,
                                    REPORT_PATHS_KEY, RESULT_KEY)

# re-exported for callers of the plugin module (tests, other plugins)
VerdictParam = ng_items.VerdictParam
node_of_test_id = scheduling.node_of_test_id
_JOBS_KEY = JOBS_KEY


def pytest_addhooks(pluginmanager):
    from nodegate.session import api
    pluginmanager.add_hookspecs(api)


def pytest_addoption(parser):
    if os.environ.get("NODEGATE_CLI"):   # nodegate/cli.py: usage lines name the command run
        parser.prog = "nodegate"
    g = parser.getgroup("nodegate", "nodegate GPU node acceptance")
    g.addoption("--inventory", action="append", default=None, metavar="SOURCE",
                help="Ansible inventory: YAML or INI file, directory, or h1,h2, (read by ansible-core, with "
                     "group_vars/ and host_vars/); repeat for several, merged as `ansible -i A -i B` "
                     "(the nodegate command also takes -i)")
    g.addoption("--limit", help="limit to hosts/groups (an Ansible --limit pattern, @file included)")
    g.addoption("--list-hosts", nargs="?", const="text", choices=("text", "json"), default=None,
                help="print the hosts this command line would contact (after --limit and -k/-m/--deselect/--lf; "
                     "address, port, user, key file, connection, password set or not) and exit; every spec is "
                     "validated as the run does; contacts nobody (--list-hosts=json: a JSON list)")
    # the `nodegate` command (nodegate/cli.py): no inventory, --replay or --target is
    # --target local://, so the run is a nodegate run whatever the working directory holds
    cli = bool(os.environ.get("NODEGATE_CLI"))
    g.addoption("--target", default="local://" if cli else None,
                help="single target URL when no inventory (default local://)")
    g.addoption("--replay", action=cmdline.ReplayAction, metavar="PATH",
                help="evaluate saved evidence, no network: bundle directories under PATH, or nvidia-bug-report "
                     "logs (FILE.log, FILE.log.gz, or a folder of them); repeat for several")
    g.addoption("--save-bundles", metavar="DIR",
                help="with --replay of nvidia-bug-report logs: write each converted bundle to DIR/<node>/")
    g.addoption("--spec", metavar="FILE",
                help="judge every node by this spec (YAML: the nodegate: variable's keys, or a vars file with "
                     "nodegate:), instead of the inventory's or a replayed bundle's own (docs/security.md)")
    g.addoption("--bundles-dir", help="where raw evidence is written (default <reports-dir>/bundles)")
    g.addoption("--reports-dir", default="reports", help="output directory (default reports/)")
    g.addoption("--known-hosts", action="append", default=None,
                help="known_hosts file(s) for host-key verification (default ~/.ssh/known_hosts)")
    g.addoption("--accept-new-host-keys", action="store_true",
                help="accept unknown host keys and record them in the first --known-hosts file "
                     "(a CHANGED key is always refused)")
    g.addoption("--connect-timeout", type=float, default=10.0,
                help="per node: name resolution, TCP, banner, key exchange and auth together, then each of "
                     "channel open and exec request, seconds (docs/security.md, Deadlines)")
    g.addoption("--command-timeout", type=float, default=30.0, help="per probe command deadline, seconds")
    g.addoption("--probe-timeout", type=float, default=180.0,
                help="whole-probe deadline per node from the exec, seconds; a node is never held longer than "
                     "--connect-timeout + --probe-timeout")
    g.addoption("--site-timeout", type=float, default=None, metavar="S",
                help="per node: all its site checks (docs/site-checks.md) together, seconds from its first "
                     "site check (default --connect-timeout + --probe-timeout); past it the node's remaining "
                     "site checks are ERROR")
    g.addoption("--forks", type=int, default=32, help="nodes gathered in parallel (default 32)")
    g.addoption("--gather-first", action="store_true",
                help="gather every selected node before the first item runs instead of running the tests "
                     "while the nodes are gathered")
    g.addoption("--gpu-source", choices=("auto", "nvml", "smi"), default="auto",
                help="GPU facts from NVML (when python3+pynvml exist on the node) or nvidia-smi XML")
    g.addoption("--per-gpu-items", action="store_true",
                help="one item per GPU check and GPU, test_x[<node>-gpu<i>], instead of one per check and node "
                     "carrying its GPUs (the reports are the same either way; a -k, --deselect, test path or --lf "
                     "that names a GPU gets per-GPU items without it)")
    g.addoption("--shard-nodes", type=int, default=shards.DEFAULT_SHARD_NODES, metavar="N",
                help="bounded memory: above N nodes, collect and run the items of N nodes at a time "
                     f"(default {shards.DEFAULT_SHARD_NODES}; 0: never)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):  # noqa: ARG001
    jobs.installed_suites_early(early_config)
    jobs.anchor_conftests(early_config)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    # the nodegate command: `suites/...` test paths (pytest's, never an option's value) name the
    # installed suites, before anything reads config.args (xdist workers parse and do it alike)
    jobs.installed_suites_args(config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "nodegate: a nodegate suite test")
    markers.register(config)
    # pytest-xdist registers it too; declared here so runs without xdist print no warning
    config.addinivalue_line("markers", "xdist_group(name): keep a node's items on one xdist worker")
    active = jobs.is_nodegate_run(config)
    config.stash[ACTIVE_KEY] = active
    CONFIG[0] = config if active else None
    if not active:
        return
    o = config.option
    exitcodes.install(config)            # README's exit-code table, for pytest and nodegate alike
    exitcodes.check_expressions(config)  # a bad -k/-m: exit 2 before anything is gathered or written
    try:
        cmdline.check_values(o)          # a deadline of 0 or less, --shard-nodes -1 ...: exit 2 likewise
    except UsageError as e:
        exitcodes.usage_error(config, f"nodegate: {e}")
    if o.list_hosts:
        jobs.needs_inventory(config)   # --list-hosts: exit 2 without --inventory
    jobs.collect_the_suites(config)
    # a check item's PYTEST_CURRENT_TEST names its test function (glibc keeps every value set)
    currenttest.install(config, lambda item: ng_items.verdict_param(item) is not None)
    config.stash[REPORT_PATHS_KEY] = cmdline.report_paths(o)   # nodegate writes the JUnit and HTML
    if hasattr(config, "workerinput"):
        return
    try:
        config.stash[JOBS_KEY] = jobs.run_jobs(config)
    except SpecError as e:
        exitcodes.usage_error(config, f"nodegate: {error_label(e)}: {e}")
    if getattr(o, "numprocesses", None):   # -n N: what can pay (before xdist's configure)
        scheduling.cap_workers(config, lambda: scheduling.fleet_size(config, config.stash[JOBS_KEY]))
    if o.list_hosts and (o.replay or not cmdline.narrows_nodes(o)):
        # every spec validated as the run does; without -k/-m/--deselect/--lf every host is
        # contacted; else start.start_session lists the nodes the selection keeps
        jobs.list_hosts(config)   # exits
    # --collect-only and --list-hosts write nothing, --help/--markers/--version run no session: no
    # output location to check (and none created: `nodegate --markers` leaves the working
    # directory as it was)
    if not (config.option.collectonly or o.list_hosts or jobs.shows_only(config)):
        try:   # exit 2 before any node is contacted
            cmdline.check_live_options(o)
            cmdline.check_outputs(o, config.stash[REPORT_PATHS_KEY])
        except UsageError as e:
            exitcodes.usage_error(config, f"nodegate: {e}")
    outputs.install(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist controller -> worker (hook exists only with pytest-xdist)
    scheduling.configure_worker(node)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    if session.config.stash.get(ACTIVE_KEY, False):
        capped = session.config.stash.get(scheduling.CAPPED_KEY, None)
        tw = terminal.terminal_writer(session.config) if capped else None
        if tw is not None:
            tw.line(capped, yellow=True)
        terminal.say_limit_warnings(session.config)   # --limit parts matching nothing (pytest_configure)
        start.start_session(session)   # plans the shards of a large run too (nodegate.session.shards)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    return shards.runtestloop(session)


def pytest_generate_tests(metafunc):
    ng_items.parametrize(metafunc)


def pytest_itemcollected(item):
    markers.mark_item(item)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    return scheduling.make_scheduler(config, log)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook, which reads xdist_group (pytest < 9)
def pytest_collection_modifyitems(config, items):
    ng_items.order_items(config, items)


def pytest_collection_finish(session):
    config = session.config
    selection.after_collection(session)   # the selection of this collection (a shard's, in a sharded run)
    fastlane.after_collection(session)    # its items in the fast lane, or all on pytest's protocol
    start.gather_pending(session)          # only now: gathering of the selected nodes starts
    memory.freeze_long_lived(config, items=True)
    memory.young_gc_only(config)
    if config.stash.get(ACTIVE_KEY, False) and not hasattr(config, "workerinput"):
        terminal.group_by_node(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid, location):  # noqa: ARG001
    """An item whose node is still being gathered waits here, before pytest writes anything for
    it (its line prefix included), so the progress line stands on a line of its own."""
    config = CONFIG[0]
    if config is None:
        return
    run = config.stash.get(RUN_KEY, None)
    node = config.stash.get(ITEM_NODE_KEY, {}).get(nodeid) if run is not None else None
    # a released node (its items ran) is already gathered: its node_identity item reads only its
    # ids (verdicts.evaluate -> FleetRun.bundle_for(light=True)); reading the whole bundle here
    # parsed its nvidia-smi XML a second time, ~1/8 of a replay's CPU (docs/performance.md)
    if node is not None and node not in run.bundles and not run.released(node):
        run.wait(node, terminal.wait_ticker(config, run))


def pytest_runtest_logreport(report):
    selection.record(report)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location):  # noqa: ARG001
    memory.after_item()   # the node released after its last item; a young GC once its budget is spent


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if CONFIG[0] is config:
        CONFIG[0] = None
    exitcodes.stop_gathering(config)   # a run that never reached its session finish leaves nothing running
    exitcodes.uninstall_signals(config)
    memory.freeze_long_lived(config)   # the reports and records of every test: skip them at exit too
    memory.resume(config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A check item: nodegate.session.fastlane (pytest's own protocol for every other item)."""
    if fastlane.applies(item):
        return fastlane.run_item(item, nextitem)
    return None


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):   # pytest's protocol (the fast lane calls the same function)
    fastlane.setup_item(item)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    fastlane.teardown_item(item, nextitem)


@pytest.hookimpl(wrapper=True)   # pluggy's current wrapper form (no difference measured: docs/performance.md)
def pytest_runtest_makereport(item, call):
    """nodegate's one makereport wrapper: a check item's record on each phase report, or what a
    phase's item's presenter (``PRESENT_KEY``: burn-in, perf, cross-node, site) adds."""
    rep = yield
    present = item.stash.get(PRESENT_KEY, None)
    if present is not None:
        return present(item, rep, call)
    info = item.stash.get(RESULT_KEY, None)
    if info is not None:
        attach_nodegate(rep, info)
    return rep


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Every node gathered and merged (inventory order) before any report is written, even when
    no item needed some node (deselected with -k) or the run was interrupted."""
    exitcodes.finish_session(session, exitstatus)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    terminal.gathered_summary(terminalreporter, config)
