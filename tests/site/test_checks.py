"""The nodegate_check marker's arguments and the defaults derived from the test."""

from __future__ import annotations

import pytest

from nodegate.site.checks import SiteCheck, derived_id, site_check


class Samples:   # site tests as a site file would hold them (not collected here)
    @staticmethod
    def test_fabric_manager_active(host):
        """Fabric manager running

        Restart nvidia-fabricmanager and check its log.
        """

    @staticmethod
    def test_plain(host):
        pass


FM = Samples.test_fabric_manager_active
PLAIN = Samples.test_plain


def test_defaults_come_from_the_name_and_docstring():
    assert site_check(FM, "f.py::test_fabric_manager_active", None) == SiteCheck(
        "SITE-FABRIC-MANAGER-ACTIVE", "fabric_manager_active", "Fabric manager running", "major",
        "Restart nvidia-fabricmanager and check its log.", None)


def test_without_docstring_the_title_is_the_name_and_the_remediation_points_at_the_test():
    c = site_check(PLAIN, "f.py::test_plain", {})
    assert (c.id, c.title, c.remediation) == ("SITE-PLAIN", "plain", "See the site check f.py::test_plain.")


def test_marker_arguments_win():
    c = site_check(PLAIN, "f.py::test_plain", {"id": "SITE-FM-001", "severity": "critical",
                                                     "remediation": "Do X.", "title": "FM", "timeout": 90})
    assert c == SiteCheck("SITE-FM-001", "plain", "FM", "critical", "Do X.", 90.0)


@pytest.mark.parametrize("kw, msg", [
    ({"severity": "high"}, "severity 'high' is not one of critical, major, minor"),
    ({"id": "bad id!"}, "id 'bad id!'"),
    ({"timeout": 0}, "timeout 0"),
    ({"timeout": True}, "timeout True"),
    ({"remedy": "x"}, "unknown argument(s) ['remedy']"),
], ids=["severity", "id", "timeout-zero", "timeout-bool", "unknown-key"])
def test_bad_marker_arguments_are_refused_naming_them(kw, msg):
    with pytest.raises(ValueError) as e:
        site_check(PLAIN, "f.py::test_plain", kw)
    assert msg in str(e.value)


def test_derived_id_of_odd_names():
    assert derived_id("test_ib__ports-x") == "SITE-IB-PORTS-X"
