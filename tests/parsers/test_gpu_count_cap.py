"""A node that lists thousands of GPUs (a hostile or broken nvidia-smi) is refused by the parser
(every GPU would become items of its own and stall the run), while the largest real nodes pass."""

from __future__ import annotations

import pytest

from nodegate.errors import ParseError
from nodegate.parsers.smi_xml import MAX_GPUS, parse_smi_xml


def _xml(n: int) -> str:
    gpus = "".join(f'<gpu id="00000000:{i // 256:02x}:{i % 256:02x}.0"><product_name>NVIDIA H200</product_name></gpu>'
                   for i in range(n))
    return f"<nvidia_smi_log><driver_version>580.159.04</driver_version><attached_gpus>{n}</attached_gpus>{gpus}</nvidia_smi_log>"


@pytest.mark.parametrize("n", [16, MAX_GPUS])
def test_real_node_sizes_parse(n):
    assert len(parse_smi_xml(_xml(n)).gpus) == n


@pytest.mark.parametrize("n", [MAX_GPUS + 1, 2000])
def test_thousands_of_gpus_are_refused(n):
    with pytest.raises(ParseError, match=f"lists {n} GPUs: more than any node has"):
        parse_smi_xml(_xml(n))
