"""Spec model, SKU profiles, effective expectations, Xid table."""

import pytest

from nodegate.errors import SpecError
from nodegate.spec import Spec, expectations, load_skus, load_spec, sku_profile, xid_table
from nodegate.spec.skus import load_arch_profiles

from .fakes import gpu


def test_empty_spec_gets_catalog_defaults():
    s = load_spec(None)
    assert isinstance(s, Spec)
    assert s.modules.required == ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]
    assert s.persistence.user == "nvidia-persistenced"
    assert s.clocks.fail_reasons == ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                                     "sw_thermal_slowdown"]
    assert (s.memory.retired_pages_max_total, s.memory.retired_pages_max_dbe) == (63, 15)
    assert s.memory.max_uncorrectable_remaps == 512
    assert s.pcie.idle == "not_verified"


def test_wrong_key_names_file_and_dotted_key():
    with pytest.raises(SpecError) as e:
        load_spec({"pcie": {"widht": 16}}, "inventory/hosts.yml")
    assert str(e.value) == "inventory/hosts.yml: nodegate.pcie.widht: unknown key (not allowed)"


def test_wrong_value_names_reason():
    with pytest.raises(SpecError) as e:
        load_spec({"driver": {"version": "latest"}}, "inv.yml")
    assert str(e.value).startswith("inv.yml: nodegate.driver.version: Value error, driver version 'latest'")


def test_union_value_error_names_key_once_per_member():
    with pytest.raises(SpecError) as e:
        load_spec({"gsp": {"required": "maybe"}}, "inv.yml")
    assert "nodegate.gsp.required:" in str(e.value)


def test_unknown_clocks_reason_is_spec_error():
    with pytest.raises(SpecError):
        load_spec({"clocks": {"fail_reasons": ["hw_slowdwn"]}})


def test_non_mapping_is_spec_error():
    with pytest.raises(SpecError):
        load_spec(["x"], "inv.yml")


def test_module_names_normalised_to_underscores():
    assert load_spec({"modules": {"required": ["nvidia-uvm"]}}).modules.required == ["nvidia_uvm"]


def test_every_sku_profile_cites_a_source():
    skus = load_skus()
    assert {"2330", "2331", "2321", "2335", "233b", "2342", "2901", "20b0", "20b2", "20b1", "20b5", "20b7", "2236",
            "26b5", "26b9", "27b8", "1eb8", "1db1", "1db4", "1db5", "15f8", "15f9"} <= set(skus)
    assert all(p.source for p in skus.values())
    assert all(p.source for p in load_arch_profiles().values())


def test_sku_lookup_accepts_smi_device_id_form():
    assert sku_profile("0x233510DE").name == "H200"
    assert sku_profile("2335").pcie_gen == 5
    assert sku_profile("ffff") is None


def test_gsp_file_follows_architecture():
    assert sku_profile("20b2").gsp_firmware == "gsp_tu10x.bin"   # GA100
    assert sku_profile("2236").gsp_firmware == "gsp_ga10x.bin"   # GA102
    assert sku_profile("1db5").gsp_firmware is None              # Volta


def test_expectations_spec_over_sku_over_default():
    e = expectations(load_spec(None), gpu())
    assert (e.pcie_gen, e.pcie_width, e.pcie_source) == (5, 16, "SKU profile 2335 (H200)")
    e = expectations(load_spec({"pcie": {"gen": 4}}), gpu())
    assert (e.pcie_gen, e.pcie_width) == (4, 16)
    e = expectations(load_spec({"gpu": {"sku": "20B2"}}), gpu())
    assert (e.pcie_gen, e.gsp_firmware) == (4, "gsp_tu10x.bin")
    e = expectations(load_spec(None), gpu(pci_device_id="2d58", architecture="Blackwell"))
    assert (e.pcie_gen, e.flavor) == (None, "open")
    # issue 21: memory repair is the board's (SKU profile), not the architecture's: an unknown Blackwell
    # board may or may not have a row remapper (GeForce Ampere has none), and never retires pages
    assert (e.memory_repair, e.row_remapping, e.page_retirement) == (None, None, False)
    assert e.memory_repair_source == "unknown board (device id 2d58, architecture Blackwell)"
    e = expectations(load_spec(None), None)
    assert (e.pcie_gen, e.memory_repair) == (None, None)


def test_xid_table_entries_have_action_and_severity():
    t = xid_table()
    assert all(i.action and i.severity for i in t.values())
    assert t[79].name == "GPU has fallen off the bus"
