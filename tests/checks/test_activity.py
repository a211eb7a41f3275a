"""Busy/idle from every activity signal (nodegate/checks/activity.py; issue 21 item 1)."""

import pytest

from nodegate.checks.activity import assess
from nodegate.facts import GpuFacts

from .fakes import reasons


def g(pstate=None, idle=None, util=None, clk=None, top=None, mask=None):
    rs = reasons(gpu_idle=idle) if idle is not None else {}
    return GpuFacts(index=0, pstate=pstate, clocks_event_reasons=rs, clocks_event_reasons_mask=mask,
                    utilization_gpu=util, graphics_clock_mhz=clk, max_graphics_clock_mhz=top)


@pytest.mark.parametrize("gpu,state", [
    (g("P0", True, 0, 375, 1980), "idle"),            # H200 capture: datacenter board idles at P0
    (g("P8", True, 0, 300, 2160), "idle"),            # RTX 2080 Ti 03:00 in bug report 202
    (g("P2", False, 89, 1680, 2160), "busy"),         # RTX 2080 Ti 02:00 in bug report 202
    (g("P8", False, 0, 180, 3090), "mixed"),          # RTX PRO 6000 Blackwell (telegraf): GpuIdle Not Active at P8
    (g("P0", True, 0, 1980, 1980), "mixed"),          # locked application clocks on an idle board
    (g("P0", False), "busy"),
    (g("P0"), "unknown"),
    (g("P2", util=5), "unknown"),                     # 1-9 % abstains
    (g(mask=0x1), "idle"),                            # the bitmask when the named reason is absent
    (g(clk=1000, top=2000), "unknown"),               # between the idle and busy fractions
], ids=["h200_p0_idle", "rtx2080ti_p8_idle", "rtx2080ti_p2_busy", "geforce_p8_bit_not_active", "locked_clocks",
        "p0_bit_only", "p0_only", "low_util_abstains", "mask_only", "mid_clock_abstains"])
def test_state_from_all_signals(gpu, state):
    assert assess(gpu).state == state


def test_samples_vote_with_a_prefix():
    a = assess(g("P0", False), [g("P8", True)])
    assert a.state == "mixed"
    assert a.evidence() == "idle: sample 1: P8, sample 1: GpuIdle active; busy: GpuIdle not active"
    assert a.describe() == "P0, GpuIdle not active"
