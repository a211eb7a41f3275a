"""Exit codes of a nodegate run, for CI (README "Exit codes", docs/baseline.md).

0 every item passed or was skipped by the spec; 1 at least one FAIL or ERROR; 2 usage,
inventory or spec error (pytest's own USAGE_ERROR is 4, INTERRUPTED 2); 3 regressions only:
every failing item is a FAIL of a regression item (``test_regression_*``) and every normal
check passed or was skipped, so a pipeline can tell "worse than the accepted state, but
within spec" from "out of spec".
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_SPEC_ERROR = 2
EXIT_REGRESSIONS_ONLY = 3


def final_exit_status(exitstatus: int, regression_failures: int, other_failures: int) -> int:
    """pytest's status -> nodegate's: 3 when pytest says "tests failed" (1) and every failure
    is a regression FAIL (an ERROR of a regression item counts as an other failure: it could
    not be compared, which is not "regressions only")."""
    if int(exitstatus) == EXIT_FAILED and regression_failures > 0 and other_failures == 0:
        return EXIT_REGRESSIONS_ONLY
    return int(exitstatus)
