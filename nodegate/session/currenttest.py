"""``PYTEST_CURRENT_TEST`` of nodegate's check items: the check's test function and phase.

pytest sets ``PYTEST_CURRENT_TEST`` to ``"<nodeid> (<phase>)"`` at the setup, call and teardown
of every item (``_pytest.runner._update_current_test_var``, through ``os.environ``, so with the C
library's ``setenv()``). glibc's ``setenv()`` never frees a value it copied ("we can never free
the strings": a pointer an earlier ``getenv()`` returned must stay valid); it keeps every
distinct ``NAME=value`` string in a search tree and reuses one when the same value comes again,
which allows "arbitrarily many changes of the environment given that the used values are from a
small set" (glibc ``stdlib/setenv.c``, ``__add_to_environ``, ``KNOWN_VALUE``/``STORE_VALUE``).
A nodegate run has an item per node, check and GPU, each with its own id: up to 3 strings of ~90
bytes and their tree nodes per item (~140 bytes a call), 2.4 million ``setenv()`` calls in a
4,096-node replay (811,008 items), ~300 MB kept to its end: peak RSS 534 MB before, 229 MB after
(docs/performance.md "Round 8"; found with memray's native stacks). Still pays with ~45 items a
node (issue 40.4, 2026-12-05, a 1,024-node replay, one run each): peak RSS 123 MB with it, 140 MB
without (~17 MB for 46,080 items: ~70 MB at 4,096 nodes), CPU 69.8 s against 73.6 s.

For nodegate's check items (a ``verdict`` parameter), the value is the check's test function
id and phase instead, ``"suites/test_clocks.py::test_clocks_event_reasons (call)"``: still the
format pytest documents (a node id, which selects that test with every parameter, then the
phase), still set during every phase and removed after the teardown, but the same few strings
(test functions x 3 phases) whatever the fleet's size, which glibc finds in its tree and does not
copy again. The item's own node and GPU are in the terminal line, the reports and
results.jsonl. Every other item (a site's own tests, pytest's own tests) keeps pytest's value.

This replaces a private pytest function for the session (restored at its end), so
tests/core/test_current_test_var.py fails the day pytest sets the variable another way.
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
