"""``PYTEST_CURRENT_TEST`` of nodegate's check items: the check's test function and phase.

pytest sets ``PYTEST_CURRENT_TEST`` to ``"<nodeid> (<phase>)"`` at every phase of every item
(``_pytest.runner._update_current_test_var``, through ``os.environ``: the C library's
``setenv()``), and glibc's ``setenv()`` keeps every distinct value it was given ("we can never free
the strings", stdlib/setenv.c): one item per node, check and GPU grew the process by ~140 bytes a
phase, 534 MB -> 229 MB peak at 4,096 nodes, still +17 MB at 1,024 nodes with ~45 items a node
(docs/performance.md "Round 8" and "What still pays").

For a check item (a ``verdict`` parameter) the value is the check's test function id and phase,
``"suites/test_clocks.py::test_clocks_event_reasons (call)"``: still the format pytest documents,
set during every phase and removed after the teardown, but the same few strings whatever the
fleet's size. Every other item keeps pytest's value. This replaces a private pytest function for
the session (restored at its end): tests/core/test_current_test_var.py fails the day pytest sets
the variable another way.
"""

from __future__ import annotations

import os

import _pytest.runner as runner

VAR = "PYTEST_CURRENT_TEST"


def function_id(item) -> str:
    """The id of the item's test function: ``item.nodeid`` without the parameter part
    (``item.name`` is ``originalname[params]``; the node id ends with it)."""
    nodeid, name = item.nodeid, item.name
    base = getattr(item, "originalname", None) or name
    return nodeid[: len(nodeid) - len(name)] + base if nodeid.endswith(name) else nodeid


def install(config, is_check_item) -> None:
    """For this session: ``PYTEST_CURRENT_TEST`` of an item for which ``is_check_item(item)`` is
    true names its test function, not the item (module docstring). Nothing changes when pytest
    has no ``_update_current_test_var`` taking ``(item, when)`` (the test above says so)."""
    original = getattr(runner, "_update_current_test_var", None)
    if original is None or getattr(original, "__nodegate__", False):
        return
    cache: dict[object, str] = {}

    def update_current_test_var(item, when) -> None:
        if not when or not is_check_item(item):
            original(item, when)   # the teardown's removal, and every other item: pytest's own
            return
        fn = getattr(item, "function", None)
        base = cache.get(fn) if fn is not None else None
        if base is None:
            base = function_id(item).replace("\x00", "(null)")   # as pytest does (#2644)
            if fn is not None:
                cache[fn] = base
        os.environ[VAR] = f"{base} ({when})"

    update_current_test_var.__nodegate__ = True
    update_current_test_var.__wrapped__ = original
    runner._update_current_test_var = update_current_test_var
    config.add_cleanup(lambda: _restore(update_current_test_var, original))


def _restore(installed, original) -> None:
    if runner._update_current_test_var is installed:
        runner._update_current_test_var = original
