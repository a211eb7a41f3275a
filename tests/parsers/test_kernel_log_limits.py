"""Kernel log parser bounds: lines longer than the kernel's record size are cut, a record's joined
continuation lines are capped, and the module-license pattern only matches at a word start."""

from nodegate.parsers.kernel_log import MAX_LINE, MAX_RECORD, parse_kernel_log


def test_overlong_line_is_cut_to_max_line():
    ev = parse_kernel_log("[    1.0] NVRM: " + "x" * (10 * MAX_LINE) + "\n")
    assert len(ev) == 1 and len(ev[0].text) <= MAX_LINE


def test_continuation_lines_are_joined_up_to_max_record():
    log = "[    1.0] NVRM: head\n" + ("NVRM: " + "y" * 100 + "\n") * 5000
    ev = parse_kernel_log(log)
    assert len(ev) == 1
    assert MAX_RECORD <= len(ev[0].text) < MAX_RECORD + 200


def test_module_license_line_still_classified():
    ev = parse_kernel_log("[    0.5] nvidia: module license 'NVIDIA' taints kernel.\n")
    assert ev[0].kind == "module_license"
    assert ev[0].details.get("module", "nvidia") == "nvidia"
