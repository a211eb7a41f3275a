"""Performance acceptance (collected with --perf, or --replay of bundles holding perf evidence).

Each test asserts the verdict of one measured subject: a GPU, a link (GPU pair), an HCA, or the
node (all-reduce, a tool that is missing, localisation). nodegate.perf.rules says which rule fired
with which numbers; docs/perf.md.
"""

from nodegate.outcomes import Outcome


def _ok(v):
    assert v.outcome is Outcome.PASS, v.message


def test_perf_gpu(perf_verdict):
    _ok(perf_verdict)


def test_perf_link(perf_verdict):
    _ok(perf_verdict)


def test_perf_hca(perf_verdict):
    _ok(perf_verdict)


def test_perf_node(perf_verdict):
    _ok(perf_verdict)
