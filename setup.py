"""The package layout; every other setting is in pyproject.toml.

The checkout keeps ``plugins/`` and ``suites/`` at the top (the layout docs/contributing.md
describes), but they install as ``nodegate.plugins`` and ``nodegate.suites``: a top-level
``plugins`` or ``suites`` in site-packages would shadow a project's own package of that name
(issue 30). The same mapping serves ``pip install .`` (files copied to site-packages/nodegate/)
and ``pip install -e .`` (setuptools' editable finder maps the two names onto the checkout).
"""

from setuptools import find_packages, setup

MAPPED = {"nodegate.plugins": "plugins", "nodegate.suites": "suites"}

setup(packages=[*find_packages(include=["nodegate", "nodegate.*"]), *MAPPED], package_dir=MAPPED)
