"""Current boot vs history, one event counted once (nodegate/bugreport/kernel.py)."""

from nodegate.bugreport.kernel import persistenced_from_journal, split_boots

XID = "NVRM: Xid (PCI:0000:03:00): 62, 0cb5(2d50) 00000000 00000000"


def test_kern_log_and_journal_of_an_earlier_boot_are_one_event_despite_localised_months():
    syslog = {"/var/log/kern.log": [f"Nov 15 12:43:10 host kernel: [ 1428.404372] {XID}"]}
    journal = {1: [f"11月 15 12:43:10 host kernel: {XID}"]}
    current, history, counts = split_boots([], journal, syslog)
    assert current == []
    assert history == [f"Nov 15 12:43:10 host kernel: [ 1428.404372] {XID}"]
    assert counts["duplicates"] == 1


def test_current_boot_lines_of_kern_log_are_not_history():
    dmesg = [f"[  524.931967] {XID}"]
    syslog = {"/var/log/kern.log": [f"Nov 16 11:34:34 host kernel: [  524.931967] {XID}"]}
    current, history, _ = split_boots(dmesg, {}, syslog)
    assert (current, history) == (dmesg, [])


def test_journal_b0_adds_only_what_dmesg_lacks_as_a_multiset():
    dmesg = [f"[ 1.0] {XID}"]
    journal = {0: [f"Nov 16 11:34:34 host kernel: {XID}", f"Nov 16 11:40:00 host kernel: {XID}",
                   "Nov 16 11:41:00 host nvidia-persistenced[767]: Started (767)"]}
    current, _, counts = split_boots(dmesg, journal, {})
    assert current == [dmesg[0], f"Nov 16 11:40:00 host kernel: {XID}",
                       "Nov 16 11:41:00 host nvidia-persistenced[767]: Started (767)"]
    assert counts["duplicates"] == 1


def test_iso_journal_stamps_and_unrelated_lines():
    journal = {2: ["2019-11-14T10:00:00+0800 host kernel: NVRM: Xid (PCI:0000:03:00): 13, Graphics Exception",
                   "2019-11-14T10:00:01+0800 host kernel: usb 1-1: new device"]}
    _, history, _ = split_boots(None, journal, {})
    assert history == [journal[2][0]]


def test_persistenced_running_is_started_without_shutdown():
    lines = ["a nvidia-persistenced[753]: Started (753)", "a nvidia-persistenced[753]: Shutdown (753)",
             "b nvidia-persistenced[767]: Started (767)"]
    assert persistenced_from_journal(lines) == [767]
    assert persistenced_from_journal(lines[:2]) == []
