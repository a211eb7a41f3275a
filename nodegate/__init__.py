"""nodegate: acceptance suite for GPU compute nodes.

Pipeline (imports point one way, left to right):
inventory + spec -> transport -> probe -> bundle -> parsers -> facts -> checks -> reports.

``nodegate.plugins`` (pytest plugins) and ``nodegate.suites`` (the checks as pytest tests) are
the checkout's top-level plugins/ and suites/: setup.py maps them on ``pip install`` (copied
into site-packages/nodegate/) and ``pip install -e`` (setuptools' editable finder).
"""

import os as _os

__version__ = "0.1.0"




def _installed() -> bool:
    """An install maps ``nodegate.plugins``/``nodegate.suites`` itself: ``pip install -e .`` through
    setuptools' editable finder on sys.meta_path (its module is ``__editable___nodegate_*_finder``);
    ``pip install .`` copies them under this package (then plugins/ is beside this file)."""
    import sys
    return any(getattr(f, "__module__", "").startswith("__editable___nodegate") for f in sys.meta_path)


_top = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(__path__[0], "plugins"))
        and _os.path.isfile(_os.path.join(_top, "setup.py"))
        and _os.path.isfile(_os.path.join(_top, "plugins", "nodegate_plugin.py"))
        and not _installed()):
    # Only then: appended to an installed (editable) package's path, the whole checkout would
    # become nodegate.* (nodegate.tests, nodegate.nodegate, ...: pkgutil.walk_packages never ends).
    # A checkout used without installing (PYTHONPATH=checkout: device/run.sh on a machine with
    # no pip) finds nodegate.plugins and nodegate.suites where setup.py maps them from. Never in
    # an installed copy: there they are site-packages/nodegate/plugins and .../suites.
    __path__.append(_top)
del _top
