"""nodegate.perfmodel.floors under its former name (issue 40 moved it below the parsers and reports)."""

from ..perfmodel.floors import (  # noqa: F401
    Floor, FloorTable, load_table, sku_for, sku_name, override_keys, _override, floor_for, hca_floor)
