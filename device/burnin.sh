#!/usr/bin/env bash
# device/burnin.sh: a short nodegate burn-in on a machine with an NVIDIA GPU, real load:
# device/burnin_matmul.py (PyTorch bf16 matmuls) as the spec's `command` load, sampled every 2 s.
# The lead runs it once at the end (device tool), e.g.:
#   run(command="bash device/burnin.sh", carry=[".whl"], timeout_s=300)
# READ-ONLY on the GPU settings: only nvidia-smi --query-gpu / dmesg reads while the load runs.
# Needs python3 with torch (the device's) and nodegate's dependencies (.whl/ as device/run.sh, or
# an installed venv). Duration: BURN=60s by default (total well under 3 minutes).
# Results in $OUT (else ./device-out): burnin-report.html burnin-junit.xml burnin-bundles.tgz
# burnin.log burnin-svg.html
set -u
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-$PWD/device-out}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d /tmp/ng-burnin.XXXXXX)
PY=${PY:-python3}
BURN=${BURN:-60s}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
exec > >(tee "$OUTDIR/burnin.log") 2>&1

echo "== machine"; uname -a; nvidia-smi -L 2>&1 | head -n 16
$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.device_count())'

WHEELS=${WHEELS:-.whl}
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$WORK/site" "$WHEELS"/*.whl \
    || { echo "wheel install failed"; exit 3; }
  export PYTHONPATH="$WORK/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi

# The load runs where nodegate runs (local://): the command names this python and script.
cat > "$WORK/inventory.yml" <<INV
all:
  hosts:
    gpu-node:
      ansible_connection: local
      nodegate:
        burnin:
          load: command
          command: "$PY $PWD/device/burnin_matmul.py --seconds {seconds}"
          interval_s: 2
          grace_s: 20
INV

# The image's own pytest plugins stay out (unknown versions): load exactly what we use.
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
PLUG=(-p pytest_metadata.plugin -p pytest_html.plugin)
echo "== burn-in $BURN"
$PY -m pytest suites/test_burnin.py "${PLUG[@]}" --burn-in "$BURN" \
   --inventory "$WORK/inventory.yml" --reports-dir "$WORK/reports" -p no:cacheprovider -q -rA \
   --html "$OUTDIR/burnin-report.html" --self-contained-html --junitxml "$OUTDIR/burnin-junit.xml"
rc=$?
echo "pytest exit $rc"
tar -C "$WORK/reports" -czf "$OUTDIR/burnin-bundles.tgz" bundles 2>/dev/null
$PY - "$WORK/reports/bundles" "$OUTDIR/burnin-svg.html" <<'PYEOF'
import sys
from pathlib import Path
from nodegate.bundle import Bundle, discover
from nodegate.burnin import svg_for_node
parts = [f"<h2>{Bundle.load(d).node}</h2>" + svg_for_node(Bundle.load(d)) for d in discover(Path(sys.argv[1]))]
Path(sys.argv[2]).write_text("<html><body>" + "\n".join(parts) + "</body></html>")
PYEOF
# leave the node as it was: no load may survive us
if pgrep -f burnin_matmul.py >/dev/null; then echo "LOAD STILL RUNNING"; pgrep -af burnin_matmul.py; fi
rm -rf "$WORK"
exit $rc
