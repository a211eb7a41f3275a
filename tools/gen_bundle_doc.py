"""Generate docs/bundle.md from nodegate.probe.ITEMS (a test keeps them in step)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodegate.probe import DEFAULT_ITEM_CAP, ITEMS  # noqa: E402

HEAD = """# Bundle format

A bundle is the raw evidence of one node, gathered by ONE exec of the probe
(`nodegate/probe/probe.sh`, POSIX sh: dash, bash, busybox ash; read-only; no root needed,
`--sudo` optional). Bundles are what checks evaluate: `pytest --replay DIR` evaluates every bundle
under DIR with no network, and a person can build one by hand from command outputs.

## Layout

```
<bundles>/<node>/meta.json      node, target (password redacted), probe_version, started_at, finished_at,
                                gather_s, connect_s, exec_s, complete, status, error, cut_at, cut_reason,
                                stream_capped, spec, items{}
<bundles>/<node>/<key>.out      stdout of the item, byte-exact (capped at CAP_MIB MiB per item)
<bundles>/<node>/<key>.err      stderr of the item (only when not empty)
<bundles>/<node>/<key>.rc       exit code when not 0 (no file: 0); without one: `timeout` (the controller's deadline cut the item), `truncated` (output past the per-item cap) or `malformed`
```

- `meta.json` `status` is `ok` when the probe ran. Otherwise it names the gather failure
  (`hostkey-unknown`, `hostkey-changed`, `auth`, `refused`, `dns`, `timeout`, `unreachable`, `ssh`,
  `probe-failed`, or `missing`: written by `nodegate-collect --missing REASON` for a node whose scheduler
  task never ran) and `error` carries the message; every check of that node is ERROR with it.
- `spec` is the node's `nodegate:` spec at gather time; `--replay` uses it when no inventory is given.
- A hand-built bundle needs only `<key>.out` files (rc defaults to 0). Any item may be missing: the
  checks that need it report ERROR "evidence not collected: KEY"; nothing passes on missing evidence.
- Exit code 127 means the tool is missing on the node (ERROR "tool missing"), 124 a node-side timeout.
- Items larger than the cap are marked truncated and are not evaluated (ERROR).

## Evidence keys

| key | command on the node | what it is |
|---|---|---|
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
| `meta.json` `site.results` | `{"<check id>[<params>]": {"check_id", "outcome", "title", "message"}}`: the site checks' outcomes, compared by `--baseline` |

A command a site test runs on `--replay` is answered from `site.commands` (the k-th run of a command gets
its k-th recording); one that is not there is ERROR "not recorded in the bundle: <command>".

## Building a bundle by hand

```sh
mkdir -p mybundles/node07 && cd mybundles/node07
uname -r > meta.uname_r.out
cat /proc/modules > modules.proc.out
nvidia-smi -q -x > smi.qx.out; echo $? > smi.qx.rc
dkms status > dkms.status.out 2> dkms.status.err; echo $? > dkms.status.rc
# ... any other key from the table above, in the format the table describes
cd ../.. && pytest --replay mybundles
```
"""


def render() -> str:
    rows = []
    for key, (cmd, what) in ITEMS.items():
        cmd = cmd.replace("|", "\\|")
        rows.append(f"| `{key}` | `{cmd}` | {what} |")
    cap = str(DEFAULT_ITEM_CAP // (1024 * 1024))
    return HEAD.replace("CAP_MIB", cap) + "\n".join(rows) + "\n" + TAIL.replace("CAP_MIB", cap)


if __name__ == "__main__":
    (ROOT / "docs" / "bundle.md").write_text(render())
