"""Meta: every check is declared completely and tested; docs/checks.md is in sync."""

import re
import subprocess
import sys
from pathlib import Path

from nodegate.checks import CHECK_MODULES, SEVERITIES, load_all
from nodegate.probe import ITEMS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_checks_doc  # noqa: E402


def test_check_ids_and_names_unique_and_well_formed():
    checks = load_all()
    assert len(checks) == len({c.name for c in checks.values()})
    assert all(re.fullmatch(r"NG-[A-Z]+-\d{3}", i) for i in checks)
    assert set(CHECK_MODULES) == {c.func.__module__.rsplit(".", 1)[-1] for c in checks.values()}


def test_every_check_has_severity_remediation_rule_and_known_evidence_keys():
    for c in load_all().values():
        assert c.severity in SEVERITIES, c.id
        assert c.remediation.strip() and c.rule.strip() and c.title.strip(), c.id
        assert c.evidence, c.id
        assert set(c.evidence) <= set(ITEMS), (c.id, set(c.evidence) - set(ITEMS))


def test_every_check_has_a_test():
    tests = gen_checks_doc.covered()
    untested = [i for i in load_all() if not tests.get(i)]
    assert untested == []


def test_checks_doc_in_sync():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_checks_doc.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
