"""Generate docs/bundle.md from nodegate.probe.ITEMS (a test keeps them in step)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodegate.altkeys import ALTERNATIVE_KEYS  # noqa: E402
from nodegate.bugreport import SOURCES, VERSIONS  # noqa: E402
from nodegate.probe import DEFAULT_ITEM_CAP, ITEMS  # noqa: E402

HEAD = """# Bundle format

A bundle is the raw evidence of one node, gathered by ONE exec of the probe
(`nodegate/probe/probe.sh`, POSIX sh: dash, bash, busybox ash; read-only; no root needed,
`--sudo` optional). Bundles are what checks evaluate: `nodegate --replay DIR` evaluates every bundle
under DIR with no network, and a person can build one by hand from command outputs.

## Layout

```
<bundles>/<node>/meta.json      node, target (password redacted), probe_version, started_at, finished_at,
                                gather_s, connect_s, exec_s, complete, status, error, stage, cut_at,
                                cut_reason, interrupted, stream_capped, spec, items{}
<bundles>/<node>/<key>.out      stdout of the item, byte-exact (capped at CAP_MIB MiB per item)
<bundles>/<node>/<key>.err      stderr of the item (only when not empty)
<bundles>/<node>/<key>.rc       exit code when not 0 (no file: 0); without one: `timeout` (the controller's deadline cut the item), `truncated` (output past the per-item cap) or `malformed`
```

- `meta.json` `status` is `ok` when the probe ran. Otherwise it names the gather failure
  (`hostkey-unknown`, `hostkey-changed`, `auth`, `refused`, `dns`, `timeout`, `unreachable`, `ssh`,
  `probe-failed`, `interrupted`, or `missing`: written by `nodegate-collect --missing REASON` for a
  node whose scheduler task never ran; read back from a bundle directory: `bundle-refused`, see below)
  and `error` carries the message; every check of that node is ERROR with it. `stage` names the
  connection stage a deadline or an interruption ended (`TCP connect`, `SSH banner`, `key exchange`,
  `authentication`, `channel open`, `exec request`, `sending the probe`, `reading the output`:
  docs/security.md, Deadlines).
- `cut_at`/`cut_reason`: the probe's evidence ends early (a deadline, the stream cap, a dropped
  connection); `interrupted` (`Ctrl-C`, `SIGTERM`, `SIGHUP`): the run was stopped while this node
  was probed, and the evidence read until then is kept.
- `groups` is the node's inventory groups at gather time (ansible-core's, parent groups included; `[]`
  without an inventory): a site module's `testinfra_hosts: ansible://GROUP` selects the same nodes on
  `--replay` (docs/site-checks.md); read as a list of group names, anything else ignored.
- `spec` is the node's `nodegate:` spec at gather time; `--replay` uses it when neither `--spec FILE`
  nor `--inventory` is given, and every report then says so: a bundle's spec is only as trusted as
  the bundle (docs/security.md "Whose spec").
- `items` records each item's `rc`, `status` and `bytes`: when present, the item's files must agree
  with it (a missing `.rc` is exit code 0) or the item is ERROR ("inconsistent").
- A bundle is read only through regular files inside its directory (no symbolic link, FIFO, socket,
  device or directory where a file is expected: that item is ERROR naming the key and the type),
  each at most 64 MiB and 96 MiB per bundle (hard links counted once); docs/security.md "Replayed
  bundles".
- A hand-built bundle needs only `<key>.out` files (rc defaults to 0). Any item may be missing: the
  checks that need it report ERROR "evidence not collected: KEY"; nothing passes on missing evidence.
- Exit code 127 means the tool is missing on the node (ERROR "tool missing"), 124 a node-side timeout.
- Items larger than the cap are marked truncated and are not evaluated (ERROR).

## Evidence keys

| key | command on the node | what it is |
|---|---|---|
"""

ALT_HEAD = """
## Alternative evidence keys

Evidence a person has in place of the probe's own forms: a bundle may carry these keys instead (the
probe's key wins when both are present; nodegate/altkeys.py). Facts from `smi.q` equal those from
`smi.qx` for the same node (tested on the real H200 capture, which has both).

| key | command that produced it | in place of | can serve | cannot serve |
|---|---|---|---|---|
"""

BR_HEAD = """
## nvidia-bug-report logs

`nodegate --replay nvidia-bug-report.log.gz` (plain or gzip; `--replay` repeated for several,
or a folder of `*.log` / `*.log.gz`) converts each log into a bundle (nodegate/bugreport) and judges
it with the same checks; `--save-bundles DIR` writes the converted bundles to `DIR/<node>/`
(`meta.json` `origin: nvidia-bug-report`, `bug_report_version`, `source_file`, `derived`). The node
is named after the log's `uname -a` host, else the file name (a second log of one host:
`<host>--<file stem>`). A key no section fills is absent: its checks ERROR "evidence not in the bug
report: KEY", never PASS. Items inferred rather than copied are listed in `meta.json` `derived`.

Sections are separated by a line of 44 underscores; the next line names the section: `*** <path>`
(a file, then `*** ls: ...`), `*** <path> does not exist`, a bare `*** ls: ...`, a command line
(bare or with its full path), or a fixed text (`Start of NVIDIA bug report log file.`, `Scanning
kernel log files for NVIDIA kernel messages:`, `Skipping ...`, `End of ...`). The kernel-log checks
judge the current boot (dmesg, plus the `journalctl -b -0` lines dmesg lacks); earlier boots
(`/var/log/kern.log`, `messages`, `journalctl -b -1/-2`) are shown as history, each event once.

| evidence key | section header forms | note |
|---|---|---|
"""

BR_VERSIONS = """
Bug-report versions (`nvidia-bug-report.sh Version:`) whose header forms were read:

| version | source and header changes |
|---|---|
"""

TAIL = """
## Site checks (docs/site-checks.md)

Beside the probe's items, a bundle holds what the site's own tests asked of the node:

| key / field | what it is |
|---|---|
| `site_evidence.<name>` | the spec's declared command `nodegate.site_evidence.<name>`, run as `sh -c '<command>'` inside the probe's one exec (same framing, node-side deadline and caps as the items above) |
| `site.cmd.<n>` (`.out`, `.err`, `.rc`) | the n-th command a site test ran on the node (testinfra's `host.run`, and every module's commands), in the order they ran, capped like a tool's item (CAP_MIB MiB stdout, 64 KiB stderr); `.rc` as above |
| `meta.json` `items.site.cmd.<n>` | its exit code, status (`ok`, `timeout`, `truncated`, `malformed`), seconds and size, like an item's |
| `meta.json` `site.commands` | `[{"key": "site.cmd.<n>", "command": "...", "status": "...", "check_id": "...", "note": "..."}]`: the index `--replay` answers from (`command` is testinfra's command line; `status` also `lost`: the connection ended first, `error`: it could not be run) |
| `meta.json` `site.results` | `{"<check id>[<params>]": {"check_id", "outcome", "title", "message"}}`: the site checks' outcomes, compared by `--baseline` (a second site file with a check of the same id: `"<file>::<check id>"`) |

A command a site test runs on `--replay` is answered from `site.commands` (the k-th run of a command gets
its k-th recording); one that is not there is ERROR "not recorded in the bundle: <command>".

## Performance (`--perf`, docs/perf.md)

| key | what it is |
|---|---|
| `perf.run` | JSON: tests asked for, status (`ok`, `interrupted`, `timeout`, `incomplete`, or the connection error), start/end, per-key timing (the tool's own run time from the node's uptime at its start and exit), heartbeats, events (`tool-start`, `stop` at a deadline, `tool-exit` with rc) |
| `perf.tools` | GPU count, the sampled nvidia-smi fields, the command prefix, where each tool was found |
| `perf.nvbandwidth` | nvbandwidth's output exactly as printed (text or `-j` JSON); rc its exit status, 127 = not found |
| `perf.nccl` | the nccl-tests binary's output (text, or the `-J` JSON); the binary is named in `perf.tools` |
| `perf.dcgmi` | `dcgmi diag -r <level> -j` output |
| `perf.gpu_burn` | gpu_burn's output (`\\r`-joined progress kept byte-exact) |
| `perf.ib_write_bw.<hca>` | the loopback pair's output for one HCA (`perf.ib_write_bw` alone: no HCA found); likewise `perf.ib_read_bw.<hca>`, `perf.ib_send_bw.<hca>`, `perf.ib_write_lat.<hca>`, `perf.ib_read_lat.<hca>`, `perf.ib_send_lat.<hca>` |
| `perf.dcgmproftester.t<id>` | `dcgmproftester -t <id>` output per test id (1004 tensor, 1006 FP64, 1007 FP32, 1008 FP16) |
| `perf.builtin` | the built-in measurement's JSON (docs/perf.md) |
| `perf.command` | the site command's output (perf JSON) |
| `perf.<tool>[.<hca>].state` | GPU state during that test: `# fields: ...`, per sample `# sample <n> uptime=<s> epoch=<s> rc=<n>` and CSV rows, then `# apps` and the compute processes on the GPUs when it started |

With `--burn-in` the run before the soak is `perf.before.*`, the run after it `perf.after.*`. A bundle given a
saved tool output (`perf.run.out` with `{"tests": ["nccl"]}` and `perf.nccl.out`) replays and is judged.

## Building a bundle by hand

```sh
mkdir -p mybundles/node07 && cd mybundles/node07
uname -r > meta.uname_r.out
cat /proc/modules > modules.proc.out
nvidia-smi -q -x > smi.qx.out; echo $? > smi.qx.rc
dkms status > dkms.status.out 2> dkms.status.err; echo $? > dkms.status.rc
# ... any other key from the table above, in the format the table describes
cd ../.. && nodegate --replay mybundles
```
"""


def render() -> str:
    rows = []
    for key, (cmd, what) in ITEMS.items():
        cmd = cmd.replace("|", "\\|")
        rows.append(f"| `{key}` | `{cmd}` | {what} |")
    esc = lambda t: t.replace("|", "\\|")  # noqa: E731
    alt = [f"| `{a.key}` | `{esc(a.command)}` | `{a.stands_for}` | {esc(a.serves)} | {esc(a.cannot)} |"
           if a.stands_for.count(" ") == 0 else
           f"| `{a.key}` | `{esc(a.command)}` | {esc(a.stands_for)} | {esc(a.serves)} | {esc(a.cannot)} |"
           for a in ALTERNATIVE_KEYS.values()]
    br = [f"| `{src.key}` | " + "<br>".join(f"`{esc(f)}`" for f in src.forms) + f" | {esc(src.note)} |"
          for src in SOURCES]
    ver = [f"| {v} | {esc(t)} |" for v, t in VERSIONS.items()]
    cap = str(DEFAULT_ITEM_CAP // (1024 * 1024))
    return (HEAD.replace("CAP_MIB", cap) + "\n".join(rows) + "\n"
            + ALT_HEAD + "\n".join(alt) + "\n" + BR_HEAD + "\n".join(br) + "\n" + BR_VERSIONS + "\n".join(ver)
            + "\n" + TAIL.replace("CAP_MIB", cap))


if __name__ == "__main__":
    (ROOT / "docs" / "bundle.md").write_text(render())
