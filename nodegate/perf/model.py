"""nodegate.perfmodel.model under its former name (issue 40 moved it below the parsers and reports)."""

from ..perfmodel.model import (  # noqa: F401
    DataError, Integrity, METRIC_NAMES, MODE_NAMES, Measurement, PERFTEST, SCOPES, StatusResult, TOOLS, ToolReport)
