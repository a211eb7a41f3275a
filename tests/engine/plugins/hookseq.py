"""Records, in order, every public runtest hook call a check item makes and what each report
carries (tests/engine/test_fastlane.py): written as JSON lines to $HOOKSEQ_OUT at session end.
It implements no phase hook (pytest_runtest_setup/_call/_teardown), so it leaves the fast lane on."""

from __future__ import annotations

import json
import os

import pytest

SEQ: list = []
REPORT_KEYS = ("nodeid", "when", "outcome", "location", "keywords", "user_properties", "sections",
               "longreprtext", "caplog", "capstdout", "capstderr", "head_line", "skipped", "failed", "passed")


def _report(rep) -> dict:
    d = {k: getattr(rep, k, None) for k in REPORT_KEYS}
    d["keywords"] = sorted(d["keywords"]) if d["keywords"] is not None else None
    d["nodegate"] = getattr(rep, "nodegate", None)
    d["duration_is_float"] = isinstance(rep.duration, float)
    d["wasxfail"] = hasattr(rep, "wasxfail")
    d["extra_attrs"] = sorted(k for k in vars(rep) if k not in ("duration", "start", "stop"))
    return d


def pytest_runtest_logstart(nodeid, location):
    SEQ.append(["logstart", nodeid, list(location)])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    SEQ.append(["makereport", item.nodeid, call.when, os.environ.get("PYTEST_CURRENT_TEST"),
                type(call.excinfo.value).__name__ if call.excinfo else None])
    return (yield)


def pytest_runtest_logreport(report):
    SEQ.append(["logreport", _report(report)])


def pytest_exception_interact(node, call, report):
    SEQ.append(["exception_interact", node.nodeid, call.when, report.outcome])


def pytest_runtest_logfinish(nodeid, location):
    SEQ.append(["logfinish", nodeid, list(location), os.environ.get("PYTEST_CURRENT_TEST")])


def pytest_sessionfinish(session):
    from nodegate.session import fastlane
    out = os.environ.get("HOOKSEQ_OUT")
    if out:
        with open(out, "w") as f:
            f.write(json.dumps({"fast": session.config.stash.get(fastlane.RAN_KEY, 0)}) + "\n")
            for s in SEQ:
                f.write(json.dumps(s, default=repr) + "\n")
