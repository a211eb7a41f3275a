# nodegate site shell (POSIX sh: dash, bash, busybox ash). Sent on stdin to `sh -s` in ONE exec
# channel per node; then every command a site test runs arrives as one more line on the same
# stdin, `ng_run <key> <deadline s> '<command>'`, and is run in a child of the user's login shell
# (`$SHELL -c`, as sshd runs an exec request), one after the other. Framing is the probe's
# (nodegate/probe/probe.sh, M = per-session random marker the node cannot predict):
#   stdout:  M BEGIN <key> 0        then the command's stdout and \nM RC <n> (capped together at
#            NG_HCAP bytes on the node)  then \nM END <key> rc= 0
#   stderr:  \nM ERR <key>          then its stderr (capped at NG_ECAP bytes)  then \nM ERREND <key>
# A command gets no stdin (the rest of this session is on it) and nothing of this shell's state:
# a `cd`, a variable or an `exit` in one command never reaches the next. Its stdout and stderr are
# pipes of its own (the `head -c` caps), never the session's: a child it leaves behind (in the
# background, or one busybox's timeout does not stop) cannot write into a later command's output.
M='@@MARKER@@'
NG_HCAP=@@HCAP@@
NG_ECAP=@@ECAP@@
# the node-side deadline (coreutils or busybox timeout, as in the probe); the controller cuts the
# command a few seconds later regardless (a process in D state ignores signals)
if timeout 5 true >/dev/null 2>&1; then NG_HAVE_TIMEOUT=1; else NG_HAVE_TIMEOUT=; fi
ng_exec() {
  if [ -n "$NG_HAVE_TIMEOUT" ]; then timeout -k 3 "$1" "${SHELL:-/bin/sh}" -c "$2"
  else "${SHELL:-/bin/sh}" -c "$2"; fi
}
ng_run() {
  printf '%s BEGIN %s 0\n' "$M" "$1"
  printf '\n%s ERR %s\n' "$M" "$1" >&2
  { { { ng_exec "$2" "$3" </dev/null 2>&1 >&4 4>&-; printf '\n%s RC %s\n' "$M" "$?" >&4; } | head -c "$NG_ECAP" >&2 4>&-
    } 4>&1; } | head -c "$NG_HCAP"
  printf '\n%s END %s rc= 0\n' "$M" "$1"
  printf '\n%s ERREND %s\n' "$M" "$1" >&2
}
printf '%s READY\n' "$M"
