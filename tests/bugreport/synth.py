"""Synthetic nvidia-bug-report logs in the header forms of bug-report versions no public log covers
(nodegate/bugreport/sections.py VERSIONS), built from real outputs: the H200 capture's nvidia-smi -q
text and /proc files, the corpus's H100 lspci -vvv stanza. The forms follow the scripts' own code
(report_file, report_command, the kernel-log scan)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CAP = REPO / "tests" / "captures" / "h200-vm-580.159.04"
SEP = "_" * 44


def block(header: str, body: str, ls: bool = False) -> str:
    meta = f"*** ls: -r--r--r-- 1 root root 0 2026-11-29 18:48:10.000000000 +0000 {header[4:]}\n" if ls else ""
    return f"{SEP}\n\n{header}\n{meta}{body.rstrip()}\n\n"


def lspci_h200() -> str:
    stanza = (REPO / "tests" / "fixtures" / "lspci" / "h100_stanza_gen5_x16.txt").read_text()
    return stanza.replace("19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)",
                          "0000:00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [H200 SXM 141GB] [10de:2335] "
                          "(rev a1)")


def log_37062940(host: str = "gpu042", journal0: str = "", dmesg: str = "", persistenced: bool = True) -> str:
    """The 2025 script's forms (bottlerocket-os/bottlerocket-admin-container nvidia-bug-report.sh)."""
    smi_q = (CAP / "smi_q.out").read_text()
    version = (CAP / "proc_driver_version.out").read_text()
    info = (CAP / "proc_driver_gpus.out").read_text().split("\n", 1)[1] if \
        (CAP / "proc_driver_gpus.out").read_text().startswith("==") else (CAP / "proc_driver_gpus.out").read_text()
    modules = (CAP / "proc_modules.out").read_text()
    status = ("● nvidia-suspend.service - NVIDIA system suspend actions\n"
              "     Loaded: loaded (/usr/lib/systemd/system/nvidia-suspend.service; enabled; preset: enabled)\n"
              "     Active: inactive (dead)\n\n")
    if persistenced:
        status += ("● nvidia-persistenced.service - NVIDIA Persistence Daemon\n"
                   "     Loaded: loaded (/usr/lib/systemd/system/nvidia-persistenced.service; enabled; preset: enabled)\n"
                   "     Active: active (running) since Sun 2026-11-29 18:01:02 UTC; 47min ago\n"
                   "   Main PID: 1413 (nvidia-persiste)\n")
    out = (f"{SEP}\n\nStart of NVIDIA bug report log file.  Please include this file, along\n"
           "with a detailed description of your problem, when reporting a graphics\n"
           "driver bug via the NVIDIA Linux forum (see forums.developer.nvidia.com)\n"
           "or by sending email to 'linux-bugs@nvidia.com'.\n\n"
           "nvidia-bug-report.sh Version: 37062940\n\n"
           "Date: Sun Nov 29 18:48:10 UTC 2026\n"
           f"uname: Linux {host} 6.8.0-50-generic #51-Ubuntu SMP PREEMPT_DYNAMIC x86_64 x86_64 x86_64 GNU/Linux\n"
           "command line flags: \n\n"
           "Component                           | Details\n"
           "================================================================================\n"
           "NVIDIA SMI                          | NVIDIA-SMI version  : 580.159.04\n\n")
    out += block("NVIDIA Driver Type Detection:", "\nDetected driver type: Running RM Driver on GPUs\n"
                 "Standard RM driver detected.")
    out += block("/usr/bin/systemctl status nvidia-suspend.service nvidia-hibernate.service nvidia-resume.service "
                 "nvidia-powerd.service nvidia-persistenced.service", status)
    out += block("/usr/bin/lspci -nntv", "-[0000:00]-+-00.0  Intel Corporation 440FX [8086:1237]\n"
                 "           \\-06.0  NVIDIA Corporation GH100 [H200 SXM 141GB] [10de:2335]")
    out += block("/usr/bin/lspci -nn", "00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2335] (rev a1)")
    out += block("/usr/bin/lspci -nnDvvvxxxx", lspci_h200())
    out += block("/usr/sbin/modinfo nvidia | grep vermagic", "vermagic:       6.8.0-50-generic SMP preempt mod_unload "
                 "modversions")
    scan = "Scanning kernel log files for NVIDIA kernel messages:\n"
    scan += "\n  journalctl -b -0:\n" + journal0 if journal0 else "\nNo NVIDIA kernel messages found in recent systemd journal entries.\n"
    out += f"{SEP}\n\n{scan}\n"
    out += block("dmesg:", "\n" + dmesg)
    out += block("*** /proc/modules", modules, ls=True)
    out += block("*** /proc/version", "Linux version 6.8.0-50-generic (buildd@lcy02) (gcc 13.2.0) #51-Ubuntu SMP", ls=True)
    out += block("*** /proc/driver/nvidia/version", version, ls=True)
    out += block("*** /proc/driver/nvidia/gpus/0000:00:06.0/information", info, ls=True)
    out += block("/usr/bin/nvidia-smi --query", smi_q + "\n/usr/bin/nvidia-smi --query --unit\n\n"
                 "==============NVSMI LOG==============\n\nAttached Units                    : 0\n\n"
                 "/usr/bin/nvidia-smi nvlink --status\n\nGPU 0: NVIDIA H200 (UUID: GPU-5e1f0c3a)\n"
                 "\t Link 0: 26.562 GB/s")
    out += block("Skipping: acpidump output", "acpidump not found")
    out += f"{SEP}\n\nEnd of NVIDIA bug report log file.\n"
    return out
