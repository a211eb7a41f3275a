#!/usr/bin/env bash
# device/run.sh: nodegate on a machine with an NVIDIA GPU, through NVML and through nvidia-smi,
# then the two fact sets compared field by field. For the lent H200 (root, repo copy, python3
# with nvidia-ml-py, no network) and any GPU node; docs/nvml.md "Running on a GPU machine".
#
#   Here, once (network):   device/fetch_wheels.sh            -> .whl/ (~12 MiB)
#   Device tool:            run(command="bash device/run.sh", carry=[".whl"], timeout_s=300)
#   Any GPU box with pip:   bash device/run.sh                 (no .whl/: a venv, pip install -e .)
#
# READ-ONLY on the GPU: only nvidia-smi queries (-q -x, --query-gpu, --version, -L) and NVML
# Get calls; never -pm/-r/-pl/-ac/-mig or anything that writes. Target well under 3 minutes.
# Results (8 files at most, flat): $OUT (else ./device-out)/ nvml-report.html nvml-junit.xml
# smi-report.html smi-junit.xml compare.txt compare.json bundles.tgz run.log
set -u
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-$PWD/device-out}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d /tmp/ng-device.XXXXXX)
LOG=$OUTDIR/run.log
PY=${PY:-python3}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

main() {

step "machine"
uname -a; id -un
nvidia-smi --version 2>&1 | head -n 8
nvidia-smi -L 2>&1 | head -n 16
$PY --version

step "python environment"
WHEELS=${WHEELS:-.whl}   # knobs for a dry run elsewhere: WHEELS=none NO_VENV=1 PY=.venv/bin/python
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  # no network (the lent H200): the wheels carried in .whl/, installed outside the repo
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$WORK/site" "$WHEELS"/*.whl || { echo "wheel install failed"; return 3; }
  export PYTHONPATH="$WORK/site:$PWD"
  echo "wheels from .whl -> $WORK/site"
elif [ -z "${NO_VENV:-}" ] && timeout 150 $PY -m venv --system-site-packages "$WORK/venv" \
     && timeout 150 "$WORK/venv/bin/python" -m pip install -q -e . ; then
  # network: the project and its pinned dependencies in a throw-away venv
  PY="$WORK/venv/bin/python"
  export PYTHONPATH="$PWD" PATH="$WORK/venv/bin:$PATH"   # the probe's python3 = this venv
  echo "venv $WORK/venv with pip install -e ."
else
  export PYTHONPATH="$PWD"
  echo "no .whl and no network: relying on what $PY already has"
fi
# The image's own pytest plugins stay out (their versions are unknown); load what we use.
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
PLUG=()
if $PY -c "import xdist.plugin" 2>/dev/null; then PLUG+=(-p xdist.plugin); fi
if $PY -c "import pytest_html, pytest_metadata" 2>/dev/null; then
  PLUG+=(-p pytest_metadata.plugin -p pytest_html.plugin)
fi
$PY - <<'EOF' || { echo "imports failed: see above"; return 3; }
import importlib, sys
for m in ("pytest", "pynvml", "defusedxml", "pydantic", "yaml", "paramiko", "testinfra",
          "nodegate.run", "nodegate.nvml", "nodegate.plugins.nodegate_plugin"):
    mod = importlib.import_module(m)
    print("%-24s %s" % (m, getattr(mod, "__version__", "") or getattr(mod, "__file__", "")))
EOF

step "NVML probe script alone (the same text the probe sends)"
timeout 60 $PY -B nodegate/nvml/probe_nvml.py > "$WORK/nvml_direct.json"; echo "rc=$?"
head -c 600 "$WORK/nvml_direct.json"; echo

run_suite() {  # $1 = nvml | smi
  local src=$1 d="$WORK/$1"
  mkdir -p "$d"
  local html=()
  [ ${#PLUG[@]} -gt 0 ] && html=(--html "$d/report.html" --self-contained-html)
  step "nodegate suites, --gpu-source $src"
  timeout 150 $PY -m pytest suites -p no:cacheprovider ${PLUG[@]+"${PLUG[@]}"} --target local:// \
      --gpu-source "$src" --reports-dir "$d" --bundles-dir "$d/bundles" \
      --junitxml "$d/junit.xml" ${html[@]+"${html[@]}"} -q -rA 2>&1 | tail -n 60
  echo "pytest exit (--gpu-source $src): ${PIPESTATUS[0]}"   # checks may FAIL on this node
  cp "$d/junit.xml" "$OUTDIR/$src-junit.xml" 2>/dev/null
  cp "$d/report.html" "$OUTDIR/$src-report.html" 2>/dev/null
}
run_suite nvml
run_suite smi

step "compare NVML vs nvidia-smi facts"
$PY device/compare.py "$WORK/nvml/bundles" "$WORK/smi/bundles" "$OUTDIR/compare"
crc=$?
echo "compare exit: $crc (0 = identical on every static field both carry)"

tar -czf "$OUTDIR/bundles.tgz" -C "$WORK" nvml/bundles smi/bundles nvml_direct.json 2>/dev/null
step "done; files in $OUTDIR:"
ls -la "$OUTDIR"
return $crc
}

# a pipeline, not `exec > >(tee)`: run.log is complete when this script returns
main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
