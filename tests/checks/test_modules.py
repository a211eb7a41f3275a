"""Kernel modules: required, nvidia_peermem, load order, modules-load.d (checks.md "Kernel modules")."""

from nodegate.facts import ModinfoFacts, ModuleEntry, ModuleState
from nodegate.outcomes import Outcome

from .fakes import covers, healthy, module_state, run, spec


def with_peermem(registered=True, builtin_ib=True):
    names = ("nvidia_peermem", "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia") + (() if builtin_ib else ("ib_core",))
    return healthy(modules=module_state(names, ("ib_core",) if builtin_ib else ()), ib_devices=["mlx5_0"],
                   peermem_registered=registered, modules_load_d={"/etc/modules-load.d/nvidia-peermem.conf":
                                                                  ["nvidia_peermem"]})


@covers("NG-MOD-001")
def test_required_modules_live_passes():
    r = run("NG-MOD-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia Live, nvidia_uvm Live, nvidia_modeset Live, nvidia_drm Live"


@covers("NG-MOD-001")
def test_missing_nvidia_uvm_fails():
    r = run("NG-MOD-001", healthy(modules=module_state(("nvidia_drm", "nvidia_modeset", "nvidia"))))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia Live, nvidia_uvm absent, nvidia_modeset Live, nvidia_drm Live"


@covers("NG-MOD-001")
def test_builtin_required_module_counts_as_loaded():
    ms = module_state(("nvidia_drm", "nvidia_modeset", "nvidia_uvm"), builtin=("nvidia",))
    r = run("NG-MOD-001", healthy(modules=ms))
    assert r.outcome is Outcome.PASS
    assert "nvidia built-in" in r.observed


@covers("NG-MOD-001")
def test_module_still_loading_fails():
    ms = module_state()
    ms.loaded[0].state = "Loading"
    r = run("NG-MOD-001", healthy(modules=ms))
    assert r.outcome is Outcome.FAIL
    assert "nvidia_drm (Loading)" in r.message


@covers("NG-MOD-001")
def test_vm_capture_without_modeset_drm_fails():
    # capture h200-vm: /proc/modules lists only nvidia_uvm and nvidia, columns '- -'
    ms = ModuleState([ModuleEntry("nvidia_uvm", 1830912, None, [], "Live", 0),
                      ModuleEntry("nvidia", 14299136, None, [], "Live", 1)], {"ib_core", "mlx5_core", "mlx5_ib"})
    r = run("NG-MOD-001", healthy(modules=ms))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia Live, nvidia_uvm Live, nvidia_modeset absent, nvidia_drm absent"


@covers("NG-MOD-002")
def test_peermem_auto_with_infiniband_loaded_registered_passes():
    r = run("NG-MOD-002", with_peermem())
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia_peermem Live, nv_peer_mem absent; registered"


@covers("NG-MOD-002")
def test_peermem_auto_without_infiniband_skips():
    r = run("NG-MOD-002", healthy())
    assert r.outcome is Outcome.SKIP
    assert "/sys/class/infiniband is empty" in r.message


@covers("NG-MOD-002")
def test_peermem_required_but_absent_fails_and_names_disk_module():
    r = run("NG-MOD-002", healthy(), spec(modules={"peermem": "required"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("nvidia_peermem absent, nv_peer_mem absent; installed but not loaded: nvidia_peermem")


@covers("NG-MOD-002")
def test_peermem_loaded_but_not_registered_fails():
    r = run("NG-MOD-002", with_peermem(registered=False))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia_peermem Live, nv_peer_mem absent; not registered with ib_core (no memory_peers/nv_mem)"


@covers("NG-MOD-002")
def test_legacy_nv_peer_mem_counts_only_if_allowed():
    f = healthy(modules=module_state(("nv_peer_mem", "nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia")),
                ib_devices=["mlx5_0"], peermem_registered=True)
    assert run("NG-MOD-002", f).outcome is Outcome.FAIL
    r = run("NG-MOD-002", f, spec(modules={"allow_nv_peer_mem": True}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia_peermem absent, nv_peer_mem Live; registered"


@covers("NG-MOD-002")
def test_legacy_nv_peer_mem_installed_not_loaded_fails():
    f = healthy(ib_devices=["mlx5_0"], modinfo_peermem=None,
                modinfo_nv_peer_mem=ModinfoFacts(filename="/lib/modules/4.15.0-46-generic/updates/dkms/nv_peer_mem.ko",
                                                 license="Dual BSD/GPL", version="1.0-8"))
    r = run("NG-MOD-002", f, spec(modules={"allow_nv_peer_mem": True}))
    assert r.outcome is Outcome.FAIL
    assert "nv_peer_mem 1.0-8 on disk" in r.observed


@covers("NG-MOD-002")
def test_peermem_absent_policy_fails_when_loaded():
    r = run("NG-MOD-002", with_peermem(), spec(modules={"peermem": "absent"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia_peermem Live, nv_peer_mem absent"


@covers("NG-MOD-002")
def test_peermem_ignore_skips_naming_key():
    r = run("NG-MOD-002", healthy(), spec(modules={"peermem": "ignore"}))
    assert r.outcome is Outcome.SKIP
    assert "modules.peermem=ignore" in r.message


@covers("NG-MOD-003")
def test_load_order_dependency_below_user_passes():
    r = run("NG-MOD-003", with_peermem(builtin_ib=False))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("ib_core before nvidia_peermem; nvidia before nvidia_peermem")


@covers("NG-MOD-003")
def test_load_order_builtin_counts_first():
    r = run("NG-MOD-003", with_peermem(builtin_ib=True))
    assert r.outcome is Outcome.PASS
    assert "ib_core before nvidia_peermem" in r.observed


@covers("NG-MOD-003")
def test_load_order_wrong_fails():
    ms = module_state(("nvidia_drm", "nvidia", "nvidia_uvm", "nvidia_modeset"))
    r = run("NG-MOD-003", healthy(modules=ms))
    assert r.outcome is Outcome.FAIL
    assert "nvidia_uvm loaded before nvidia" in r.message


@covers("NG-MOD-003")
def test_load_order_dash_columns_do_not_break():
    ms = ModuleState([ModuleEntry("nvidia_uvm", 1830912, None, [], "Live", 0),
                      ModuleEntry("nvidia", 14299136, None, [], "Live", 1)], {"ib_core"})
    r = run("NG-MOD-003", healthy(modules=ms))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("nvidia before nvidia_uvm")


@covers("NG-MOD-004")
def test_peermem_in_modules_load_d_passes():
    r = run("NG-MOD-004", with_peermem())
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia_peermem in /etc/modules-load.d/nvidia-peermem.conf"


@covers("NG-MOD-004")
def test_peermem_missing_from_modules_load_d_fails():
    r = run("NG-MOD-004", with_peermem().but(modules_load_d={"/etc/modules-load.d/modules.conf": ["lp"]}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "not listed (/etc/modules-load.d/modules.conf)"


@covers("NG-MOD-004")
def test_modules_load_d_not_required_when_peermem_not_required():
    r = run("NG-MOD-004", healthy())
    assert r.outcome is Outcome.SKIP
    assert "modules.peermem=auto" in r.message


@covers("NG-MOD-003")
def test_load_order_no_pair_applies_skips_naming_key():
    # only nvidia loaded: no pair has its later module loaded, nothing was verified
    r = run("NG-MOD-003", healthy(modules=module_state(("nvidia",))))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("modules.order: no ordered pair applies (nvidia_drm not loaded")
    assert r.observed == "no ordered pair loaded"
