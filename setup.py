"""The package layout; every other setting is in pyproject.toml.

The checkout keeps ``plugins/`` and ``suites/`` at the top (the layout docs/contributing.md
describes), but they install as ``nodegate.plugins`` and ``nodegate.suites``: a top-level
``plugins`` or ``suites`` in site-packages would shadow a project's own package of that name
(issue 30). The same mapping serves ``pip install .`` (files copied to site-packages/nodegate/)
and ``pip install -e .`` (setuptools' editable finder maps the two names onto the checkout).
"""

from setuptools import find_packages, setup

MAPPED = {"nodegate.plugins": "plugins", "nodegate.suites": "suites"}

# nodegate/data holds no module (the package data of pyproject.toml: pytest.ini, the YAML tables),
# so find_packages skips it; named here, setuptools does not warn on every install that
# "Package 'nodegate.data' is absent from the `packages` configuration" (a new user's `make demo`)
DATA = ["nodegate.data"]

setup(packages=[*find_packages(include=["nodegate", "nodegate.*"]), *DATA, *MAPPED], package_dir=MAPPED)
