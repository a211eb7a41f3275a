"""DKMS for the booted kernel and other kernels; precompiled vermagic (checks.md "DKMS")."""

from nodegate.facts import DkmsEntry, DkmsStatus, ModinfoFacts
from nodegate.outcomes import Outcome

from .fakes import KVER, VER, covers, healthy, missing, run, spec


def dk(*entries, errors=()):
    return DkmsStatus(list(entries), list(errors))


@covers("NG-DKMS-001")
def test_dkms_installed_for_booted_kernel_passes():
    r = run("NG-DKMS-001", healthy(), spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == f"nvidia/{VER}, {KVER}, x86_64: installed"


@covers("NG-DKMS-001")
def test_dkms_installed_only_for_other_kernel_fails():
    f = healthy(dkms=dk(DkmsEntry("nvidia", VER, "6.8.0-49-generic", "x86_64", "installed")))
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == f"no nvidia entry for {KVER}"


@covers("NG-DKMS-001")
def test_dkms_built_not_installed_fails():
    f = healthy(dkms=dk(DkmsEntry("nvidia", VER, KVER, "x86_64", "built")))
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert f"seen: {VER} built" in r.message


@covers("NG-DKMS-001")
def test_dkms_diff_suffix_for_booted_kernel_fails():
    e = DkmsEntry("nvidia", VER, KVER, "x86_64", "installed", warnings=["WARNING! Diff between built and installed module!"])
    r = run("NG-DKMS-001", healthy(dkms=dk(e)), spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert "Diff between built and installed" in r.message


@covers("NG-DKMS-001")
def test_dkms_new_style_missing_modules_suffix_fails():
    e = DkmsEntry("nvidia", VER, KVER, "x86_64", "installed",
                  warnings=["Built modules are missing in the kernel modules folder"])
    r = run("NG-DKMS-001", healthy(dkms=dk(e)), spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL


@covers("NG-DKMS-001")
def test_dkms_original_module_suffix_is_harmless():
    e = DkmsEntry("nvidia", VER, KVER, "x86_64", "installed", warnings=["Original modules exist"])
    assert run("NG-DKMS-001", healthy(dkms=dk(e)), spec(driver={"install": "dkms"})).outcome is Outcome.PASS


@covers("NG-DKMS-001")
def test_dkms_version_other_than_loaded_fails():
    f = healthy(dkms=dk(DkmsEntry("nvidia", "570.124.06", KVER, "x86_64", "installed")))
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert f"no installed nvidia/{VER} for {KVER} (loaded module)" in r.message


@covers("NG-DKMS-001")
def test_dkms_error_output_is_fail_not_no_module():
    f = healthy(dkms=dk(errors=["Error! Could not locate dkms.conf file."]))
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "dkms status error: Error! Could not locate dkms.conf file."


@covers("NG-DKMS-001")
def test_dkms_tool_missing_with_install_dkms_is_error():
    r = run("NG-DKMS-001", healthy(dkms=missing("dkms")), spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.ERROR


@covers("NG-DKMS-001")
def test_precompiled_vermagic_matches_passes():
    r = run("NG-DKMS-001", healthy(), spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith(f"vermagic {KVER} SMP preempt mod_unload modversions")


@covers("NG-DKMS-001")
def test_precompiled_vermagic_other_kernel_fails():
    mi = ModinfoFacts(filename="/lib/modules/x/nvidia.ko", license="NVIDIA", version=VER, vermagic="6.8.0-49-generic SMP")
    r = run("NG-DKMS-001", healthy(modinfo_nvidia=mi), spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.FAIL
    assert f"built for 6.8.0-49-generic, booted {KVER}" in r.message


@covers("NG-DKMS-001")
def test_precompiled_module_not_on_disk_fails():
    r = run("NG-DKMS-001", healthy(modinfo_nvidia=None), spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == f"modinfo: module nvidia not found for {KVER}"


@covers("NG-DKMS-001")
def test_install_any_without_dkms_uses_modinfo():
    r = run("NG-DKMS-001", healthy(dkms=missing("dkms")))
    assert r.outcome is Outcome.PASS
    assert "driver.install=any; dkms: tool missing" in r.observed


@covers("NG-DKMS-001")
def test_vm_without_dkms_and_modinfo_is_error():
    r = run("NG-DKMS-001", healthy(dkms=missing("dkms"), modinfo_nvidia=missing("modinfo_nvidia")))
    assert r.outcome is Outcome.ERROR
    assert "[modinfo.nvidia]" in r.message


@covers("NG-DKMS-002")
def test_other_kernel_without_module_fails():
    f = healthy(installed_kernels={KVER: True, "6.8.0-51-generic": True, "6.8.0-40-generic": False})
    r = run("NG-DKMS-002", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "other kernels: 6.8.0-51-generic; missing: 6.8.0-51-generic"


@covers("NG-DKMS-002")
def test_other_kernels_all_installed_passes():
    f = healthy(installed_kernels={KVER: True, "6.8.0-51-generic": True},
                dkms=dk(DkmsEntry("nvidia", VER, KVER, "x86_64", "installed"),
                        DkmsEntry("nvidia", VER, "6.8.0-51-generic", "x86_64", "installed")))
    r = run("NG-DKMS-002", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "other kernels: 6.8.0-51-generic"


@covers("NG-DKMS-002")
def test_other_kernels_ignore_skips():
    r = run("NG-DKMS-002", healthy(), spec(dkms={"other_kernels": "ignore"}))
    assert r.outcome is Outcome.SKIP
    assert "dkms.other_kernels=ignore" in r.message


@covers("NG-DKMS-002")
def test_other_kernels_precompiled_skips_naming_install():
    r = run("NG-DKMS-002", healthy(), spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.SKIP
    assert "driver.install=precompiled" in r.message


@covers("NG-DKMS-002")
def test_other_kernels_any_dkms_timeout_is_error_not_skip():
    f = healthy(dkms=missing("dkms", "command timed out on the node (timeout exit 124)"))
    r = run("NG-DKMS-002", f, spec(driver={"install": "any"}))
    assert r.outcome is Outcome.ERROR
    assert r.message == "command timed out on the node (timeout exit 124) [dkms.status]"


@covers("NG-DKMS-002")
def test_other_kernels_any_dkms_tool_missing_skips():
    r = run("NG-DKMS-002", healthy(dkms=missing("dkms")), spec(driver={"install": "any"}))
    assert r.outcome is Outcome.SKIP
    assert r.message == ("driver.install=any and the module is not DKMS-managed "
                         "(tool missing (sh: 1: x: not found))")


@covers("NG-DKMS-001")
def test_booted_kernel_any_dkms_parse_error_is_error_not_precompiled():
    f = healthy(dkms=missing("dkms", "unparsable dkms status line 'x'"))
    r = run("NG-DKMS-001", f, spec(driver={"install": "any"}))
    assert r.outcome is Outcome.ERROR
    assert r.message == "unparsable dkms status line 'x' [dkms.status]"


@covers("NG-DKMS-001")
def test_booted_kernel_any_dkms_tool_missing_uses_precompiled_rule():
    r = run("NG-DKMS-001", healthy(dkms=missing("dkms")), spec(driver={"install": "any"}))
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("(driver.install=any; dkms: tool missing (sh: 1: x: not found))")


@covers("NG-DKMS-001")
def test_target_version_unreadable_module_version_is_error():
    f = healthy(nvidia_module_version=missing("nvidia_module_version", "command timed out on the node "
                                                                       "(timeout exit 124)"),
                driver_banner=None)
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms", "version": "570.124.06"}))
    assert r.outcome is Outcome.ERROR
    assert r.message == "command timed out on the node (timeout exit 124) [modules.nvidia_version]"


@covers("NG-DKMS-001")
def test_target_version_unknown_without_driver_version_is_error():
    r = run("NG-DKMS-001", healthy(nvidia_module_version=None, driver_banner=None), spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("no loaded nvidia module version")
    assert "driver.version not set" in r.message


@covers("NG-DKMS-002")
def test_other_kernels_target_falls_back_to_driver_version_when_not_loaded():
    f = healthy(nvidia_module_version=None, driver_banner=None, installed_kernels={KVER: True, "6.8.0-1": True},
                dkms=dk(DkmsEntry("nvidia", VER, KVER, "x86_64", "installed"),
                        DkmsEntry("nvidia", VER, "6.8.0-1", "x86_64", "installed")))
    r = run("NG-DKMS-002", f, spec(driver={"install": "dkms", "version": VER}))
    assert r.outcome is Outcome.PASS
    assert r.expected == f"nvidia/{VER} installed for every other kernel with a build dir"
