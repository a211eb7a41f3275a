"""ECC mode and counters, row remapping, retired pages, recovery action (checks.md "ECC and memory health")."""

from nodegate.facts import NA, EccCounters, RemappedRows, RetiredPages
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, run, spec

V100 = dict(name="Tesla V100-PCIE-32GB", pci_device_id="1db6", architecture="Volta", remapped_rows=NA,
            gsp_firmware_version=NA)


# the 580+ repair flags (GpuFacts attributes); fakes.gpu() leaves them unreported
OK580 = dict(channel_repair_pending=False, tpc_repair_pending=False, unrepairable_memory=False)


def rr(**kw):
    base = dict(correctable=0, uncorrectable=0, pending=False, failure=False,
                histogram={"max": 3072, "high": 0, "partial": 0, "low": 0, "none": 0})
    base.update(kw)
    return RemappedRows(**base)


@covers("NG-ECC-001")
def test_ecc_enabled_passes():
    r = run("NG-ECC-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "current Enabled, pending Enabled"


@covers("NG-ECC-001")
def test_ecc_disabled_fails():
    r = run("NG-ECC-001", healthy(gpus=[gpu(ecc_mode_current=False, ecc_mode_pending=False)]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "current Disabled, pending Disabled"


@covers("NG-ECC-001")
def test_ecc_pending_change_fails():
    r = run("NG-ECC-001", healthy(gpus=[gpu(ecc_mode_pending=False)]))
    assert r.outcome is Outcome.FAIL
    assert "pending Disabled" in r.message


@covers("NG-ECC-001")
def test_ecc_unsupported_board_skips_when_not_required():
    g = gpu(ecc_mode_current=NA, ecc_mode_pending=NA)
    r = run("NG-ECC-001", healthy(gpus=[g]), spec(ecc={"required": False}))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "current N/A, pending N/A"
    assert r.message.startswith("ecc.required=false")


@covers("NG-ECC-001")
def test_ecc_unsupported_board_fails_when_required():
    r = run("NG-ECC-001", healthy(gpus=[gpu(ecc_mode_current=NA, ecc_mode_pending=NA)]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "current N/A, pending N/A"


@covers("NG-ECC-002")
def test_ecc_counters_zero_passes():
    r = run("NG-ECC-002", healthy(gpus=[gpu(**OK580)]))
    assert r.outcome is Outcome.PASS
    assert r.observed == ("volatile uncorrectable 0, volatile correctable 0, aggregate uncorrectable 0, "
                          "aggregate correctable 0; sram_threshold_exceeded No")


@covers("NG-ECC-002")
def test_uncorrectable_volatile_above_zero_fails():
    r = run("NG-ECC-002", healthy(gpus=[gpu(ecc_volatile=EccCounters(0, 2))]))
    assert r.outcome is Outcome.FAIL
    assert "volatile uncorrectable 2 > 0" in r.message


@covers("NG-ECC-002")
def test_correctable_counts_shown_not_enforced_by_default():
    r = run("NG-ECC-002", healthy(gpus=[gpu(ecc_aggregate=EccCounters(3, 0), **OK580)]))
    assert r.outcome is Outcome.PASS
    assert "aggregate correctable 3" in r.observed


@covers("NG-ECC-002")
def test_correctable_threshold_from_spec_fails():
    r = run("NG-ECC-002", healthy(gpus=[gpu(ecc_aggregate=EccCounters(3, 0))]),
            spec(ecc={"max_correctable_aggregate": 2}))
    assert r.outcome is Outcome.FAIL
    assert "aggregate correctable 3 > 2" in r.message


@covers("NG-ECC-002")
def test_sram_threshold_exceeded_fails():
    r = run("NG-ECC-002", healthy(gpus=[gpu(sram_threshold_exceeded=True)]))
    assert r.outcome is Outcome.FAIL
    assert "SRAM error threshold exceeded (RMA)" in r.message


@covers("NG-ECC-002")
def test_unrepairable_memory_flag_fails():
    g = gpu(**{**OK580, "unrepairable_memory": True})
    r = run("NG-ECC-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert r.message.split(" Remediation:")[0] == "GPU 0 (0000:00:06.0, serial 1650000000001): unrepairable memory (RMA)"
    assert r.details == {"action": "RMA"}


@covers("NG-ECC-002")
def test_channel_repair_pending_fails_reset():
    g = gpu(**{**OK580, "channel_repair_pending": True})
    r = run("NG-ECC-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert r.message.split(" Remediation:")[0] == "GPU 0 (0000:00:06.0, serial 1650000000001): channel repair pending (reset required)"
    assert r.details == {"action": "reset"}


@covers("NG-ECC-002")
def test_tpc_repair_pending_and_sram_threshold_fails_rma():
    g = gpu(**{**OK580, "tpc_repair_pending": True}, sram_threshold_exceeded=True)
    r = run("NG-ECC-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert r.message.split(" Remediation:")[0] == ("GPU 0 (0000:00:06.0, serial 1650000000001): SRAM error threshold exceeded (RMA); "
                         "tpc repair pending (reset required)")
    assert r.details == {"action": "RMA"}


@covers("NG-ECC-002")
def test_repair_flags_not_reported_on_580_is_error():
    r = run("NG-ECC-002", healthy())   # driver 580.159.04, flags None
    assert r.outcome is Outcome.ERROR
    assert r.message == ("GPU 0 (0000:00:06.0, serial 1650000000001): counters not reported: "
                         "channel_repair_pending (driver 580.159.04 reports it from 580), "
                         "tpc_repair_pending (driver 580.159.04 reports it from 580), "
                         "unrepairable_memory (driver 580.159.04 reports it from 580)")


@covers("NG-ECC-002")
def test_sram_threshold_not_reported_on_580_is_error():
    r = run("NG-ECC-002", healthy(gpus=[gpu(sram_threshold_exceeded=None, **OK580)]))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("counters not reported: sram_threshold_exceeded (driver 580.159.04 reports it "
                              "from 580)")
    assert r.observed.endswith("; sram_threshold_exceeded not reported")


@covers("NG-ECC-002")
def test_repair_flags_not_required_before_580():
    g = gpu(sram_threshold_exceeded=None)
    r = run("NG-ECC-002", healthy(gpus=[g], nvidia_module_version="570.133.20"))
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("; sram_threshold_exceeded not reported")


@covers("NG-ECC-001")
def test_ecc_pending_not_reported_is_error():
    r = run("NG-ECC-001", healthy(gpus=[gpu(ecc_mode_pending=None)]))
    assert r.outcome is Outcome.ERROR
    assert r.observed == "current Enabled, pending not reported"
    assert r.message.startswith("GPU 0 (0000:00:06.0, serial 1650000000001): pending ECC mode not reported")


@covers("NG-ECC-001")
def test_ecc_pending_na_is_error():
    r = run("NG-ECC-001", healthy(gpus=[gpu(ecc_mode_pending=NA)]))
    assert r.outcome is Outcome.ERROR
    assert r.observed == "current Enabled, pending N/A"
    assert "pending ECC mode N/A" in r.message


@covers("NG-MEM-001")
def test_uncorrectable_remaps_not_reported_is_error():
    r = run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(uncorrectable=None))]))
    assert r.outcome is Outcome.ERROR
    assert r.observed.startswith("correctable 0, uncorrectable not reported, pending No, failure No")
    assert r.message == ("GPU 0 (0000:00:06.0, serial 1650000000001): uncorrectable remapped rows not reported "
                         "(limit 512 cannot be checked)")


@covers("NG-ECC-002")
def test_ecc_counters_na_skips_when_not_required():
    g = gpu(ecc_mode_current=NA, ecc_volatile=EccCounters(NA, NA), ecc_aggregate=EccCounters(NA, NA))
    r = run("NG-ECC-002", healthy(gpus=[g]), spec(ecc={"required": False}))
    assert r.outcome is Outcome.SKIP


@covers("NG-ECC-002")
def test_ecc_counters_missing_is_error():
    r = run("NG-ECC-002", healthy(gpus=[gpu(ecc_volatile=EccCounters(None, None))]))
    assert r.outcome is Outcome.ERROR


@covers("NG-MEM-001")
def test_row_remapping_clean_passes():
    r = run("NG-MEM-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == ("correctable 0, uncorrectable 0, pending No, failure No, histogram max=3072 high=0 "
                          "partial=0 low=0 none=0")


@covers("NG-MEM-001")
def test_row_remap_pending_fails():
    r = run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(uncorrectable=4, pending=True))]))
    assert r.outcome is Outcome.FAIL
    assert "row remapping pending (reset required)" in r.message
    assert r.details["action"] == "reset"


@covers("NG-MEM-001")
def test_row_remap_failure_fails_rma():
    r = run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(failure=True))]))
    assert r.outcome is Outcome.FAIL
    assert "RMA candidate" in r.message
    assert r.details["action"] == "RMA"


@covers("NG-MEM-001")
def test_histogram_none_bucket_above_spec_fails():
    r = run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(histogram={"max": 3070, "none": 2}))]))
    assert r.outcome is Outcome.FAIL
    assert "2 bank(s) without spare rows > 0" in r.message


@covers("NG-MEM-001")
def test_uncorrectable_remaps_at_512_fails():
    assert run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(uncorrectable=511))])).outcome is Outcome.PASS
    r = run("NG-MEM-001", healthy(gpus=[gpu(remapped_rows=rr(uncorrectable=512))]))
    assert r.outcome is Outcome.FAIL
    assert "uncorrectable remaps 512 >= 512" in r.message


@covers("NG-MEM-001")
def test_remapped_rows_na_under_mig_is_error():
    g = gpu(name="NVIDIA A100-SXM4-80GB", pci_device_id="20b2", architecture="Ampere", remapped_rows=NA,
            mig_mode_current=True)
    r = run("NG-MEM-001", healthy(gpus=[g]))
    assert r.outcome is Outcome.ERROR
    assert r.observed == "N/A (MIG enabled)"


@covers("NG-MEM-001")
def test_remapped_rows_na_under_mig_allowed_skips():
    g = gpu(remapped_rows=NA, mig_mode_current=True)
    r = run("NG-MEM-001", healthy(gpus=[g]), spec(memory={"allow_mig_unsupported_remap": True}))
    assert r.outcome is Outcome.SKIP
    assert "memory.allow_mig_unsupported_remap=true" in r.message


@covers("NG-MEM-001")
def test_row_remapping_not_applicable_on_volta_skips():
    r = run("NG-MEM-001", healthy(gpus=[gpu(**V100)]))
    assert r.outcome is Outcome.SKIP
    assert "uses page retirement" in r.message


@covers("NG-MEM-002")
def test_retired_pages_below_limits_passes():
    r = run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(1, 0, False))]))
    assert r.outcome is Outcome.PASS
    assert r.observed == "sbe 1, dbe 0, total 1, pending No"


@covers("NG-MEM-002")
def test_retired_pages_pending_fails():
    r = run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(0, 1, True))]))
    assert r.outcome is Outcome.FAIL
    assert "page retirement pending" in r.message
    assert r.details["action"] == "reboot"


@covers("NG-MEM-002")
def test_retired_pages_total_63_fails_dcgm_limit():
    assert run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(50, 12, False))])).outcome \
        is Outcome.PASS
    r = run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(50, 13, False))]))
    assert r.outcome is Outcome.FAIL
    assert "63 retired pages >= 63" in r.message
    assert r.details["action"] == "RMA"


@covers("NG-MEM-002")
def test_retired_pages_dbe_above_15_fails():
    assert run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(0, 15, False))])).outcome \
        is Outcome.PASS
    r = run("NG-MEM-002", healthy(gpus=[gpu(**V100, retired_pages=RetiredPages(0, 16, False))]))
    assert r.outcome is Outcome.FAIL
    assert "16 DBE retired pages > 15" in r.message


@covers("NG-MEM-002")
def test_retired_pages_na_on_ampere_and_later_is_not_applicable():
    r = run("NG-MEM-002", healthy())
    assert r.outcome is Outcome.SKIP
    assert r.observed == "sbe N/A, dbe N/A, pending N/A"


@covers("NG-MEM-002")
def test_retired_pages_na_on_board_without_ecc_skips_when_not_required():
    g = gpu(**dict(V100, name="NVIDIA TITAN V", pci_device_id="1d81"), retired_pages=RetiredPages(NA, NA, NA))
    r = run("NG-MEM-002", healthy(gpus=[g]), spec(ecc={"required": False}))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("ecc.required=false")


@covers("NG-MEM-003")
def test_recovery_action_none_passes():
    r = run("NG-MEM-003", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "None"


@covers("NG-MEM-003")
def test_recovery_action_reset_fails():
    r = run("NG-MEM-003", healthy(gpus=[gpu(recovery_action="GPU Reset")]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "GPU Reset"


@covers("NG-MEM-003")
def test_recovery_action_not_reported_by_old_driver_is_shown():
    r = run("NG-MEM-003", healthy(nvidia_module_version="535.161.08", gpus=[gpu(recovery_action=None)]))
    assert r.outcome is Outcome.PASS
    assert r.observed == "not reported by driver 535.161.08 (field added in driver 570)"


@covers("NG-MEM-003")
def test_recovery_action_missing_on_a_570_plus_driver_is_error_not_pass():
    r = run("NG-MEM-003", healthy(gpus=[gpu(recovery_action=None)]))
    assert r.outcome is Outcome.ERROR
    assert "recovery action not reported by driver 580.159.04" in r.message
