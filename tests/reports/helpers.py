"""Synthetic reports and records for the unit tests."""

from types import SimpleNamespace

from nodegate.reports.records import Record, _fill


def ng(node="n1", gpu="", check_id="NG-X-001", outcome="fail", **kw) -> dict:
    """A ``report.nodegate`` dict as the suite plugin builds it (docs/contributing.md contract)."""
    d = {"node": node, "gpu_index": gpu, "pci_bus_id": f"0000:{18 + int(gpu):02x}:00.0" if gpu else "",
         "gpu_serial": f"SER{gpu}" if gpu else "", "gpu_uuid": f"GPU-{gpu}" if gpu else "",
         "board_part_number": "692-2G520-0200-000" if gpu else "",
         "vbios_version": "96.00.99.00.01" if gpu else "", "driver_version": "580.159.04",
         "check_id": check_id, "check_name": check_id.lower(), "title": "A check", "severity": "major",
         "expected": "good", "observed": "bad", "message": "it is bad",
         "evidence": "decisive line 1\ndecisive line 2", "remediation": "Fix the configuration.",
         "outcome": outcome, "bundle_dir": ""}
    d.update(kw)
    return d


def report(nodeid="suites/test_x.py::test_x[n1]", when="call", outcome="passed", nodegate=None,
           user_properties=()):
    r = SimpleNamespace(nodeid=nodeid, when=when, outcome=outcome, user_properties=list(user_properties))
    r.failed = outcome == "failed"
    if nodegate is not None:
        r.nodegate = nodegate
    return r


def rec(**kw) -> Record:
    r = Record(nodeid=f"t[{kw.get('node', 'n1')}]")
    _fill(r, ng(**kw))
    return r
