"""The session's public interface for the phases that plug into it (site checks: nodegate.site).

A phase reads the run's state through these names only; the modules behind them (state, jobs,
selection, start, verdicts) may change without it (issue 40 item 3: site/ reached into the
session's internals; the import contract "site checks use the session's public interface" in
pyproject.toml keeps it so). Each name is documented where it is defined.

- ``COLLECTED_KEY``, ``JOBS_KEY``: stash keys of the collected node set and the run's node jobs;
- ``PRESENT_KEY``: an item's presenter of its phase reports (nodegate.session.state);
- ``SUITES``: the suite modules every node's items come from;
- ``build_jobs(config)``: the run's node jobs (inventory or ``--target``), every spec validated;
- ``preselecting(config)``: whether this process only learns the selection before gathering;
- ``pytest_nodegate_report_sections``: nodegate's own pytest hook (registered by
  plugins/nodegate_plugin.py ``pytest_addhooks``).
"""

from __future__ import annotations

from .jobs import SUITES, build_jobs
from .selection import preselecting
from .state import COLLECTED_KEY, JOBS_KEY, PRESENT_KEY

__all__ = ["COLLECTED_KEY", "JOBS_KEY", "PRESENT_KEY", "SUITES", "build_jobs", "preselecting"]


def pytest_nodegate_report_sections(config):
    """Return extra sections for nodegate's HTML report: a list of ``(title, html)`` pairs, shown
    after the findings (e.g. the baseline's change tables). ``html`` must be escaped already (it
    is inserted as markup). Called once, at the end of the session, on the controller."""
