# nodegate burn-in (POSIX sh: dash, bash, busybox ash). Writes nothing on the node; only the load
# itself may. Sent on stdin to `sh -s` in ONE remote exec; the controller fills the @@...@@ fields.
#
# Processes: main (this shell) -> runner (command substitution: starts the load, then the
# sampler, waits for the load) -> load (own session via setsid: pid = process group id) and
# sampler (the only writer to stdout while the load runs; also the watchdog).
#
# Output framing (one line each; M = per-run random marker the node cannot predict):
#   M BEGIN <key> <uptime> <epoch>  ...stdout...  \nM END <key> rc=<n> <uptime>    (as the probe)
#   M ERR <key> ...stderr... M ERREND <key>
#   M HB <epoch>                 heartbeat, every second while the load runs
#   M EV <name> <epoch> [k=v]... events: start, load-start, stop, interrupted, load-exit
#   M DONE
# Stopping: the window ends when the load exits or at the deadline (dcgmi: the duration; other
# loads: duration + grace): the sampler sends NG_SIGS to the load's process group, one signal per
# NG_KILL seconds. Interrupted (TERM/INT/HUP, or stdout gone: a heartbeat write fails because the
# controller closed the channel; sshd sends no SIGHUP to a session without a pty) or main shell
# gone: the sampler stops the load the same way, at once, and exits.
NG_DUR=@@DURATION@@
NG_LOAD=@@LOAD@@
NG_GPUBURN=@@GPUBURN@@
NG_GPUBURN_ARGS=@@GPUBURN_ARGS@@
NG_CMD=@@COMMAND@@
NG_DCGM_LEVEL=@@DCGM_LEVEL@@
NG_GRACE=@@GRACE@@
# M, NG_INT, NG_KILL, NG_TMO, NG_CAP, PATH; ng_up, ng_now, ng_ev, ng_to, ng_have, ng_item, ng_fail,
# ng_heartbeats, ng_sampler_exit, ng_wait_tool, ng_end_sampler, ng_exit_traps: nodegate/phase/prelude.sh
@@PRELUDE@@

# ---------------------------------------------------------------- what to run
ng_pick() {
  case "$NG_LOAD" in
    auto)
      if ng_have dcgmi; then NG_KIND=dcgmi
      elif ng_have "$NG_GPUBURN"; then NG_KIND=gpu-burn
      elif [ -n "$NG_CMD" ]; then NG_KIND=command
      else NG_KIND=; NG_WHY="no load available: dcgmi not found, $NG_GPUBURN not found, no burnin.command in the spec"; fi ;;
    dcgmi) if ng_have dcgmi; then NG_KIND=dcgmi; else NG_KIND=; NG_WHY="burnin.load is dcgmi but dcgmi is not installed (not in PATH)"; fi ;;
    gpu-burn) if ng_have "$NG_GPUBURN"; then NG_KIND=gpu-burn; else NG_KIND=; NG_WHY="burnin.load is gpu-burn but $NG_GPUBURN is not installed (not in PATH)"; fi ;;
    command) NG_KIND=command ;;
    *) NG_KIND=; NG_WHY="unknown burnin.load $NG_LOAD" ;;
  esac
  if ng_have setsid; then NG_SETSID=setsid; else NG_SETSID=; fi
  # sh starts background jobs with SIGINT/SIGQUIT ignored (POSIX, no job control); coreutils env
  # can give the load the default back, so that a SIGINT handler (dcgmi's) is reachable.
  if env --default-signal=INT true >/dev/null 2>&1; then NG_ENVSIG="env --default-signal=INT,QUIT"; else NG_ENVSIG=; fi
  case "$NG_KIND" in
    dcgmi) NG_SIGS="INT TERM KILL"; NG_STOP_AT=$NG_DUR ;;
    *) NG_SIGS="TERM KILL"; NG_STOP_AT=$((NG_DUR + NG_GRACE)) ;;
  esac
}

ng_f_tools() {
  printf 'load: %s\n' "${NG_KIND:-none}"
  printf 'requested: %s\n' "$NG_LOAD"
  for t in dcgmi "$NG_GPUBURN" nvidia-smi setsid timeout dmesg journalctl; do
    printf 'tool %s: %s\n' "$t" "$(command -v "$t" 2>/dev/null)"
  done
  printf 'duration_s: %s\ninterval_s: %s\nstop_at_s: %s\nsignals: %s\n' "$NG_DUR" "$NG_INT" "$NG_STOP_AT" "$NG_SIGS"
  [ -n "$NG_KIND" ] || ng_fail "$NG_WHY" 127
}

# Fields: the full list in one call when the driver knows every name; else name by name,
# taking the first alternative (a|b) that nvidia-smi accepts (old drivers: throttle names, no
# counters, no T.Limit). nvidia-smi answers an unknown name with 'Field "x" is not a valid field'.
NG_WANT='timestamp index pci.bus_id pstate clocks_event_reasons.active|clocks_throttle_reasons.active
pcie.link.gen.current pcie.link.width.current temperature.gpu temperature.gpu.tlimit power.draw clocks.sm
utilization.gpu ecc.errors.uncorrected.volatile.total ecc.errors.corrected.volatile.total
remapped_rows.correctable remapped_rows.uncorrectable remapped_rows.pending
clocks_event_reasons_counters.sw_power_cap clocks_event_reasons_counters.sw_thermal_slowdown
clocks_event_reasons_counters.hw_thermal_slowdown clocks_event_reasons_counters.hw_power_brake_slowdown'
ng_f_fields() {
  ng_all=
  for g in $NG_WANT; do ng_all="$ng_all,${g%%|*}"; done
  ng_all=${ng_all#,}
  if ng_to nvidia-smi --query-gpu="$ng_all" --format=csv,noheader,nounits >/dev/null 2>&1; then
    echo "$ng_all"; return 0
  fi
  ng_got=
  for g in $NG_WANT; do
    ng_alts=$(printf '%s' "$g" | tr '|' ' ')
    for f in $ng_alts; do
      ng_r=$(ng_to nvidia-smi --query-gpu="index,$f" --format=csv,noheader,nounits 2>&1); ng_rc=$?
      if [ "$ng_rc" -eq 0 ]; then ng_got="$ng_got,$f"; break; fi
      case "$ng_r" in *"not a valid field"*|*"nvalid"*) continue ;; esac
      printf '%s\n' "$ng_r" | head -n 5 >&2
      return "$ng_rc"
    done
  done
  # Every name refused (an nvidia-smi answering "Invalid combination of input arguments" to any
  # query also matches *nvalid*): no field means no sample and no load, so say why here, in
  # burnin.fields, instead of an empty field list and items that only read "burnin.samples not
  # collected" (found running --perf --burn-in on the simulated fleet, tests/perf/test_perf_burnin.py).
  if [ -z "$ng_got" ]; then
    printf 'nvidia-smi accepted none of the sample fields; its answer to index,%s: %s\n' "$f" "$ng_r" | head -n 3
    return 1
  fi
  echo "${ng_got#,}"
}

ng_f_klog() {
  # NVRM/Xid lines; dmesg (may need root: kernel.dmesg_restrict), else the kernel journal.
  if ng_have dmesg; then
    ng_log=$(dmesg 2>&1); ng_lrc=$?
    if [ $ng_lrc -eq 0 ]; then
      echo "# source: dmesg"
      printf '%s\n' "$ng_log" | grep -iE 'nvrm|xid|fallen off|nvidia' | tail -n 2000
      return 0
    fi
    printf 'dmesg: %s\n' "$ng_log" | head -n 3 >&2
  fi
  if ng_have journalctl; then
    ng_log=$(journalctl -k -b --no-pager -o short-iso 2>&1); ng_lrc=$?
    if [ $ng_lrc -eq 0 ]; then
      echo "# source: journalctl -k -b"
      printf '%s\n' "$ng_log" | grep -iE 'nvrm|xid|fallen off|nvidia' | tail -n 2000
      return 0
    fi
    printf 'journalctl: %s\n' "$ng_log" | head -n 3 >&2
  fi
  return 1
}

ng_sample() { ng_item "$1" ng_to nvidia-smi --query-gpu="$NG_Q" --format=csv,noheader,nounits; }

# ---------------------------------------------------------------- stopping the load
# With setsid the load leads its own process group: signal the group. Without setsid, the load
# process itself (its children then get SIGPIPE when its output pipe closes).
ng_sig_load() {
  if [ -n "$NG_SETSID" ]; then kill "-$1" "-$ng_lp" 2>/dev/null || kill "-$1" "$ng_lp" 2>/dev/null
  else kill "-$1" "$ng_lp" 2>/dev/null; fi
}

ng_stop_now() {  # synchronous: every signal in turn until the load is gone
  for ng_s in $NG_SIGS; do
    kill -0 "$ng_lp" 2>/dev/null || return 0
    ng_sig_load "$ng_s"
    ng_i=0
    while [ "$ng_i" -lt "$NG_KILL" ] && kill -0 "$ng_lp" 2>/dev/null; do sleep 1; ng_i=$((ng_i + 1)); done
  done
}

# ---------------------------------------------------------------- sampler (and watchdog)
ng_sampler() {
  ng_lp=$1; ng_seq=0; ng_stop=; ng_abort=; ng_sigi=0; ng_sig_at=
  trap 'ng_stop=1' USR1
  trap 'ng_abort=signal' TERM INT HUP
  trap 'ng_abort=stdout-closed' PIPE
  while [ -z "$ng_stop$ng_abort" ]; do
    ng_seq=$((ng_seq + 1))
    ng_sample "sample.$ng_seq"
    ng_due=$((NG_T0 + ng_seq * NG_INT))
    ng_heartbeats
  done
  ng_sampler_exit ""
}

ng_deadline() {  # non-blocking: at the deadline, then every NG_KILL s, the next signal
  if [ -z "$ng_sig_at" ]; then
    [ $(($1 - NG_T0)) -ge "$NG_STOP_AT" ] || return 0
    ng_ev stop "reason=deadline elapsed_s=$(($1 - NG_T0))"
  elif [ $(($1 - ng_sig_at)) -lt "$NG_KILL" ]; then
    return 0
  fi
  ng_sigi=$((ng_sigi + 1))
  ng_s=$(echo $NG_SIGS | cut -d' ' -f"$ng_sigi")
  [ -n "$ng_s" ] || return 0
  kill -0 "$ng_lp" 2>/dev/null && ng_sig_load "$ng_s"
  ng_sig_at=$1
}

# ---------------------------------------------------------------- runner
# stdout = the pipe main reads (the load's output tail, then 'M RC <rc>'). tail ignores
# TERM/INT/HUP so the output survives a stop; it ends when the load's output closes.
ng_runner() {
  ng_int=
  trap 'ng_int=1' TERM INT HUP
  { ng_launch 2>&1; } | { trap '' TERM INT HUP; exec tail -c "$NG_OUTCAP"; }
}

# The window is the window (issue 37.6): a load that ends with exit 0 before the window is spent
# (dcgmi's diagnostic is done, a site command returns) is started again until it is; gpu_burn is
# given the seconds that remain. One load ending non-zero ends the loop with its status. The loop
# runs in the load's own session (setsid), so a stop signals the loop and the running load at once;
# without setsid the loop forwards the signal. After each run it prints one line
#   NODEGATE-BURNIN-RUN <n> rc=<rc> seconds=<s>
# into the load's output: the dcgmi parser splits runs on it and the load item counts them (the
# load could print such a line too: it is output, never a verdict; the window's timing comes from
# this script's events). A run shorter than a second is followed by a 1 s pause: at most one run a
# second, whatever the load does.
NG_LOOP='ng_end=$1; ng_tail=$2; ng_fwd=$3; shift 3; ng_n=0; ng_c=
ng_sig() { if [ -n "$ng_c" ]; then [ "$ng_fwd" = 1 ] && kill "-$1" "$ng_c" 2>/dev/null; wait "$ng_c"; exit $?; fi; exit "$2"; }
trap "ng_sig TERM 143" TERM; trap "ng_sig INT 130" INT; trap "ng_sig HUP 129" HUP
while :; do
  ng_n=$((ng_n + 1)); ng_s=$(date +%s)
  if [ "$ng_tail" = 1 ]; then "$@" "$((ng_end - ng_s))" </dev/null & else "$@" </dev/null & fi
  ng_c=$!; wait "$ng_c"; ng_rc=$?; ng_c=
  ng_e=$(date +%s)
  printf "\nNODEGATE-BURNIN-RUN %s rc=%s seconds=%s\n" "$ng_n" "$ng_rc" "$((ng_e - ng_s))"
  [ "$ng_rc" -eq 0 ] || exit "$ng_rc"
  [ $((ng_end - ng_e)) -ge 1 ] || exit 0
  [ $((ng_e - ng_s)) -ge 1 ] || sleep 1
done'

ng_launch() {
  trap 'ng_int=1' TERM INT HUP
  ng_end=$((NG_T0 + NG_DUR))
  if [ -n "$NG_SETSID" ]; then ng_fwd=0; else ng_fwd=1; fi
  case "$NG_KIND" in
    dcgmi) $NG_SETSID $NG_ENVSIG sh -c "$NG_LOOP" ng-load "$ng_end" 0 "$ng_fwd" $NG_ENVSIG dcgmi diag -r "$NG_DCGM_LEVEL" -j </dev/null 6>&- 5>&- & ;;
    gpu-burn) eval "set -- $NG_GPUBURN_ARGS"; $NG_SETSID $NG_ENVSIG sh -c "$NG_LOOP" ng-load "$ng_end" 1 "$ng_fwd" $NG_ENVSIG "$NG_GPUBURN" "$@" </dev/null 6>&- 5>&- & ;;
    command) $NG_SETSID $NG_ENVSIG sh -c "$NG_LOOP" ng-load "$ng_end" 0 "$ng_fwd" $NG_ENVSIG sh -c "$NG_CMD" </dev/null 6>&- 5>&- & ;;
  esac
  ng_lp=$!
  ng_ev load-start "pid=$ng_lp setsid=${NG_SETSID:-no}" >&5
  ng_sampler "$ng_lp" >&5 2>&6 &
  ng_sp=$!
  [ -n "$ng_int" ] && kill -TERM "$ng_sp" 2>/dev/null
  ng_wait_tool
  ng_ev load-exit "rc=$ng_lrc" >&5
  ng_end_sampler
  printf '\n%s RC %s\n' "$M" "$ng_lrc"
}

ng_f_output() { printf '%s' "$ng_out"; return "$ng_lrc"; }

ng_exit_traps

# ---------------------------------------------------------------- main
NG_T0=$(ng_now)
NG_BURNIN_T0=$NG_T0
NG_BURNIN_SECONDS=$NG_DUR
export NG_BURNIN_T0 NG_BURNIN_SECONDS
ng_ev start "duration_s=$NG_DUR interval_s=$NG_INT uptime=$(ng_up)"
ng_pick
ng_item burnin.tools ng_f_tools
if [ -z "$NG_KIND" ]; then printf '%s DONE\n' "$M"; exit 0; fi
if ng_have nvidia-smi; then
  NG_Q=$(ng_f_fields 2>&1; echo "$M RC $?")
  NG_QRC=${NG_Q##*"$M RC "}
  NG_Q=${NG_Q%"$M RC "*}
  NG_Q=$(printf '%s' "$NG_Q" | head -n 5)
else
  NG_QRC=127; NG_Q="nvidia-smi: command not found"
fi
ng_f_fieldsout() { if [ "$NG_QRC" -eq 0 ]; then echo "$NG_Q"; else ng_fail "$NG_Q" "$NG_QRC"; fi; }
ng_item burnin.fields ng_f_fieldsout
if [ "$NG_QRC" -ne 0 ] || [ -z "$NG_Q" ]; then printf '%s DONE\n' "$M"; exit 0; fi
ng_item burnin.klog_start ng_f_klog
ng_sample sample.0
if [ "$NG_KIND" = dcgmi ]; then NG_OUTCAP=4194304; else NG_OUTCAP=65536; fi
NG_T0=$(ng_now)
ng_out=$(ng_runner)
ng_lrc=${ng_out##*"$M RC "}
ng_out=${ng_out%"$M RC "*}
case "$ng_lrc" in ''|*[!0-9]*) ng_lrc=255 ;; esac
ng_item burnin.load ng_f_output
ng_sample sample.end
ng_item burnin.klog_end ng_f_klog
printf '%s DONE\n' "$M"
