#!/usr/bin/env bash
# device/accept.sh: nodegate's whole local acceptance on a machine with an NVIDIA GPU, in one go:
#   1. the probe suites on local:// (no phase);
#   2. --perf --burn-in WINDOW on local:// (perf before, burn-in with a real bf16 load, perf after;
#      perf tests: the built-in PyTorch measurement plus every external tool, each missing tool
#      an ERROR naming it);
#   3. --replay of the bundles that run wrote (no phase option: replay judges what the bundles hold).
# READ-ONLY on the GPU settings: nvidia-smi queries, NVML Get calls, PyTorch allocations of its own.
#   Here, once (network):  device/fetch_wheels.sh   -> .whl/
#   Device tool:           run(command="bash device/accept.sh", carry=[".whl"], timeout_s=420)
# Results in $OUT (else ./device-out), flat, 8 files at most: accept.log, results-*.jsonl,
# junit-perf.xml, report-perf.html, bundles.tgz (raw evidence: kept out of git).
set -u
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-$PWD/device-out}
mkdir -p "$OUTDIR"
WORK=$(mktemp -d /tmp/ng-accept.XXXXXX)
PY=${PY:-python3}
BURN=${BURN:-60s}
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

main() {
step "machine"
uname -a; nvidia-smi -L 2>&1 | head -n 16; nvidia-smi --version 2>&1 | head -n 4
for t in nvbandwidth all_reduce_perf dcgmi gpu_burn ib_write_bw ib_send_bw mpirun srun ibstat iblinkinfo \
         ibnetdiscover dcgmproftester12 dcgmproftester13 numactl modinfo lsmod lspci; do
  printf '%-18s %s\n' "$t" "$(command -v $t || echo -)"; done
ls /sys/class/infiniband 2>&1 | head

step "python environment"
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl \
    || { echo "wheel install failed"; return 3; }
  export PYTHONPATH="$WORK/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
PLUG=(-p pytest_metadata.plugin -p pytest_html.plugin)
$PY -c 'import torch, pynvml, ansible, nodegate.plugins.nodegate_plugin as p; print("torch", torch.__version__, torch.cuda.is_available())' || return 3

cat > "$WORK/inventory.yml" <<INV
all:
  hosts:
    gpu-node:
      ansible_connection: local
      nodegate:
        perf:
          tests: [builtin, nvbandwidth, nccl, gpu_burn, dcgmi, ib_write_bw]
          python: "$PY"
          builtin_seconds: 3
        burnin:
          load: command
          command: "$PY $PWD/device/burnin_matmul.py --seconds {seconds}"
          interval_s: 2
INV

step "1. probe suites, local://"
timeout 150 $PY -m pytest suites -p no:cacheprovider "${PLUG[@]}" --inventory "$WORK/inventory.yml" \
   --reports-dir "$WORK/r1" -q -rN --tb=no 2>&1 | tail -n 25
echo "exit ${PIPESTATUS[0]}"; cp "$WORK/r1/results.jsonl" "$OUTDIR/results-probe.jsonl" 2>/dev/null

step "2. --perf --burn-in $BURN, local://"
timeout 360 $PY -m pytest suites -p no:cacheprovider "${PLUG[@]}" --inventory "$WORK/inventory.yml" \
   --perf --burn-in "$BURN" --reports-dir "$WORK/r2" -q -rN --tb=line 2>&1 | tail -n 60
echo "exit ${PIPESTATUS[0]}"
cp "$WORK/r2/results.jsonl" "$OUTDIR/results-perf.jsonl" 2>/dev/null
cp "$WORK/r2/junit.xml" "$OUTDIR/junit-perf.xml" 2>/dev/null
cp "$WORK/r2/report.html" "$OUTDIR/report-perf.html" 2>/dev/null
for k in perf.before.builtin perf.after.builtin; do
  f=$(ls "$WORK"/r2/bundles/*/"$k".out 2>/dev/null | head -n1); [ -n "$f" ] && { echo "-- $k"; tail -c 3000 "$f"; echo; }
done

step "3. --replay of those bundles (no phase option)"
timeout 120 $PY -m pytest suites -p no:cacheprovider --replay "$WORK/r2/bundles" --reports-dir "$WORK/r3" \
   -q -rN --tb=no 2>&1 | tail -n 15
echo "exit ${PIPESTATUS[0]}"
cp "$WORK/r3/results.jsonl" "$OUTDIR/results-replay.jsonl" 2>/dev/null
tar -C "$WORK" -czf "$OUTDIR/bundles.tgz" r1/bundles r2/bundles 2>/dev/null
if pgrep -f burnin_matmul.py >/dev/null; then echo "LOAD STILL RUNNING"; pgrep -af burnin_matmul.py; fi
step "done"; ls -la "$OUTDIR"
}
main 2>&1 | tee "$OUTDIR/accept.log"
exit "${PIPESTATUS[0]}"
