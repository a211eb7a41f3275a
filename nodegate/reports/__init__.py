"""Reports: what a run leaves behind for people and machines.

Inputs are read-only: per-test records (``report.nodegate`` dicts the suite plugin attaches,
see docs/contributing.md "Plugin contract") and the run's ``FleetRun`` (bundles and node facts).
Outputs (docs/reports.md): the pytest-html rows, summary and drift tables; sanitised JUnit
properties; ``rma.csv`` / ``rma.json``; per-node evidence archives; the terminal summary.

Every string that came from a node is untrusted: ``text.clean`` removes control characters
and caps the length, ``text.esc`` additionally HTML-escapes. Nothing here changes a bundle.

Modules: text (cleaning), records (per-test and per-node data), actions (remediation ->
action), rma (CSV/JSON), archive (tar.gz), drift (fleet outliers), html (pytest-html cells
and tables), metadata (secret redaction), terminal (end-of-run summary).
"""
