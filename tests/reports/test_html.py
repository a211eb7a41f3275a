"""html.py: cells, extras and tables escape every node string."""

import re
from collections import Counter

from nodegate.reports import html
from nodegate.reports.records import NodeInfo

from .fleetgen import HOSTILE_NODE, IMG_SERIAL, SCRIPT_NAME
from .helpers import rec

RAW_MARKUP = re.compile(r"<(script|img)\b", re.I)


def test_header_columns():
    titles = [re.sub(r"<[^>]+>", "", c) for c in html.header_cells()]
    assert titles == ["Result", "Node", "GPU", "Serial", "Check id", "Severity", "Expected", "Observed",
                      "Test", "Links"]


def test_row_cells_escape_hostile_values():
    r = rec(node=HOSTILE_NODE, gpu="0", gpu_serial=IMG_SERIAL, observed=SCRIPT_NAME, expected="a\nb")
    cells = html.row_cells('<td class="col-result">Failed</td>', r, f"t[{HOSTILE_NODE}]", "bundles/x.tar.gz")
    joined = "".join(cells)
    assert not RAW_MARKUP.search(joined)
    assert cells[1] == ('<td class="col-node">evil&lt;img src=x onerror=document.documentElement.dataset.'
                        'pwned=1&gt;</td>')
    assert cells[2] == '<td class="col-gpu">gpu0 0000:12:00.0</td>'
    assert cells[6] == '<td>a b</td>'
    assert cells[9] == '<td><a href="bundles/x.tar.gz">evidence</a></td>'
    assert all("\n" not in c for c in cells)


def test_row_without_nodegate_data_has_empty_node_columns():
    cells = html.row_cells('<td class="col-result">Error</td>', None, "tests/x.py::<b>", None)
    assert cells[1:4] == ['<td class="col-node"></td>', '<td class="col-gpu"></td>', '<td></td>']
    assert cells[8] == '<td class="col-testId">x.py::&lt;b&gt;</td>'


def test_failure_extra_escapes_evidence_and_links_archive():
    r = rec(node=HOSTILE_NODE, evidence=f"NVRM: {SCRIPT_NAME}\x07")
    out = html.failure_extra(r, 'bundles/a".tar.gz')
    assert not RAW_MARKUP.search(out)
    assert "<pre>NVRM: &lt;script&gt;" in out and "\\x07</pre>" in out
    assert 'href="bundles/a&quot;.tar.gz"' in out


def test_summary_tables_escape_and_mark_outliers():
    a = NodeInfo(node="a", driver_version="580.159.04", gpu_model="NVIDIA H200", counts=Counter(pass_=1))
    b = NodeInfo(node=HOSTILE_NODE, driver_version="580.159.04", gpu_model=SCRIPT_NAME)
    c = NodeInfo(node="c", driver_version="580.159.04", gpu_model="NVIDIA H200",
                 gather_status="unreachable: <img src=x>")
    out = html.summary_html([a, b, c], {HOSTILE_NODE: "bundles/evil.tar.gz"})
    assert not RAW_MARKUP.search(out)
    assert ('<td class="ng-outlier">&lt;script&gt;document.documentElement.dataset.pwned=1&lt;/script&gt; ≠</td>'
            in out)
    assert '<td class="ng-bad">unreachable: &lt;img src=x&gt;</td>' in out


def test_environment_values_escaped():
    env = html.escape_environment({"Plugins": {"<b>": "<i>"}, "CI_X": "<img src=x>", "K\x07": "v"})
    assert env == {"Plugins": {"&lt;b&gt;": "&lt;i&gt;"}, "CI_X": "&lt;img src=x&gt;", "K\\x07": "v"}
