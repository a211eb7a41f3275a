# nodegate performance phase (POSIX sh: dash, bash, busybox ash). Writes nothing on the node and
# changes no setting (no clocks, no -pm, no power limit); only the tools themselves run. Sent on
# stdin to `sh -s` in ONE remote exec; the controller fills the @@...@@ fields (docs/perf.md).
#
# Per test, in the spec's order: `<key>.apps` (compute processes on the GPUs before it starts),
# the tool in its own session (setsid) with its output kept in memory (capped), a sampler writing
# `<key>.sample.<n>` (nvidia-smi --query-gpu) every NG_INT seconds and a heartbeat every second,
# then `<key>` with the tool's output exactly as printed and its exit status.
# Framing as the probe and burn-in: M BEGIN/END/ERR/ERREND, M HB <epoch>, M EV <name> <epoch> k=v,
# M DONE. The deadline of each test (NG_TMO_TEST) and a closed channel (Ctrl-C on the controller:
# a heartbeat write fails) stop the tool's process group: TERM, then KILL NG_KILL s later.
NG_PREFIX=@@PREFIX@@
NG_HCAS=@@HCAS@@
# M, NG_INT, NG_KILL, NG_TMO, NG_CAP, PATH; ng_up, ng_now, ng_ev, ng_to, ng_have, ng_item, ng_fail,
# ng_heartbeats, ng_sampler_exit, ng_wait_tool, ng_end_sampler, ng_exit_traps: nodegate/phase/prelude.sh
@@PRELUDE@@
PATH="$PATH:/usr/local/cuda/bin"
if ng_have setsid; then NG_SETSID=setsid; else NG_SETSID=; fi

# GPU state fields; drivers before 535 name the reasons clocks_throttle_reasons.
NG_Q='@@STATE_FIELDS@@'
NG_GPUS=0
if ng_have nvidia-smi; then
  if ! ng_to nvidia-smi --query-gpu="$NG_Q" --format=csv,noheader,nounits >/dev/null 2>&1; then
    NG_Q=$(printf '%s' "$NG_Q" | sed 's/clocks_event_reasons/clocks_throttle_reasons/')
  fi
  NG_GPUS=$(ng_to nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
export NG_GPUS
ng_apps() { ng_to nvidia-smi @@APPS_QUERY@@; }
ng_sample() { ng_item "$1" ng_to nvidia-smi --query-gpu="$NG_Q" --format=csv,noheader,nounits; }

# The tool's process tree from /proc (pid, then children by ppid): without setsid (busybox-only
# userlands; `set -m` needs a terminal) a child left behind (one ignoring TERM) would hold the
# output pipe open and the test never end, so every process of the tree is signalled.
ng_desc() {
  ng_all=$1; ng_new=$1
  while [ -n "$ng_new" ]; do
    ng_next=
    for ng_f in /proc/[0-9]*/stat; do
      ng_l=$(cat "$ng_f" 2>/dev/null) || continue
      ng_r=${ng_l##*) }; set -- $ng_r
      for ng_p in $ng_new; do [ "$2" = "$ng_p" ] && ng_next="$ng_next ${ng_l%% *}"; done
    done
    ng_all="$ng_all$ng_next"; ng_new=$ng_next
  done
  echo "$ng_all"
}
ng_sig_tool() {  # ng_sig_tool SIGNAL: the group (setsid) and every process of the recorded tree
  [ -n "$NG_SETSID" ] && kill "-$1" "-$ng_lp" 2>/dev/null
  kill "-$1" $ng_tree 2>/dev/null
}
ng_alive() {  # a zombie (dead, not yet reaped: PID 1 of a container may never reap) counts as gone
  for ng_p in $ng_tree; do
    kill -0 "$ng_p" 2>/dev/null || continue
    ng_l=$(cat "/proc/$ng_p/stat" 2>/dev/null) || return 0
    ng_l=${ng_l##*) }
    [ "${ng_l%% *}" = Z ] || return 0
  done
  return 1
}
ng_stop_now() {  # synchronous: TERM, then KILL NG_KILL s later, to the whole tree
  ng_tree="$ng_lp $(ng_desc "$ng_lp")"
  for ng_s in TERM KILL; do
    ng_alive || return 0
    ng_sig_tool "$ng_s"
    ng_i=0
    while [ "$ng_i" -lt "$NG_KILL" ] && ng_alive; do sleep 1; ng_i=$((ng_i + 1)); done
  done
}

# sampler and watchdog of one test: samples, heartbeats, the deadline, a closed channel
ng_sampler() {
  ng_lp=$1; ng_key=$2; ng_tmo=$3; ng_seq=0; ng_stop=; ng_abort=; ng_sig_at=
  trap 'ng_stop=1' USR1
  trap 'ng_abort=signal' TERM INT HUP
  trap 'ng_abort=stdout-closed' PIPE
  ng_first=1
  while [ -n "$ng_first" ] || [ -z "$ng_stop$ng_abort" ]; do
    ng_first=
    ng_seq=$((ng_seq + 1))
    # the first sample is taken even when the tool already ended: every test has its state
    [ "$NG_GPUS" -gt 0 ] && ng_sample "$ng_key.sample.$ng_seq"
    ng_due=$(($(ng_now) + NG_INT))
    ng_heartbeats
  done
  ng_sampler_exit "key=$ng_key "
}

ng_deadline() {  # ng_deadline EPOCH: at the test's deadline, stop the tool (synchronous)
  if [ -z "$ng_sig_at" ] && [ $(($1 - NG_T0)) -ge "$ng_tmo" ]; then
    ng_ev stop "key=$ng_key reason=deadline elapsed_s=$(($1 - NG_T0))"
    ng_sig_at=$1
    trap '' USR1
    ng_stop_now
    trap 'ng_stop=1' USR1
    ng_alive || ng_stop=1   # the tool's exit (USR1) came while it was ignored
  fi
}

ng_launch() {  # ng_launch KEY TIMEOUT CMD: tool output on stdout, then 'M RC <rc>'
  ng_int=
  trap 'ng_int=1' TERM INT HUP
  $NG_SETSID sh -c "$3" </dev/null 6>&- 5>&- &
  ng_lp=$!
  ng_ev tool-start "key=$1 pid=$ng_lp setsid=${NG_SETSID:-no} uptime=$(ng_up)" >&5
  ng_sampler "$ng_lp" "$1" "$2" >&5 2>&6 &
  ng_sp=$!
  ng_wait_tool
  ng_ev tool-exit "key=$1 rc=$ng_lrc uptime=$(ng_up)" >&5
  # what the tool left behind in its group (a child ignoring TERM) would hold the pipe open
  if [ -n "$NG_SETSID" ] && kill -0 "-$ng_lp" 2>/dev/null; then
    kill -TERM "-$ng_lp" 2>/dev/null; sleep 1; kill -KILL "-$ng_lp" 2>/dev/null
  fi
  ng_end_sampler
  printf '%s RC %s\n' "$M" "$ng_lrc"   # no newline before: the output stays byte-exact
}

ng_out_item() { printf '%s' "$ng_out"; return "$ng_lrc"; }

# ng_test KEY BINARY TIMEOUT CMD: BINARY must exist (or, with a prefix, the prefix's runtime)
ng_test() {
  ng_tk=$1; ng_bin=$2
  if [ -n "$NG_PREFIX" ]; then ng_need=${NG_PREFIX%% *}; else ng_need=$ng_bin; fi
  if ! ng_have "$ng_need"; then
    ng_item "$ng_tk" ng_fail "$ng_need not found (not in PATH; set perf.tools or perf.prefix)" 127
    return 0
  fi
  ng_item "$ng_tk.apps" ng_apps
  NG_T0=$(ng_now)
  ng_out=$( { ng_launch "$ng_tk" "$3" "$4" 2>&1; } | { trap '' TERM INT HUP; exec tail -c "$NG_CAP"; } )
  ng_lrc=${ng_out##*"$M RC "}
  ng_out=${ng_out%"$M RC "*}
  case "$ng_lrc" in ''|*[!0-9]*) ng_lrc=255 ;; esac
  ng_item "$ng_tk" ng_out_item
}

# perftest loopback on every HCA (ib_write_bw, ib_read_bw, ib_send_bw and the _lat tools): server in
# the background, client to localhost, NUMA-bound to the HCA's node when numactl exists (perftest's
# own README runs the pair this way). Key: perf.<tool>.<hca>.
ng_ib_tests() {  # ng_ib_tests BINARY TIMEOUT ARGS USE_CUDA TOOL
  ng_hl=$NG_HCAS
  [ -n "$ng_hl" ] || ng_hl=$(ls /sys/class/infiniband 2>/dev/null)
  if [ -z "$ng_hl" ]; then ng_item "perf.$5" ng_fail "no HCA: /sys/class/infiniband is empty and perf.ib_hcas is not set" 127; return 0; fi
  ng_hi=0
  for ng_h in $ng_hl; do
    case "$ng_h" in *[!A-Za-z0-9_.-]*) continue ;; esac
    ng_numa=; ng_n=$(cat "/sys/class/infiniband/$ng_h/device/numa_node" 2>/dev/null)
    if ng_have numactl && [ -n "$ng_n" ] && [ "$ng_n" -ge 0 ] 2>/dev/null; then ng_numa="numactl --cpunodebind=$ng_n --membind=$ng_n"; fi
    ng_cuda=
    if [ "$4" = 1 ] && [ "$NG_GPUS" -gt 0 ]; then ng_cuda="--use_cuda=$((ng_hi % NG_GPUS))"; fi
    ng_c="$NG_PREFIX $ng_numa $1 -d $ng_h $3 $ng_cuda"
    ng_test "perf.$5.$ng_h" "$1" "$2" "$ng_c & sleep 2; $ng_c localhost; ng_r=\$?; wait; exit \$ng_r"
    ng_hi=$((ng_hi + 1))
  done
}

ng_exit_traps

ng_f_tools() {
  printf 'gpus: %s\nfields: %s\nprefix: %s\n' "$NG_GPUS" "$NG_Q" "$NG_PREFIX"
  for t in nvidia-smi setsid timeout numactl @@BINARIES@@; do printf 'tool %s: %s\n' "$t" "$(command -v "$t" 2>/dev/null)"; done
}

ng_ev start "uptime=$(ng_up) gpus=$NG_GPUS"
ng_item perf.tools ng_f_tools
@@TESTS@@
ng_ev end ""
printf '%s DONE\n' "$M"
