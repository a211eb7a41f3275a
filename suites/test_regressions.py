"""Post-upgrade regressions against ``--baseline DIR`` (docs/baseline.md).

One item per node and kind (per baseline GPU for pcie, gpu_missing, ecc, remapped_rows);
the ``regression`` fixture (plugins/nodegate_baseline.py) compares; the tests only assert.
Without ``--baseline`` these items are deselected.
"""


def test_regression_node_presence(regression):
    assert regression.ok, regression.message


def test_regression_checks(regression):
    assert regression.ok, regression.message


def test_regression_pcie(regression):
    assert regression.ok, regression.message


def test_regression_gpu_missing(regression):
    assert regression.ok, regression.message


def test_regression_ecc(regression):
    assert regression.ok, regression.message


def test_regression_remapped_rows(regression):
    assert regression.ok, regression.message


def test_regression_xid(regression):
    assert regression.ok, regression.message


def test_regression_flavor(regression):
    assert regression.ok, regression.message


def test_regression_persistence(regression):
    assert regression.ok, regression.message


def test_regression_site(regression):
    assert regression.ok, regression.message
