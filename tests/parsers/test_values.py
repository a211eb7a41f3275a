"""Shared value conversion (_values): unsupported spellings, units, booleans, bus ids, speeds."""

import pytest

from nodegate.errors import ParseError
from nodegate.facts import NA
from nodegate.parsers import _values as V


@pytest.mark.parametrize("raw", ["N/A", "[N/A]", "[Not Supported]", "Not Supported",
                                 "Requested functionality has been deprecated",
                                 "[Requested functionality has been deprecated]", "  N/A  "],
                         ids=["na", "na_bracket", "not_supported_bracket", "not_supported",
                              "deprecated", "deprecated_bracket", "padded"])
def test_unsupported_spellings_are_na(raw):
    assert V.int_value(raw) is NA
    assert V.bool_value(raw) is NA
    assert V.text_value(raw) is NA


@pytest.mark.parametrize("raw,expected", [("16x", 16), ("3072 bank(s)", 3072), ("35 C", 35), ("-8 C", -8),
                                          ("0 us", 0), ("143771 MiB", 143771), ("0x1F", 31), ("5", 5)],
                         ids=["width_x", "banks", "celsius", "negative", "micros", "mib", "hex", "plain"])
def test_int_units_stripped(raw, expected):
    assert V.int_value(raw) == expected


def test_int_absent_is_none_and_garbage_raises():
    assert V.int_value(None) is None
    with pytest.raises(ParseError):
        V.int_value("five")


@pytest.mark.parametrize("raw,expected", [("Enabled", True), ("Disabled", False), ("Yes", True), ("No", False),
                                          ("Active", True), ("Not Active", False)],
                         ids=["enabled", "disabled", "yes", "no", "active", "not_active"])
def test_bool_words(raw, expected):
    assert V.bool_value(raw) is expected


def test_bool_garbage_raises():
    with pytest.raises(ParseError):
        V.bool_value("Maybe")


@pytest.mark.parametrize("raw,expected", [
    ("00000000:19:00.0", "0000:19:00.0"), ("0000:D8:00.0", "0000:d8:00.0"), ("19:00.0", "0000:19:00.0"),
    ("PCI:0000:a1:00", "0000:a1:00.0"), ("000f:01:00", "000f:01:00.0"), ("0000000F:01:00.0", "000f:01:00.0")],
    ids=["smi_8digit", "upper", "no_domain", "kernel_pci_form", "domain_f_no_fn", "smi_domain_f"])
def test_bus_id_normalised(raw, expected):
    assert V.bus_id(raw) == expected


def test_bus_id_garbage_raises():
    with pytest.raises(ParseError):
        V.bus_id("not-a-bus")


@pytest.mark.parametrize("raw,gen", [("2.5 GT/s PCIe", 1), ("5.0 GT/s PCIe", 2), ("8.0 GT/s PCIe", 3),
                                     ("16.0 GT/s PCIe", 4), ("32.0 GT/s PCIe", 5), ("64.0 GT/s PCIe", 6),
                                     ("2.5 GT/s", 1), ("5 GT/s", 2), ("8 GT/s", 3), ("32GT/s", 5)],
                         ids=["gen1", "gen2", "gen3", "gen4", "gen5", "gen6", "old_gen1", "old_gen2",
                              "old_gen3", "lspci_gen5"])
def test_speed_to_gen(raw, gen):
    assert V.speed_to_gen(raw) == gen


def test_speed_unknown_is_none_and_bad_speed_raises():
    assert V.speed_to_gen("Unknown") is None
    with pytest.raises(ParseError):
        V.speed_to_gen("7 GT/s")


def test_device_id_from_pci():
    assert V.device_id_from_pci("0x233510DE") == "2335"
    assert V.device_id_from_pci("1DB610DE") == "1db6"
