"""Issue 39.2: kernel-log lines without an Xid that NVIDIA's driver logs as failures, each a
finding on the right GPU (the bus id on the line, or the nearest preceding record naming one),
else on the node. Real lines, verbatim, from public reports (each cited)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.parsers.kernel_log import parse_kernel_log

from .fakes import gpu, healthy, run

# NVIDIA/open-gpu-kernel-modules issue (B200, kernel 6.6, openEuler; nvidia-smi stops answering after
# ~66 days; the dmesg lines repeat), quoted in its summary; the same pair is gpud's "NVLink post RX
# detection failure" (leptonai/gpud kmsg tests) and the "NVLinkFailure" of B300 racks
B200_NVLINK = """NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect Link mask!
NVRM: knvlinkDiscoverPostRxDetLinks_GH100: Getting peer0's postRxDetLinkMask failed!
"""

# NVIDIA/nvtrust#77 "Broken GPU due to PCI" (H100, TDX CVM), verbatim excerpt: the FSP never boots the GSP
FSP = """[  279.949533] NVRM: kfspDumpDebugState_GH100: GPU 0000:01:00
[  279.949534] NVRM: kfspDumpDebugState_GH100: NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2(0) = 0x9f
[  279.950429] NVRM: nvCheckOkFailedNoLog: Check failed: Ran out of a critical resource, other than memory [NV_ERR_INSUFFICIENT_RESOURCES] (0x0000001A) returned from kfspSendBootCommands_HAL(pGpu, pKernelFsp) @ kernel_gsp_gh100.c:756
[  279.950860] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM
[  280.997787] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x1a:1792)
[  280.999535] NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0
[  286.345361] NVRM: kfspPollForQueueEmpty_IMPL: Timed out waiting for FSP command queue to be empty.
"""


def test_nvlink_training_failure_without_a_bus_fails_the_node():
    events = parse_kernel_log(B200_NVLINK)
    assert [e.kind for e in events] == ["nvlink_training_failed"] * 2
    assert all(e.bus_id is None for e in events)
    f = healthy(kernel_events=events)
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "NVLink link training failed (postRxDetLinkMask / Rx Detect / ALI error) x2" in r.message
    assert run("NG-LOG-002", f).outcome is Outcome.PASS   # no GPU named: the node's finding, not a GPU's


def test_nvlink_training_failure_after_a_gpu_line_is_that_gpus():
    text = "NVRM: GPU at PCI:0000:00:06: GPU-3a7c0c4b-0000-0000-0000-000000000000\n" + B200_NVLINK
    events = parse_kernel_log(text)
    assert [e.bus_id for e in events if e.kind == "nvlink_training_failed"] == ["0000:00:06.0"] * 2
    r = run("NG-LOG-002", healthy(kernel_events=events))
    assert r.outcome is Outcome.FAIL and "NVLink link training failed" in r.message


def test_fsp_boot_failure_is_the_gpu_the_driver_was_booting():
    events = parse_kernel_log(FSP)
    fsp = [e for e in events if e.kind == "fsp_boot_failed"]
    assert len(fsp) == 2 and {e.bus_id for e in fsp} == {"0000:01:00.0"}
    g = gpu(index=0, bus="0000:01:00.0")
    r = run("NG-LOG-002", healthy(gpus=[g], kernel_events=events), gpu=0)
    assert r.outcome is Outcome.FAIL
    assert "FSP boot of the GSP firmware failed (GSP-FMC never started) at 0000:01:00.0 x2" in r.message
    assert "RmInitAdapter failed" in r.message


def test_a_failure_far_from_any_gpu_line_stays_node_wide():
    text = "NVRM: GPU at PCI:0000:00:06: GPU-x\n" + "".join(f"[ {i}.000000] usb 1-1: new high-speed USB device\n"
                                                          for i in range(60)) + B200_NVLINK
    events = parse_kernel_log(text)
    assert all(e.bus_id is None for e in events if e.kind == "nvlink_training_failed")


# corpus 023 (RTX 3090, 550.144.03), verbatim: the GSP failure names no GPU; the driver's RmInitAdapter line right
# after it names the GPU it was initialising
GSP_023 = """[  903.609564] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM
[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)
[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 0
"""


def test_gsp_boot_failure_is_the_gpu_whose_rminitadapter_failed_after_it():
    # alone: it was node-wide (no GPU line before it); on a node of two GPUs, the healthy GPU that printed the
    # line before it (here corpus 024's 'NVRM: GPU at PCI:0000:01:00: GPU-...') took the GSP failure
    for text in (GSP_023, "[  903.600000] NVRM: GPU at PCI:0000:01:00: GPU-00000000-1111-2222-3333-444444444444\n"
                 + GSP_023):
        events = parse_kernel_log(text)
        (gsp,) = [e for e in events if e.kind == "gsp_init_failed"]
        assert (gsp.bus_id, gsp.details["bus_from"]) == ("0000:98:00.0", "following RmInitAdapter failure")
        gs = [gpu(index=0, bus="0000:01:00.0"), gpu(index=1, bus="0000:98:00.0")]
        f = healthy(gpus=gs, kernel_events=events)
        assert run("NG-LOG-001", f).outcome is Outcome.PASS
        assert run("NG-LOG-002", f, gpu=0).outcome is Outcome.PASS
        r = run("NG-LOG-002", f, gpu=1)
        assert r.outcome is Outcome.FAIL and r.message.startswith(
            "GPU 1 (0000:98:00.0, serial 1650000000002): GSP firmware failed to boot at 0000:98:00.0; RmInitAdapter")
