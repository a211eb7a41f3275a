"""Live runs over SSH (issue 17, items 4, 5, 9): two inventory names for one address, two
machines cloned from one image (one machine id), a node whose kernel log holds an Xid 48 before
6000 Xid 13 lines, and the same on a node without awk. Once while the tests run alongside the
gathering (the default), once with --gather-first and --spec: the same verdicts where the run
can know them, and the node_identity item always."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from tests.hostile import harness as H
from tests.hostile.conftest import needs_fleet
from tools.fleet import Fleet

pytestmark = needs_fleet




def _long_log(bus: str) -> str:
    """An Xid 48 (double-bit ECC) at boot, then 6000 Xid 13 and 3000 other driver lines: the
    probe's old ``tail -n 5000`` dropped the Xid 48."""
    short = bus[:-2]   # 0000:19:00.0 -> 0000:19:00
    lines = [f"[  120.000000] NVRM: Xid (PCI:{short}): 48, pid=1, name=python, An uncorrectable double bit error"]
    lines += [f"[  {200 + i}.000000] NVRM: Xid (PCI:{short}): 13, pid=1, name=python, Graphics Exception"
              for i in range(6000)]
    lines += [f"[ 9000.{i:06d}] nvidia-modeset: routine message {i}" for i in range(3000)]
    return "".join(x + "\n" for x in lines)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("identity")
    prof = H.healthy_1gpu()
    bus = prof.spec["gpu"]["bus_ids"][0]
    f = Fleet()
    for n in ("alpha", "beta", "clone", "xid", "noawk"):
        f.add(prof, n)
    with f:
        # clone: another machine (own boot id) from beta's image (beta's machine id)
        (f.root("clone") / "etc/machine-id").write_bytes((f.root("beta") / "etc/machine-id").read_bytes())
        for n in ("xid", "noawk"):
            dmesg = H.tool_path(f, n, "dmesg")
            inner = "/" + str(dmesg.with_name(dmesg.name + ".orig").relative_to(f.root(n)))
            body = H.cat_body(_long_log(bus), f.root(n), "long-klog.txt").replace("exit 0", "")
            H.wrap_tool(f, n, "dmesg", "*", f'{inner} "$@"\n{body}\nexit 0')
        os.unlink(f.root("noawk") / "usr/bin/awk")
        inv = f.inventory()
        inv["all"]["hosts"]["alpha-again"] = dict(inv["all"]["hosts"]["alpha"])   # one address, two names
        inv_path = tmp / "inventory.yml"
        inv_path.write_text(yaml.safe_dump(inv, sort_keys=False))
        spec = tmp / "site-spec.yml"
        spec.write_text(yaml.safe_dump({"nodegate": prof.spec}))
        common = ("--command-timeout", "10", "--probe-timeout", "60")
        overlap = H.run_suite(tmp / "overlap", *common, inventory=inv_path, known_hosts=f.known_hosts_path)
        first = H.run_suite(tmp / "first", *common, "--gather-first", "--spec", str(spec), inventory=inv_path,
                            known_hosts=f.known_hosts_path)
        yield {"overlap": overlap, "first": first, "expected": f.expected(), "spec": spec, "bus": bus}


def _expected(env, node: str) -> dict[str, str]:
    return {t: o for t, o in env["expected"].items() if H._node_of(t) == node}


@pytest.mark.parametrize("mode", ["overlap", "first"])
def test_two_names_for_one_address_error_on_every_item_naming_each_other(env, mode):
    run = env[mode]
    for me, other in (("alpha", "alpha-again"), ("alpha-again", "alpha")):
        outs = run.node_outcomes(me)
        assert outs and set(outs.values()) == {"error"}, (mode, me, outs)
        assert f"node {other} reports the same boot id" in run.messages[f"test_gpu_count[{me}]"]
        assert f"node {other} reports the same boot id" in run.messages[f"test_node_identity[{me}]"]


def test_one_machine_id_on_two_machines_errors_node_identity_in_every_mode(env):
    for mode in ("overlap", "first"):
        run = env[mode]
        for me, other in (("beta", "clone"), ("clone", "beta")):
            assert run.outcomes[f"test_node_identity[{me}]"] == "error", mode
            assert f"node {other} reports the same machine id" in run.messages[f"test_node_identity[{me}]"]
            assert "cloned from one image" in run.messages[f"test_node_identity[{me}]"]


def test_while_gathering_other_clashes_leave_the_other_items_judged_and_gather_first_errors_them(env):
    # overlap: beta/clone are at different addresses: only NG-INV-003 knows (deterministically)
    want = {t: o for t, o in _expected(env, "beta").items() if not t.startswith("test_node_identity")}
    got = {t: o for t, o in env["overlap"].node_outcomes("beta").items() if not t.startswith("test_node_identity")}
    assert got == want
    # every node gathered before the items run: all of beta's items ERROR
    assert set(env["first"].node_outcomes("beta").values()) == {"error"}


@pytest.mark.parametrize("mode", ["overlap", "first"])
def test_an_xid_48_before_6000_xid_13_lines_fails_the_gpu(env, mode):
    run = env[mode]
    t = "test_kernel_log_gpu[xid-gpu0]"
    assert run.outcomes[t] == "fail"
    assert "Xid 48" in run.messages[t] and "kept 6001 of 9000 lines" not in run.messages[t]
    meta = run.meta("xid")
    assert meta["items"]["kernel.log"]["rc"] == 0
    last = (run.bundles / "xid" / "kernel.log.out").read_text().splitlines()[-1]
    assert last.startswith("# lines: seen=") and last.endswith(" dropped_severe=0")
    others = {k: o for k, o in run.node_outcomes("xid").items() if k != t and not k.startswith("test_node_identity")}
    want = {k: o for k, o in _expected(env, "xid").items() if k != t and not k.startswith("test_node_identity")}
    assert others == want


@pytest.mark.parametrize("mode", ["overlap", "first"])
def test_a_node_without_awk_keeps_the_last_lines_and_its_kernel_log_checks_error(env, mode):
    run = env[mode]
    for t in ("test_kernel_log_node[noawk]", "test_kernel_log_gpu[noawk-gpu0]"):
        assert run.outcomes[t] == "error"
        assert "may have been cut away" in run.messages[t]
    last = (run.bundles / "noawk" / "kernel.log.out").read_text().splitlines()[-1]
    assert last.endswith(" kept=5000 dropped_severe=unknown")


def test_spec_file_is_recorded_in_each_bundle_and_shown(env):
    run = env["first"]
    meta = run.meta("xid")
    # as meta.json keeps it: JSON object keys are strings (ib.gpu_hca {0: ...} -> {"0": ...})
    assert meta["spec"] == json.loads(json.dumps(yaml.safe_load(env["spec"].read_text())["nodegate"]))
    assert f"spec: --spec {env['spec']}: 6 node(s)" in run.out.split("nodegate summary", 1)[1]
    # every item's spec source, in results.jsonl (the JUnit carries it on FAIL/ERROR items and nodes)
    props = {json.loads(ln)["spec_source"] for ln in (run.reports / "results.jsonl").read_text().splitlines()}
    assert props == {f"--spec {env['spec']}"}
    ov = env["overlap"]
    assert f"spec: inventory {ov.reports.parent / 'inventory.yml'}: 6 node(s)" in ov.out.split("nodegate summary", 1)[1]
    assert json.loads((ov.bundles / "xid" / "meta.json").read_text())["probe_version"] == "4"
