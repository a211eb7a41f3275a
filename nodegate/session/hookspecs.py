"""nodegate's own pytest hooks (registered by plugins/nodegate_plugin.py ``pytest_addhooks``)."""


def pytest_nodegate_report_sections(config):
    """Return extra sections for nodegate's HTML report: a list of ``(title, html)`` pairs, shown
    after the findings (e.g. the baseline's change tables). ``html`` must be escaped already (it
    is inserted as markup). Called once, at the end of the session, on the controller."""
