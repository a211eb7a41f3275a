# nodegate second-exec phases (burn-in, performance): the shell prelude both scripts share,
# spliced into each phase script where it names the prelude (nodegate.phase.script.template). POSIX sh.
# Fields every phase fills: MARKER, INTERVAL (sample interval, s), KILL (s between stop signals),
# TIMEOUT (ng_to's limit, s), CAP (per-item cap, bytes).
# Framing (as the probe): M BEGIN <key> <uptime> <epoch> ...stdout... \nM END <key> rc=<n> <uptime>,
# M ERR <key> ...stderr... M ERREND <key>; M HB <epoch>; M EV <name> <epoch> [k=v]...; M DONE.
M='@@MARKER@@'
NG_INT=@@INTERVAL@@
NG_KILL=@@KILL@@
NG_TMO=@@TIMEOUT@@
NG_CAP=@@CAP@@
PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/bin:/usr/local/nvidia/bin"
export PATH LC_ALL=C
exec 5>&1 6>&2
NG_MAIN=$$

ng_up() { ng_u=; read -r ng_u _ </proc/uptime 2>/dev/null; printf '%s' "${ng_u:-0}"; }
ng_now() { date +%s 2>/dev/null || echo 0; }
ng_ev() { printf '%s EV %s %s %s\n' "$M" "$1" "$(ng_now)" "$2"; }
if timeout 5 true >/dev/null 2>&1; then NG_HAVE_TIMEOUT=1; else NG_HAVE_TIMEOUT=; fi
ng_to() { if [ -n "$NG_HAVE_TIMEOUT" ]; then timeout -k 3 "$NG_TMO" "$@"; else "$@"; fi; }
ng_have() { command -v "$1" >/dev/null 2>&1; }

# ng_item KEY CMD ARGS...: run one item, framing stdout, stderr and exit code (probe framing).
ng_item() {
  ng_k=$1; shift
  printf '%s BEGIN %s %s %s\n' "$M" "$ng_k" "$(ng_up)" "$(ng_now)"
  ng_err=$( { { "$@" 2>&3 3>&-; echo "$M RC $?" >&3; } | head -c "$NG_CAP" >&5 3>&-; } 3>&1 )
  ng_rc=${ng_err##*"$M RC "}
  ng_err=${ng_err%"$M RC "*}
  printf '\n%s END %s rc=%s %s\n' "$M" "$ng_k" "$ng_rc" "$(ng_up)"
  if [ -n "$ng_err" ]; then
    printf '%s ERR %s\n%s\n%s ERREND %s\n' "$M" "$ng_k" "$(printf '%s' "$ng_err" | head -c 16384)" "$M" "$ng_k"
  fi
}
ng_fail() { echo "$1" >&2; return "${2:-1}"; }

# ng_heartbeats: the sampler's wait for its next sample (ng_due, epoch s): a heartbeat every
# second, the script's own ng_deadline at every tick, and ng_abort set when the main shell is
# gone or stdout is closed (the controller closed the channel: Ctrl-C; sshd sends no SIGHUP to
# a session without a pty). Returns at ng_due, on ng_stop (USR1: the tool exited) or ng_abort.
ng_heartbeats() {
  while [ -z "$ng_stop$ng_abort" ]; do
    ng_t=$(ng_now)
    kill -0 "$NG_MAIN" 2>/dev/null || { ng_abort=main-shell-gone; break; }
    ng_deadline "$ng_t"
    [ "$ng_t" -ge "$ng_due" ] && break
    sleep 1
    printf '%s HB %s\n' "$M" "$ng_t" || { ng_abort=stdout-closed; break; }
  done
}

# ng_sampler_exit FIELDS: the sampler's end; interrupted (ng_abort): an event, the script's own
# ng_stop_now, exit 2.
ng_sampler_exit() {
  if [ -n "$ng_abort" ]; then
    trap '' PIPE
    ng_ev interrupted "${1}reason=$ng_abort" 2>/dev/null
    ng_stop_now
    exit 2
  fi
  exit 0
}

# ng_wait_tool: wait for the tool or load (pid ng_lp) to exit, its status in ng_lrc; a signal to
# this shell meanwhile (its trap sets ng_int) is passed on to the sampler (pid ng_sp), which stops
# the tool. ng_end_sampler: tell the sampler the tool exited (USR1) and wait for it to end.
ng_wait_tool() {
  while :; do
    wait "$ng_lp"; ng_lrc=$?
    kill -0 "$ng_lp" 2>/dev/null || break
    [ -n "$ng_int" ] && kill -TERM "$ng_sp" 2>/dev/null
  done
}
ng_end_sampler() {
  kill -USR1 "$ng_sp" 2>/dev/null
  while kill -0 "$ng_sp" 2>/dev/null; do wait "$ng_sp"; done
}

# ng_exit_traps: the main shell's exit status on a signal (128 + its number).
ng_exit() { trap '' PIPE; exit "$1"; }
ng_exit_traps() {
  trap 'ng_exit 129' HUP
  trap 'ng_exit 130' INT
  trap 'ng_exit 143' TERM
  trap 'ng_exit 141' PIPE
}
