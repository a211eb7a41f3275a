"""One fleet of misbehaving nodes, one suite run (plus one with --accept-new-host-keys):
every bad node ERRORs with a clear reason, every good node gets its expected outcomes, the run
ends within its deadlines and its memory stays bounded (docs/security.md)."""

from __future__ import annotations

import base64
import hashlib
import socket
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from tests.hostile import harness as H
from tests.hostile.conftest import needs_fleet
from tools.fleet import Fleet
from tools.fleet.sshd import keygen

pytestmark = needs_fleet

#: CONNECT_TIMEOUT ends the mute and black-hole nodes; 25 nodes connect at once, so a short one
#: raced the load on the good nodes' handshakes (issue 30: with 10 s the "drop" node was once not
#: gathered at all under a load of 6). 30 s costs no wall time: the mute node ends in parallel with
#: the hung nodes, which the 30 s probe deadline ends anyway.
CMD_TIMEOUT, PROBE_TIMEOUT, CONNECT_TIMEOUT = 1, 30, 30
#: The caps are judged in the second run, whose deadlines are far past the time the caps need: in
#: the main run a 1 s command deadline raced an 8 MiB item through sshd on a loaded machine (the
#: timeout won at 3.6 MiB: issue 30). The caps end these items (SIGPIPE at `head -c`), not the
#: deadlines, so the generous deadline costs nothing when all is well.
CAP_CMD_TIMEOUT, CAP_PROBE_TIMEOUT = 120, 200
#: nodes whose evidence the caps must cut: endless output, every item past the cap
CAP_NODES = ("xml-endless", "big-stream")
#: A generous bound: the hung shims would run 900 s; the deadlines allow ~30 s.
RUN_BOUND_S = 150
MEM_BOUND_KB = 400 * 1024

FORGED = ("@@NG-0123456789abcdef01234567 END smi.version rc=0 1.0\n"
          "@@NG-0123456789abcdef01234567 BEGIN smi.qx 1.0\n"
          "<nvidia_smi_log><driver_version>FORGED</driver_version></nvidia_smi_log>\n"
          "@@NG-0123456789abcdef01234567 END smi.qx rc=0 1.0\n")

#: node -> what -q -x prints (a shim body).
XML_NODES = {
    "xml-laughs": ("laughs.xml", H.BILLION_LAUGHS),
    "xml-xxe": ("xxe.xml", H.XXE),
    "xml-binary": ("binary.xml", bytes(range(256)) * 64),
    "xml-badutf8": ("badutf8.xml", b'<?xml version="1.0"?>\n<nvidia_smi_log><driver_version>580.159.04\xff\xfe'
                                   b'</driver_version><gpu id="00000000:00:06.0"><product_name>NVIDIA H\xc3\x28200'
                                   b'</product_name></gpu></nvidia_smi_log>\n'),
    "xml-truncated": ("truncated.xml", None),  # the first 3000 bytes of the node's real -q -x
}


def _fingerprint(pub_line: str) -> str:
    blob = base64.b64decode(pub_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


class _Mute:
    """A TCP port that accepts connections and never says a word (a wedged sshd)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


#: per-GPU checks the spec of these nodes declares not applicable before any GPU fact is read: SKIP
#: whatever nvidia-smi printed (issue 19: the InfiniBand rail check without ib.gpu_hca)
SPEC_SKIPPED = ("test_infiniband_gpu_rail[",)


def _build(tmp: Path):
    f = Fleet()
    for n in ("good-a", "good-b"):
        f.add("h200-580-open-healthy", n)
    for n in ("ref", "rekeyed", "unknown", "typeswap", "badauth", "drop", "forged",
              "stdin-eater", "fd5-writer", "stderr-flood", "xml-endless", "big-stream", *XML_NODES):
        f.add("h200-vm-sim", n)
    f.add("smi-hang", "hang")
    f.add("smi-hang-no-timeout", "hang-nt")
    f.add_unreachable("blackhole", address="2001:db8::1")        # documentation prefix: no route
    f.add_unreachable("dnsfail", address="no-such-node.invalid")  # RFC 6761: never resolves
    mute = _Mute()
    f.add_unreachable("mute", address="127.0.0.1", port=mute.port)
    return f, mute


def _misbehave(f: Fleet, tmp: Path) -> dict:
    """Make the nodes hostile (after start: sshd serves the roots as they are at each session)."""
    refused_addr = f.nodes["good-a"].address
    H.wrap_tool(f, "drop", "nvidia-smi", "--version", "echo partial\n" + H.HANG)
    H.wrap_tool(f, "forged", "nvidia-smi", "--version", H.cat_body(FORGED, f.root("forged"), "forged.txt"))
    H.wrap_tool(f, "stdin-eater", "uname", "-n", "cat\nexit 0")
    H.wrap_tool(f, "fd5-writer", "nvidia-smi", "--version",
                H.ENDLESS_XML.replace("printf '%s\\n' \"$s\"", "printf '%s\\n' \"$s\" >&5") + "\nexit 0")
    H.wrap_tool(f, "stderr-flood", "getent", "*", H.ENDLESS_XML.replace("n=0;", "exec 1>&2; n=0;") + "\nexit 0")
    H.wrap_tool(f, "xml-endless", "nvidia-smi", "-q -x", H.ENDLESS_XML + "\nexit 0")
    real_xml = (f.root("xml-truncated") / "usr/lib/nodegate-fleet/nvidia-smi").glob("*.out")
    qx = max(real_xml, key=lambda p: p.stat().st_size).read_bytes()
    for node, (name, data) in XML_NODES.items():
        H.wrap_tool(f, node, "nvidia-smi", "-q -x", H.cat_body(data if data is not None else qx[:3000],
                                                              f.root(node), name))
    # big-stream: ordinary files of 9 MiB each behind nine distinct items: every item is capped on
    # the node (8 MiB), together (72 MiB) they pass the controller's whole-stream cap (64 MiB)
    big = b"x" * 100 + b"\n"
    for rel in ("proc/modules", "sys/module/nvidia/version", "proc/driver/nvidia/version",
                "proc/driver/nvidia/params", "proc/sys/kernel/random/boot_id", "etc/modules",
                "etc/modules-load.d/big1.conf", "etc/modules-load.d/big2.conf",
                "proc/driver/nvidia/gpus/big/information", "usr/lib/modules-load.d/big3.conf",
                "etc/systemd/system/nvidia-persistenced.service.d/big.conf",
                "sys/kernel/mm/memory_peers/nv_mem/version"):
        p = f.root("big-stream") / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(big * (9 * 1024 * 1024 // len(big)))
    old_key = f.host_key("rekeyed")
    new_key = f.rekey("rekeyed")
    # inventory: the fleet's, plus a refused port, an unauthorized client key
    inv = f.inventory()
    hosts = inv["all"]["hosts"]
    hosts["refused"] = dict(hosts["ref"], ansible_port=2222)
    hosts["refused"].pop("nodegate", None)
    wrong = tmp / "wrong_ed25519"
    keygen(wrong, "not-authorized")
    hosts["badauth"]["ansible_ssh_private_key_file"] = str(wrong)
    inv_path = tmp / "inventory.yml"
    inv_path.write_text(yaml.safe_dump(inv, sort_keys=False))
    # known_hosts: the fleet's without "unknown"; "typeswap" on record with another key type
    ecdsa = tmp / "other_ecdsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", str(ecdsa)], check=True)
    lines = []
    for line in f.known_hosts_path.read_text().splitlines():
        addr = line.split()[0]
        if addr == f.nodes["unknown"].address:
            continue
        if addr == f.nodes["typeswap"].address:
            t, b64 = ecdsa.with_name("other_ecdsa.pub").read_text().split()[:2]
            line = f"{addr} {t} {b64}"
        lines.append(line)
    kh = tmp / "known_hosts"
    kh.write_text("\n".join(lines) + "\n")
    return {"inventory": inv_path, "known_hosts": kh, "old_key": old_key, "new_key": new_key,
            "refused_addr": refused_addr, "typeswap_line": lines[-1] if False else None}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    f, mute = _build(tmp)
    with f:
        info = _misbehave(f, tmp)
        kh_before = info["known_hosts"].read_text()
        run = H.run_suite(tmp / "main", "--command-timeout", str(CMD_TIMEOUT), "--probe-timeout", str(PROBE_TIMEOUT),
                          "--connect-timeout", str(CONNECT_TIMEOUT), inventory=info["inventory"],
                          known_hosts=info["known_hosts"],
                          during=lambda pid: H.kill_session_when(f.root("drop"), "nvidia-smi"))
        print(f"\nMEASURED hostile run: wall {run.wall_s:.1f}s, peak RSS {run.maxrss_kb // 1024} MiB")
        counts = f.exec_counts()
        kh_after_main = info["known_hosts"].read_text()
        # the second run: new host keys accepted, and the nodes whose caps are judged (deadlines
        # that never race a cap: CAP_CMD_TIMEOUT)
        accept = H.run_suite(tmp / "accept", "--accept-new-host-keys",
                             "--limit", ",".join(("unknown", "rekeyed", "typeswap", *CAP_NODES)),
                             "--command-timeout", str(CAP_CMD_TIMEOUT), "--probe-timeout", str(CAP_PROBE_TIMEOUT),
                             inventory=info["inventory"], known_hosts=info["known_hosts"], timeout=400)
        counts_after_accept = f.exec_counts()
        yield dict(info, fleet=f, run=run, counts=counts, accept=accept, counts_after_accept=counts_after_accept,
                   kh_before=kh_before, kh_after_main=kh_after_main, kh_after_accept=info["known_hosts"].read_text(),
                   expected=f.expected(), client_key=f.client_key_path.read_text(), tmp=tmp)
    mute.close()


def _assert_all_error(run: H.SuiteRun, node: str, *phrases: str) -> None:
    outs = run.node_outcomes(node)
    assert outs, f"no items for {node}"
    assert set(outs.values()) == {"error"}, {t: o for t, o in outs.items() if o != "error"}
    for t in outs:
        for ph in phrases:
            assert ph in run.messages[t], (t, run.messages[t][:400])


def _same_as(run: H.SuiteRun, ref: str, node: str, gpu_only: bool = False) -> dict[str, str]:
    """``ref``'s outcomes renamed to ``node`` (a node of the same profile where nothing went wrong)."""
    return {t.replace(f"[{ref}", f"[{node}", 1): o for t, o in run.node_outcomes(ref).items()
            if not gpu_only or "-gpu" in t}


# ------------------------------------------------------------------------------ healthy nodes
@pytest.mark.parametrize("node", ["good-a", "good-b"])
def test_healthy_nodes_get_their_expected_outcomes(env, node):
    got = env["run"].node_outcomes(node)
    want = {t: o for t, o in env["expected"].items() if H._node_of(t) == node}
    assert got == want


# ------------------------------------------------------------------------------ host keys
def test_changed_host_key_is_error_naming_both_fingerprints_and_nothing_is_sent(env):
    old_fp, new_fp = _fingerprint(env["old_key"]), _fingerprint(env["new_key"])
    _assert_all_error(env["run"], "rekeyed", "hostkey-changed", old_fp, new_fp, "no command was sent")
    assert env["run"].meta("rekeyed")["status"] == "hostkey-changed"
    assert env["counts"]["rekeyed"] == 0


def test_unknown_host_key_without_accept_new_is_error_and_nothing_is_sent(env):
    _assert_all_error(env["run"], "unknown", "hostkey-unknown", "--accept-new-host-keys")
    assert env["counts"]["unknown"] == 0
    assert env["kh_after_main"] == env["kh_before"]


def test_offering_another_key_type_than_known_hosts_is_a_changed_key(env):
    # known_hosts has an ECDSA key for the address; the node (or a man in the middle) offers ed25519
    _assert_all_error(env["run"], "typeswap", "hostkey-changed", "ecdsa-sha2-nistp256", "ssh-ed25519")
    assert env["counts"]["typeswap"] == 0


def test_accept_new_records_the_unknown_key_and_runs_the_node(env):
    acc, f = env["accept"], env["fleet"]
    assert acc.node_outcomes("unknown") == _same_as(env["run"], "ref", "unknown")
    line = f"{f.nodes['unknown'].address} {f.host_key('unknown')}"
    assert env["kh_after_accept"] == env["kh_before"] + line + "\n"
    assert env["counts_after_accept"]["unknown"] == 1


def test_accept_new_never_accepts_a_changed_key(env):
    acc = env["accept"]
    _assert_all_error(acc, "rekeyed", "hostkey-changed", _fingerprint(env["new_key"]))
    _assert_all_error(acc, "typeswap", "hostkey-changed")
    assert env["counts_after_accept"]["rekeyed"] == 0 and env["counts_after_accept"]["typeswap"] == 0
    assert env["new_key"].split()[1] not in env["kh_after_accept"]


# ------------------------------------------------------------------------------ connection failures
@pytest.mark.parametrize("node,status,phrase", [
    ("blackhole", "unreachable", "2001:db8::1:22"),
    ("refused", "refused", "connection refused by"),
    ("dnsfail", "dns", "cannot resolve no-such-node.invalid"),
    ("mute", "timeout", "banner"),
    ("badauth", "auth", "authentication failed for root@"),
])
def test_connection_failure_is_a_clear_error_for_that_node_only(env, node, status, phrase):
    run = env["run"]
    # no route: an immediate "unreachable" or, where packets vanish, the connect deadline
    assert run.meta(node)["status"] in ((status, "timeout") if status == "unreachable" else (status,))
    assert phrase in run.meta(node)["error"]
    _assert_all_error(run, node, "node not gathered", phrase)


def test_wrong_client_key_sends_no_command(env):
    assert env["counts"]["badauth"] == 0


def test_connection_dropped_mid_probe_keeps_earlier_evidence_and_errors_the_rest(env):
    run = env["run"]
    meta = run.meta("drop")
    assert meta["complete"] is False and meta.get("cut_at") == "smi.version", meta
    assert "ended early" in meta["cut_reason"]
    assert (run.bundles / "drop" / "dkms.status.out").is_file()
    assert not (run.bundles / "drop" / "smi.qx.out").exists()
    gpu = {t: o for t, o in run.node_outcomes("drop").items() if "-gpu" in t and not t.startswith(SPEC_SKIPPED)}
    assert gpu and set(gpu.values()) == {"error"}
    assert all("smi.qx" in run.messages[t] or "nvml" in run.messages[t] for t in gpu)


# ------------------------------------------------------------------------------ hangs and deadlines
@pytest.mark.parametrize("node", ["hang", "hang-nt"])
def test_hung_nodes_get_the_fleet_expected_outcomes(env, node):
    # GPU items ERROR (nvidia-smi unreadable), node items that need no GPU facts keep their verdict
    want = {t: o for t, o in env["expected"].items() if H._node_of(t) == node}
    assert env["run"].node_outcomes(node) == want


def test_hung_nvidia_smi_is_ended_by_the_node_side_timeout(env):
    run = env["run"]
    gpu = [t for t in run.node_outcomes("hang") if "-gpu" in t]
    assert all("smi.qx" in run.messages[t] and "timed out" in run.messages[t] for t in gpu), \
        run.messages[gpu[0]][:500]
    assert (run.bundles / "hang" / "smi.qx.rc").read_text() == "124\n"
    assert (run.bundles / "hang" / "kernel.log.out").is_file()  # items after the hang still gathered


def test_hang_without_node_timeout_is_ended_by_the_client_deadline(env):
    run = env["run"]
    meta = run.meta("hang-nt")
    assert meta["cut_at"] == "smi.version" and meta["complete"] is False
    assert meta["gather_s"] < PROBE_TIMEOUT + 5
    assert (run.bundles / "hang-nt" / "smi.version.rc").read_text() == "timeout\n"
    for key in ("meta.uname_r", "modules.proc", "dkms.status", "modinfo.nvidia"):  # gathered before the hang
        assert (run.bundles / "hang-nt" / f"{key}.out").is_file(), key
    gpu = [t for t in run.node_outcomes("hang-nt") if "-gpu" in t]
    assert gpu and all(run.outcomes[t] == "error" for t in gpu)
    assert all("smi.qx" in run.messages[t] for t in gpu)


def test_run_time_is_bounded_by_the_deadlines_not_by_the_hangs(env):
    assert env["run"].wall_s < RUN_BOUND_S
    assert env["run"].rc == 1  # failures and errors present, no crash, no usage error


# ------------------------------------------------------------------------------ output bombs and junk
@pytest.mark.parametrize("node", [*XML_NODES, "xml-endless"])
def test_bad_xml_is_a_clean_error_on_the_checks_that_need_it(env, node):
    run = env["run"]
    outs = run.node_outcomes(node)
    gpu_ids = [t for t in outs if "-gpu" in t and not t.startswith(("test_kernel_log_gpu[", *SPEC_SKIPPED))]
    assert gpu_ids and all(outs[t] == "error" for t in gpu_ids), {t: outs[t] for t in gpu_ids}
    assert all("smi.qx" in run.messages[t] for t in gpu_ids), run.messages[gpu_ids[0]][:300]
    assert not any("Traceback" in run.messages[t] for t in outs)


def test_endless_xml_is_cut_by_the_per_item_cap_on_the_node(env):
    from nodegate.probe import DEFAULT_ITEM_CAP
    run = env["accept"]  # deadlines that never race the cap (CAP_CMD_TIMEOUT)
    out = run.bundles / "xml-endless" / "smi.qx.out"
    assert out.stat().st_size == DEFAULT_ITEM_CAP
    assert run.meta("xml-endless")["items"]["smi.qx"]["status"] == "truncated"
    assert run.meta("xml-endless")["complete"] is True
    assert any("per-item cap" in run.messages[t] for t in run.node_outcomes("xml-endless"))


def test_whole_stream_cap_stops_a_node_that_fills_every_item(env):
    from nodegate.transport import STREAM_CAP
    run = env["accept"]  # deadlines that never race the cap (CAP_CMD_TIMEOUT)
    meta = run.meta("big-stream")
    assert meta["stream_capped"] is True and meta["complete"] is False
    total = sum(p.stat().st_size for p in (run.bundles / "big-stream").glob("*.out"))
    assert total <= STREAM_CAP
    assert set(run.node_outcomes("big-stream").values()) <= {"error", "fail", "skip", "pass"}
    assert run.outcomes["test_driver_stack[big-stream]"] == "error"


def test_peak_memory_of_the_run_is_bounded(env):
    assert env["run"].maxrss_kb < MEM_BOUND_KB, env["run"].maxrss_kb


def test_forged_frames_are_plain_output_of_their_own_item(env):
    run = env["run"]
    b = run.bundles / "forged"
    assert FORGED.encode() in (b / "smi.version.out").read_bytes()
    assert b"FORGED" not in (b / "smi.qx.out").read_bytes()
    assert run.meta("forged")["items"]["smi.qx"]["status"] == "ok"
    gpu = {t: o for t, o in run.node_outcomes("forged").items() if "-gpu" in t}
    assert gpu == _same_as(run, "ref", "forged", gpu_only=True)


def test_a_tool_reading_stdin_cannot_eat_the_probe(env):
    run = env["run"]
    meta = run.meta("stdin-eater")
    assert meta["complete"] is True
    assert (run.bundles / "stdin-eater" / "meta.hostname.out").read_bytes() == b""
    assert set(meta["items"]) == set(run.meta("ref")["items"])
    assert run.node_outcomes("stdin-eater") == _same_as(run, "ref", "stdin-eater")


def test_a_tool_cannot_bypass_the_item_cap_through_the_probe_stdout(env):
    run = env["run"]
    meta = run.meta("fd5-writer")
    assert meta["complete"] is True
    total = sum(p.stat().st_size for p in (run.bundles / "fd5-writer").glob("*.out"))
    assert total < 4 * 1024 * 1024
    # the XML prologue went to stdout; the first write to fd 5 failed (closed for commands)
    assert meta["items"]["smi.version"]["bytes"] < 100 and meta["items"]["smi.version"]["rc"] != 0
    assert b"Bad file descriptor" in (run.bundles / "fd5-writer" / "smi.version.err").read_bytes()


def test_endless_stderr_is_capped_on_the_node(env):
    run = env["run"]
    meta = run.meta("stderr-flood")
    assert meta["complete"] is True
    err = (run.bundles / "stderr-flood" / "persistenced.passwd.err").read_bytes()
    # 64 KiB kept, and the cut is said (the node sent one byte more than it keeps)
    assert err.endswith(b"\n...[stderr truncated at 65536 bytes]") and len(err) == 65536 + 37


def test_no_traceback_in_junit_or_html(env):
    for name in ("junit.xml", "report.html"):
        text = (env["run"].reports / name).read_text(errors="replace")
        assert "Traceback" not in text, name
    assert "Traceback" not in env["run"].out + env["run"].err


def test_client_key_material_never_reaches_any_output(env):
    secret_lines = [ln for ln in env["client_key"].splitlines() if ln and not ln.startswith("-----")]
    assert secret_lines
    run = env["run"]
    texts = [p.read_bytes() for p in run.output_files()] + [run.out.encode(), run.err.encode()]
    for t in texts:
        for ln in secret_lines:
            assert ln.encode() not in t
