"""Cross-node acceptance (collected with ``--crossnode FILE``; plugins/nodegate_crossnode.py).

Each test asserts one row of the phase (nodegate.crossnode.present): a node's roll-up, a fault
or cable of a node, a job, a fault or cable of the fabric, the phase itself. ERROR fails the
setup ("could not evaluate"); the test asserts PASS. docs/crossnode.md.
"""

from nodegate.outcomes import Outcome


def _ok(v):
    assert v.outcome is Outcome.PASS, v.message


def test_crossnode_node(crossnode_node):
    _ok(crossnode_node)


def test_crossnode_fault(crossnode_node):
    _ok(crossnode_node)


def test_crossnode_cable(crossnode_node):
    _ok(crossnode_node)


def test_crossnode_job(crossnode_fabric):
    _ok(crossnode_fabric)


def test_crossnode_link(crossnode_fabric):
    _ok(crossnode_fabric)


def test_crossnode_phase(crossnode_fabric):
    _ok(crossnode_fabric)
