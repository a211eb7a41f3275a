# nodegate probe (POSIX sh: dash, bash, busybox ash). Read-only: writes nothing on the node.
# Sent on stdin to `sh -s` in ONE remote exec; the controller fills the @@...@@ fields.
# Output framing (one line each, M = per-run random marker the node cannot predict):
#   stdout:  M BEGIN <key> <uptime>     then the item's stdout and \nM RC <n> (a tool's: capped
#            together at NG_CAP bytes)  then \nM END <key> rc= <uptime>
#   stderr:  \nM ERR <key>              then the item's stderr (a tool's: capped at 64 KiB)
# Tools (ng_tool, ng_need, ng_item) are capped here with `head -c`; kernel pseudo-files and
# this script's own functions (ng_lite) are cut by the controller (docs/security.md).
# The exit code travels on stdout and stderr on the channel's own stream: no `$(...)` capture
# of stderr in this shell and no fork for it (docs/performance.md).
# Every item is documented in docs/bundle.md and nodegate/probe/items.py.
M='@@MARKER@@'
NG_CAP=@@CAP@@
NG_HCAP=@@HCAP@@
NG_USER='@@USER@@'
NG_SAMPLES=@@SAMPLES@@
NG_FAILMASK=@@FAILMASK@@
NG_TMO=@@TIMEOUT@@
NG_NVGL_SET=
PATH="$PATH:/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/bin:/usr/local/nvidia/bin"
export PATH LC_ALL=C
exec 5>&1

# ng_up: seconds since boot into $ng_u with the shell's own `read` (a `$(...)` per frame line
# forked a subshell twice per item: docs/performance.md).
ng_up() { ng_u=; read -r ng_u _ 2>/dev/null </proc/uptime; ng_u=${ng_u:-0}; }
# ng_now: a clock in whole seconds into $ng_n: seconds since boot (no `date` fork per tool call)
# where /proc is the kernel's procfs (it has /proc/self); elsewhere /proc/uptime may be a plain
# file that never advances (a chroot's copy): there `date +%s`, once at the start and once more
# only when a tool call ended in KILL (ng_to).
if [ -r /proc/self/stat ]; then
  NG_CLOCK=1
  ng_now() { ng_up; ng_n=${ng_u%%.*}; case $ng_n in ''|*[!0-9]*) ng_n=0 ;; esac; }
else
  NG_CLOCK=
  ng_now() { ng_n=$(date +%s 2>/dev/null) || ng_n=0; }
  ng_now; ng_t0=$ng_n
fi
NG_NL='
'
# ng_rd FILE: first line of a sysfs/procfs attribute into $ng_v with the shell's own `read` (no fork).
ng_rd() { ng_v=; IFS= read -r ng_v 2>/dev/null <"$1"; }
# ng_catv FILE: exactly `$(cat FILE 2>/dev/null)` into $ng_v; without a fork when FILE is one
# newline-terminated line (sysfs/procfs attributes are), else (more lines, none, unreadable) cat.
ng_catv() {
  ng_v=; ng_x=
  { IFS= read -r ng_v && ! IFS= read -r ng_x && [ -z "$ng_x" ]; } 2>/dev/null <"$1" && return 0
  ng_v=$(cat "$1" 2>/dev/null)
}

# Per-command timeout on the node when `timeout` exists (coreutils or busybox); the
# controller enforces its own deadline regardless (a D-state process ignores signals).
# Without fd 5: busybox's timeout leaves a watchdog that sleeps a second after `true` has
# exited, and with the probe's stdout (fd 5) it kept the stream open for that second, so every
# probe ended ~1 s after its last item (docs/performance.md). No tool the probe runs gets fd 5
# (the items close it for their commands); only the `head -c` caps, which end with their item.
if timeout 5 true >/dev/null 2>&1 5>&-; then NG_HAVE_TIMEOUT=1; else NG_HAVE_TIMEOUT=; fi
# timeout exits 124 on expiry but 128+9 when the command ignored SIGTERM and needed -k's KILL (a
# hung nvidia-smi): both are reported as 124, "timed out"; a KILL from elsewhere (OOM) stays 137.
ng_to() {
  [ -n "$NG_HAVE_TIMEOUT" ] || { "$@"; return $?; }
  if [ -n "$NG_CLOCK" ]; then ng_now; ng_ts=$ng_n; else ng_ts=$ng_t0; fi
  timeout -k 3 "$NG_TMO" "$@"; ng_trc=$?
  # without procfs the start is the probe's own: KILL before NG_TMO seconds of the whole probe
  # cannot be our deadline, later it is taken as one
  if [ "$ng_trc" -eq 137 ]; then ng_now; [ $((ng_n - ng_ts)) -ge "$NG_TMO" ] && ng_trc=124; fi
  return $ng_trc
}

# ng_open: an item's opening frames, BEGIN on stdout and ERR on stderr (key in $ng_k).
ng_open() {
  ng_up; printf '%s BEGIN %s %s\n' "$M" "$ng_k" "$ng_u"
  printf '\n%s ERR %s\n' "$M" "$ng_k" >&2
}

# ng_item KEY CMD ARGS...: run one evidence item, framing stdout, stderr and exit code.
# The command gets no stdin (the rest of this script is on it: a tool that reads stdin would eat
# the probe) and no fd 5 (writing there would bypass the cap). Its stdout and then the RC line
# go through one `head -c NG_HCAP` to the probe's stdout; its stderr through a `head -c 65537` to
# the probe's stderr, after this item's ERR line (64 KiB + 1 byte: the controller keeps 64 KiB and
# sees that more was cut). A command that floods either gets SIGPIPE at the cap: the rest never
# leaves the node. Both heads have exited, so flushed, before END.
ng_item() {
  ng_k=$1; shift
  ng_open
  { { { "$@" </dev/null 2>&1 >&4 4>&- 5>&-; printf '\n%s RC %s\n' "$M" "$?" >&4; } | head -c 65537 >&2 4>&-
    } 4>&1; } | head -c "$NG_HCAP"
  ng_up; printf '\n%s END %s rc= %s\n' "$M" "$ng_k" "$ng_u"
}

# ng_lite KEY FUNC ARGS...: the same frames for a kernel pseudo-file (cat), `uname`, or one of
# this script's functions over files and directories, without the two `head -c` (4 forks and 2
# execs an item, a third of the probe's CPU: docs/performance.md). Their output is bounded by
# what the kernel and the filesystem hold, not by a tool's behaviour; the controller still cuts
# an item past NG_CAP (truncated) and the stream at its own caps (docs/security.md). Whatever
# asks a service (NSS: `id`, `getent`) or runs a vendor tool goes through ng_item/ng_tool. The
# function runs in this shell: it must not `cd` or `exit` (ng_f_pci is a subshell for its cd).
ng_lite() {
  ng_k=$1; shift
  ng_open
  "$@" </dev/null 5>&-; ng_lrc=$?
  ng_up; printf '\n%s RC %s\n\n%s END %s rc= %s\n' "$M" "$ng_lrc" "$M" "$ng_k" "$ng_u"
}

# ng_tool KEY TOOL ARGS...: like ng_item for an external tool; a missing tool is rc=127.
ng_tool() {
  ng_k2=$1; shift
  if command -v "$1" >/dev/null 2>&1; then ng_item "$ng_k2" ng_to "$@"
  else ng_item "$ng_k2" ng_missing "$1"; fi
}
ng_missing() { echo "$1: command not found" >&2; return 127; }
# ng_need TOOL KEY FUNC ARGS...: run a shell function that uses TOOL, or record it missing.
ng_need() {
  ng_t=$1; ng_k3=$2; shift 2
  if command -v "$ng_t" >/dev/null 2>&1; then ng_item "$ng_k3" "$@"; else ng_item "$ng_k3" ng_missing "$ng_t"; fi
}
ng_cat() { cat "$@"; }

ng_f_sysmodule() {
  for m in /sys/module/*; do
    [ -d "$m" ] || continue
    n=${m##*/}
    if [ -e "$m/initstate" ]; then ng_catv "$m/initstate"; printf '%s loadable %s\n' "$n" "$ng_v"
    else printf '%s builtin\n' "$n"; fi
  done
}

ng_f_kernels() {
  [ -d /lib/modules ] || { echo "/lib/modules: No such file or directory" >&2; return 2; }
  for d in /lib/modules/*; do
    [ -d "$d" ] || continue
    if [ -e "$d/build" ] || [ -e "$d/kernel" ] || [ -e "$d/modules.dep" ]; then b=yes; else b=no; fi
    printf '%s build=%s\n' "${d##*/}" "$b"
  done
}

ng_f_headers() {  # print each existing file with a '== path' header
  ng_found=
  for f in "$@"; do
    [ -f "$f" ] || continue
    ng_found=1
    printf '== %s\n' "$f"; cat "$f"; echo
  done
  [ -n "$ng_found" ] || return 1
}

ng_f_modulesload() {
  set -- /etc/modules-load.d/*.conf /run/modules-load.d/*.conf /usr/local/lib/modules-load.d/*.conf \
    /usr/lib/modules-load.d/*.conf /lib/modules-load.d/*.conf /etc/modules
  ng_f_headers "$@"
}

ng_f_gpuinfo() { ng_f_headers /proc/driver/nvidia/gpus/*/information; }

ng_f_libnvml() {
  if command -v ldconfig >/dev/null 2>&1; then
    ldconfig -p 2>/dev/null | grep 'libnvidia-ml\.so\.1 ' | while read -r _ _ _ p; do
      printf 'ldconfig %s -> %s\n' "$p" "$(readlink -f "$p" 2>/dev/null)"
    done
  fi
  for p in /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1 \
           /usr/lib64/libnvidia-ml.so.1 /usr/lib/libnvidia-ml.so.1 /usr/local/nvidia/lib64/libnvidia-ml.so.1; do
    [ -e "$p" ] && printf 'path %s -> %s\n' "$p" "$(readlink -f "$p" 2>/dev/null)"
  done
  return 0
}

# ng_cand PATTERN FILE...: into $ng_gl, the FILEs that may hold a line matching the basic regex
# PATTERN: one `grep -l` over all of them instead of a `read` per file in the shell (dash reads a
# byte per system call: ~20 calls a file, for every process or PCI function of the node). Only a
# pre-selection: the caller still reads and checks each file itself, so the result is the same
# as looping over every FILE, which is also what ng_gl gets when grep is missing or could not be
# run (126/127, e.g. an argument list too long). grep's 2 (a file vanished) keeps its list.
# (The shells' `read` drops NUL bytes and grep does not: procfs comm and sysfs vendor files hold
# none.)
ng_cand() {
  ng_pat=$1; shift
  if command -v grep >/dev/null 2>&1; then
    ng_gl=$(grep -l -e "$ng_pat" "$@" 2>/dev/null 5>&-)
    [ $? -lt 126 ] && return 0
  fi
  ng_gl=$*
}

# ng_nvfuncs: into $ng_gl, the vendor files of NVIDIA PCI functions (ng_cand '^0x10de$'), searched once
# per probe for pci.sysfs, pci.nvswitch and pci.aer (cached in NG_NVGL when called in the probe's shell;
# a subshell's call caches nothing).
ng_nvfuncs() {
  if [ -z "$NG_NVGL_SET" ]; then ng_cand '^0x10de$' /sys/bus/pci/devices/*/vendor; NG_NVGL=$ng_gl; NG_NVGL_SET=1; fi
  ng_gl=$NG_NVGL
}

ng_f_persistenced_proc() {
  ng_n=0
  ng_cand '^nvidia-persiste' /proc/[0-9]*/comm
  for p in $ng_gl; do
    p=${p%/comm}
    ng_catv "$p/comm"  # unreadable (process gone): "", not a match
    case "$ng_v" in nvidia-persiste*) ;; *) continue ;; esac
    ng_n=$((ng_n + 1))
    printf '== pid %s\n' "${p##*/}"
    grep -E '^(Uid|Gid):' "$p/status" 2>/dev/null
    printf 'cmdline: %s\n' "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
  done
  printf 'processes: %s\n' "$ng_n"
  for d in /run/nvidia-persistenced /var/run/nvidia-persistenced; do
    if [ -e "$d" ]; then printf 'rundir: %s\n' "$(ls -ldn "$d" 2>&1)"; break; fi
  done
  return 0
}

ng_f_passwd() {
  [ -n "$NG_USER" ] || { echo "no user configured in spec"; return 0; }
  if command -v getent >/dev/null 2>&1; then getent passwd "$NG_USER"; return $?; fi
  grep "^$NG_USER:" /etc/passwd
}

ng_f_dropins() {
  ng_f_headers /etc/systemd/system/nvidia-persistenced.service.d/*.conf \
    /run/systemd/system/nvidia-persistenced.service.d/*.conf \
    /usr/lib/systemd/system/nvidia-persistenced.service.d/*.conf \
    /etc/systemd/system/nvidia-persistenced.service \
    /usr/lib/systemd/system/nvidia-persistenced.service /lib/systemd/system/nvidia-persistenced.service
}

# ng_drvver: the loaded module's version into $v: sysfs, else the banner in /proc (no subshell).
ng_drvver() {
  ng_catv /sys/module/nvidia/version; v=$ng_v
  [ -n "$v" ] || v=$(sed -n 's/.*Kernel Module[^0-9]*\([0-9][0-9.]*\).*/\1/p' /proc/driver/nvidia/version 2>/dev/null | head -n 1)
}

ng_f_firmware() {
  # the kernel release the probe read once ($ng_kr, `uname -r`), the module version and the
  # firmware search path without a `$(...)` each (docs/performance.md)
  ng_drvver; kv=${ng_kr:-$(uname -r)}
  ng_catv /sys/module/firmware_class/parameters/path; fp=$ng_v
  printf 'firmware_class.path: %s\n' "$fp"
  printf 'driver_version: %s\n' "$v"
  for d in "$fp" "/lib/firmware/updates/$kv" /lib/firmware/updates "/lib/firmware/$kv" /lib/firmware; do
    [ -n "$d" ] || continue
    printf '== %s/nvidia/%s\n' "$d" "$v"
    if [ -n "$v" ] && [ -d "$d/nvidia/$v" ]; then ls -lnL "$d/nvidia/$v" 2>&1; else echo "absent"; fi
  done
}

ng_f_pci() (
  # A node has hundreds of PCI functions: a `$(cat attr)` per attribute was ~200 fork+exec per probe
  # (docs/performance.md); sysfs attributes are one line, so `read` gives the same text.
  # A subshell (one fork, no exec): it changes directory to resolve each device's path.
  ng_g=0
  ng_nvfuncs
  for d in $ng_gl; do
    d=${d%/vendor}
    ng_rd "$d/vendor"; [ "$ng_v" = 0x10de ] || continue
    ng_rd "$d/class"
    case "$ng_v" in 0x03*) ;; *) continue ;; esac
    # an SR-IOV virtual function (vGPU host) is no board of its own: its PF is listed
    [ -e "$d/physfn" ] && continue
    ng_g=$((ng_g + 1))
    printf '== %s gpu\n' "${d##*/}"
    for f in device class current_link_speed current_link_width max_link_speed max_link_width; do
      [ -r "$d/$f" ] || continue
      ng_rd "$d/$f"; printf '%s: %s\n' "$f" "$ng_v"
    done
    # physical path of the device (readlink -f of a sysfs device directory) without a fork
    r=; cd -P "$d" 2>/dev/null && r=$PWD; p=${r%/*}
    while [ -n "$p" ] && [ "$p" != /sys/devices ]; do
      b=${p##*/}
      if [ -r "$p/current_link_speed" ]; then
        printf '== %s upstream-of %s\n' "$b" "${d##*/}"
        for f in current_link_speed current_link_width max_link_speed max_link_width; do
          [ -r "$p/$f" ] || continue
          ng_rd "$p/$f"; printf '%s: %s\n' "$f" "$ng_v"
        done
      fi
      p=${p%/*}
    done
  done
  printf 'gpus: %s\n' "$ng_g"
)

ng_f_ls() { for d in "$@"; do [ -e "$d" ] && ls -1 "$d" 2>&1; done; return 0; }

# ng_f_nvswitch: NVIDIA functions of class 0x0680 (bridge, other): NVSwitches (issue 19).
ng_f_nvswitch() {
  ng_n=0
  ng_nvfuncs
  for d in $ng_gl; do
    d=${d%/vendor}
    ng_rd "$d/vendor"; [ "$ng_v" = 0x10de ] || continue
    ng_rd "$d/class"; ng_c=$ng_v
    case "$ng_c" in 0x0680*) ;; *) continue ;; esac
    ng_rd "$d/device"
    ng_n=$((ng_n + 1))
    printf '== %s device %s class %s\n' "${d##*/}" "$ng_v" "$ng_c"
  done
  printf 'nvswitches: %s\n' "$ng_n"
}

# ng_f_aer: AER counters (drivers/pci/pcie/aer.c aer_dev_*) of every GPU and of its upstream ports:
# the headers name roles and how many counter files each function has; one grep -H prints the TOTAL_ERR_*
# line of each file and every non-zero counter (a cat per file was a fork each, 3 files x 4 functions x 8
# GPUs; every zero line with its path was 170 KB on an 8-GPU node). A subshell for its cd, as ng_f_pci.
ng_f_aer() (
  ng_g=0; ng_al=
  ng_nvfuncs
  for d in $ng_gl; do
    d=${d%/vendor}
    ng_rd "$d/vendor"; [ "$ng_v" = 0x10de ] || continue
    ng_rd "$d/class"
    case "$ng_v" in 0x03*) ;; *) continue ;; esac
    ng_g=$((ng_g + 1)); g=${d##*/}
    r=; cd -P "$d" 2>/dev/null && r=$PWD
    p=${r:-$d}; ng_role=gpu
    while [ -n "$p" ] && [ "$p" != /sys/devices ]; do
      n=0
      for f in aer_dev_correctable aer_dev_nonfatal aer_dev_fatal; do
        [ -r "$p/$f" ] || continue
        n=$((n + 1))
        case " $ng_al " in *" $p/$f "*) ;; *) ng_al="$ng_al $p/$f" ;; esac
      done
      if [ "$ng_role" = gpu ]; then printf '== %s gpu aer=%s\n' "$g" "$n"
      elif [ "$n" -gt 0 ] || [ -r "$p/current_link_speed" ]; then printf '== %s upstream-of %s aer=%s\n' "${p##*/}" "$g" "$n"; fi
      [ -n "$r" ] || break
      ng_role=up; p=${p%/*}
    done
  done
  printf 'gpus: %s\n' "$ng_g"
  [ -n "$ng_al" ] || return 0
  set -f
  if command -v grep >/dev/null 2>&1; then grep -H -E '^TOTAL_| [1-9][0-9]*$' $ng_al 5>&-; return 0; fi
  for f in $ng_al; do
    while IFS= read -r l; do
      case $l in TOTAL_*) ;; *" 0") continue ;; esac
      printf '%s:%s\n' "$f" "$l"
    done <"$f"
  done
  return 0
)

# ng_f_ibports: /sys/class/infiniband/<dev>/{fw_ver,hca_type} and ports/<n>/{state,phys_state,rate,link_layer}
# (drivers/infiniband/core/sysfs.c): no OFED tool needed.
ng_f_ibports() {
  for d in /sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    printf '== %s\n' "${d##*/}"
    for f in fw_ver hca_type; do [ -r "$d/$f" ] && { ng_rd "$d/$f"; printf '%s: %s\n' "$f" "$ng_v"; }; done
    for pt in "$d"/ports/*; do
      [ -d "$pt" ] || continue
      printf '== %s port %s\n' "${d##*/}" "${pt##*/}"
      for f in state phys_state rate link_layer; do
        [ -r "$pt/$f" ] || continue
        ng_rd "$pt/$f"; printf '%s: %s\n' "$f" "$ng_v"
      done
    done
  done
  return 0
}

# ng_f_ibguids: what the cross-node phase joins the fabric on (issue 38): per device its GUIDs, board id,
# PCI function and net device; per port its LID, SM LID, GID 0 and rate (drivers/infiniband/core/sysfs.c).
ng_f_ibguids() {
  for d in /sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    printf '== %s\n' "${d##*/}"
    for f in node_guid sys_image_guid board_id; do [ -r "$d/$f" ] && { ng_rd "$d/$f"; printf '%s: %s\n' "$f" "$ng_v"; }; done
    [ -e "$d/device" ] && { ng_l=$(readlink "$d/device" 2>/dev/null) && printf 'device: %s\n' "${ng_l##*/}"; }
    for n in "$d"/device/net/*; do [ -e "$n" ] && printf 'netdev: %s\n' "${n##*/}"; done
    for pt in "$d"/ports/*; do
      [ -d "$pt" ] || continue
      printf '== %s port %s\n' "${d##*/}" "${pt##*/}"
      for f in lid sm_lid rate; do [ -r "$pt/$f" ] && { ng_rd "$pt/$f"; printf '%s: %s\n' "$f" "$ng_v"; }; done
      [ -r "$pt/gids/0" ] && { ng_rd "$pt/gids/0"; printf 'gid0: %s\n' "$ng_v"; }
    done
  done
  return 0
}

# ng_f_iblink: per local HCA port, the port's link and the switch port at its other end
# (iblinkinfo line mode from the port itself, directed route 0, one hop: rdma-core iblinkinfo.c).
ng_f_iblink() {
  for d in /sys/class/infiniband/*; do
    [ -d "$d" ] || continue
    for pt in "$d"/ports/*; do
      [ -d "$pt" ] || continue
      printf '== %s port %s\n' "${d##*/}" "${pt##*/}"
      ng_to iblinkinfo -C "${d##*/}" -P "${pt##*/}" -D 0 -l 2>&1
    done
  done
  return 0
}

# ng_f_fmlog: nvidia-fabricmanager's messages this boot: its unit's journal, else the package's log file
# (LOG_FILE_NAME=/var/log/fabricmanager.log); nothing to read where fabric manager is not installed.
ng_f_fmlog() {
  if ! command -v nv-fabricmanager >/dev/null 2>&1 && [ ! -e /lib/systemd/system/nvidia-fabricmanager.service ] \
     && [ ! -e /usr/lib/systemd/system/nvidia-fabricmanager.service ]; then
    echo "# fabric manager not installed"; return 0
  fi
  if command -v journalctl >/dev/null 2>&1; then
    ng_to journalctl -u nvidia-fabricmanager -b --no-pager -o short-iso -n 200; return $?
  fi
  if [ -r /var/log/fabricmanager.log ]; then tail -n 200 /var/log/fabricmanager.log; return $?; fi
  echo "journalctl: command not found; /var/log/fabricmanager.log absent" >&2
  return 127
}

ng_f_peers() {
  for f in /sys/kernel/mm/memory_peers/*/version; do
    [ -r "$f" ] && printf '%s: %s\n' "$f" "$(cat "$f")"
  done
  return 0
}

# ng_f_dmi: the system's DMI identity (vendor, model, serials) for the RMA sheet, one line per
# attribute: '<attr> ok <value>', '<attr> unreadable' or '<attr> absent'. The kernel makes the
# serials and product_uuid root-only (mode 0400, drivers/firmware/dmi-id.c): without --sudo they
# are reported unreadable, never guessed. `read` only: no fork per attribute.
ng_f_dmi() {
  [ -d /sys/class/dmi/id ] || { echo "/sys/class/dmi/id: No such file or directory" >&2; return 2; }
  for ng_a in sys_vendor product_name product_version product_serial product_uuid board_vendor \
      board_name board_serial chassis_serial bios_version; do
    ng_f=/sys/class/dmi/id/$ng_a
    if [ ! -e "$ng_f" ]; then printf '%s absent\n' "$ng_a"
    elif [ -r "$ng_f" ] && ng_rd "$ng_f"; then printf '%s ok %s\n' "$ng_a" "$ng_v"
    else printf '%s unreadable\n' "$ng_a"; fi
  done
  return 0
}

# ng_klog_cut: the NVRM lines on stdin, cut to the last NG_KLTAIL lines, except that every line
# that can decide a verdict (an Xid, a GPU off the bus, RmInitAdapter, GSP, API mismatch, the
# open-module and probe-routine messages, the loading banner, taint and drm lines), with the line
# before it and the three after it (multi-line NVRM records), is kept wherever it is, in order:
# an Xid 48 followed by 6000 Xid 13 lines is not cut away. At most NG_KLKEEP such lines before the
# last NG_KLTAIL; the rest are counted. Last line: '# lines: seen=S kept=K dropped_severe=D'
# (the checks ERROR on a log that lost severe lines). Without awk: the last NG_KLTAIL lines, and
# dropped_severe=unknown when that cut anything.
NG_KLTAIL=5000
NG_KLKEEP=20000
ng_klog_cut() {
  if command -v awk >/dev/null 2>&1; then
    awk -v T="$NG_KLTAIL" -v C="$NG_KLKEEP" '
      BEGIN { pat = "xid|fallen off|rminitadapter|rm_init_adapter|gsp|gfw|api mismatch|open kernel modules|probe routine|loading nvidia|module license|persistence mode|nvidia-drm|postrxdetlinkmask|rx detect link mask|ali error|fsp" }
      NF == 0 { next }
      {
        n++; i = n % T
        if (n > T && keep[i]) { if (k < C) { print ring[i]; k++ } else d++ }
        ring[i] = $0; keep[i] = 0
        if (after > 0) { keep[i] = 1; after-- }
        if (tolower($0) ~ pat) { keep[i] = 1; if (n > 1) keep[(n - 1) % T] = 1; after = 3 }
      }
      END {
        m = n < T ? n : T
        for (j = n - m + 1; j <= n; j++) print ring[j % T]
        printf "# lines: seen=%d kept=%d dropped_severe=%d\n", n, k + m, d
      }' 5>&-
    return 0
  fi
  ng_kf=$(grep -v '^$')
  ng_ks=0; [ -n "$ng_kf" ] && ng_ks=$(printf '%s\n' "$ng_kf" | grep -c '')
  [ -n "$ng_kf" ] && printf '%s\n' "$ng_kf" | tail -n "$NG_KLTAIL"
  if [ "$ng_ks" -gt "$NG_KLTAIL" ]; then ng_kd=unknown; ng_kk=$NG_KLTAIL; else ng_kd=0; ng_kk=$ng_ks; fi
  printf '# lines: seen=%s kept=%s dropped_severe=%s\n' "$ng_ks" "$ng_kk" "$ng_kd"
}

ng_f_klog() {
  # NVRM/Xid lines since boot. dmesg may need root (kernel.dmesg_restrict): then the
  # journal; if both fail the item keeps their error and the check says ERROR.
  if command -v dmesg >/dev/null 2>&1; then
    ng_log=$(dmesg 2>&1); ng_lrc=$?
    if [ $ng_lrc -eq 0 ]; then
      echo "# source: dmesg"
      printf '%s\n' "$ng_log" | grep -iE 'nvrm|nvidia|xid|nouveau|fallen off|gsp' | ng_klog_cut
      return 0
    fi
    printf 'dmesg: %s\n' "$ng_log" | head -n 3 >&2
  fi
  if command -v journalctl >/dev/null 2>&1; then
    ng_log=$(journalctl -k -b --no-pager -o short-iso 2>&1); ng_lrc=$?
    if [ $ng_lrc -eq 0 ]; then
      echo "# source: journalctl -k -b"
      printf '%s\n' "$ng_log" | grep -iE 'nvrm|nvidia|xid|nouveau|fallen off|gsp' | ng_klog_cut
      return 0
    fi
    printf 'journalctl: %s\n' "$ng_log" | head -n 3 >&2
  fi
  return 1
}

# ng_f_machineid: the machine id (machine-id(5): /etc/machine-id, else the D-Bus copy); rc 1
# when the node has neither (containers, minimal images)
ng_f_machineid() {
  for f in /etc/machine-id /var/lib/dbus/machine-id; do
    [ -f "$f" ] && { cat "$f"; return $?; }
  done
  echo "no /etc/machine-id or /var/lib/dbus/machine-id" >&2
  return 1
}

ng_f_clocks() {
  # Clocks event reasons, sampled: one sample, more only when a failing bit is seen
  # (a single sample may catch a P-state change; checks.md "Clocks event reasons").
  # Drivers before 535 only know clocks_throttle_reasons.* (an unknown field is rc 2 with the
  # message on stdout): retry with that name, but never after a timeout (a hung nvidia-smi
  # must cost one command deadline, not two).
  q='index,pci.bus_id,pstate,clocks_event_reasons.active'
  ng_s=$(ng_to nvidia-smi --query-gpu=$q --format=csv,noheader 2>&1); ng_r=$?
  if [ "$ng_r" -ne 0 ]; then
    case "$ng_r" in 124|137|143) printf '%s\n' "$ng_s" >&2; return "$ng_r" ;; esac
    q='index,pci.bus_id,pstate,clocks_throttle_reasons.active'
    ng_s=$(ng_to nvidia-smi --query-gpu=$q --format=csv,noheader 2>&1); ng_r=$?
    if [ "$ng_r" -ne 0 ]; then printf '%s\n' "$ng_s" >&2; return "$ng_r"; fi
  fi
  printf '%s\n' "$ng_s"
  # more samples (1 s apart) only when the first shows a failing bit: they confirm or clear it.
  # Each line's last field when it is ", 0x<hex>" at the line's end, with the shell's own field
  # splitting on newlines (a `sed` and two forks before; docs/performance.md). Linear in the
  # output: a tool that floods it costs its own item, not the probe's deadline.
  ng_hit=; ng_ifs=$IFS; IFS=$NG_NL; set -f
  for ng_l in $ng_s; do
    case $ng_l in *", 0x"*) ;; *) continue ;; esac
    ng_m=0x${ng_l##*, 0x}
    # one to sixteen hex digits, as nvidia-smi prints them: anything else is no number to the
    # shell (dash's and ash's arithmetic stop the item on "0x" alone); the controller's parser
    # judges that line
    case ${ng_m#0x} in ''|*[!0-9a-fA-F]*|?????????????????*) continue ;; esac
    [ $((ng_m & NG_FAILMASK)) -ne 0 ] 2>/dev/null && ng_hit=1
  done
  set +f; IFS=$ng_ifs
  [ -n "$ng_hit" ] || return 0
  ng_i=1
  while [ "$ng_i" -lt "$NG_SAMPLES" ]; do
    sleep 1
    ng_s=$(ng_to nvidia-smi --query-gpu=$q --format=csv,noheader 2>/dev/null) || break
    ng_i=$((ng_i + 1))
    echo "# sample $ng_i"
    printf '%s\n' "$ng_s"
  done
  return 0
}

ng_lite meta.uname_r uname -r
ng_kr=$(uname -r 5>&-)  # once for the three modinfo items (each expanded its own before)
ng_lite meta.boot_id ng_cat /proc/sys/kernel/random/boot_id
ng_lite meta.machine_id ng_f_machineid
ng_lite meta.uptime ng_cat /proc/uptime
ng_lite meta.hostname uname -n
ng_item meta.id id
ng_lite modules.proc ng_cat /proc/modules
ng_lite modules.sys ng_f_sysmodule
ng_lite modules.nvidia_version ng_cat /sys/module/nvidia/version
ng_lite modules.load_d ng_f_modulesload
ng_lite kernels.installed ng_f_kernels
ng_lite driver.proc_version ng_cat /proc/driver/nvidia/version
ng_lite driver.params ng_cat /proc/driver/nvidia/params
ng_lite driver.gpus_information ng_f_gpuinfo
ng_lite driver.libnvml ng_f_libnvml
ng_lite dev.nvidia ng_f_ls /dev
ng_nvfuncs  # once, in this shell: pci.sysfs, pci.nvswitch and pci.aer share the one grep
ng_lite pci.sysfs ng_f_pci
ng_lite pci.nvswitch ng_f_nvswitch
ng_lite pci.aer ng_f_aer
ng_lite ib.devices ng_f_ls /sys/class/infiniband
ng_lite peermem.registration ng_f_peers
ng_lite ib.ports ng_f_ibports
ng_lite ib.guids ng_f_ibguids
ng_lite firmware.gsp ng_f_firmware
ng_lite persistenced.process ng_f_persistenced_proc
ng_item persistenced.passwd ng_f_passwd
ng_lite persistenced.unit_files ng_f_dropins
ng_lite dmi.id ng_f_dmi
ng_tool modinfo.nvidia modinfo -k "$ng_kr" nvidia
ng_tool modinfo.nvidia_peermem modinfo -k "$ng_kr" nvidia_peermem
ng_tool modinfo.nv_peer_mem modinfo -k "$ng_kr" nv_peer_mem
ng_tool systemd.persistenced_show systemctl show nvidia-persistenced --no-pager \
  -p LoadState,ActiveState,SubState,UnitFileState,ExecStart,MainPID,FragmentPath,DropInPaths,NRestarts,Result,User
ng_tool systemd.fabricmanager_show systemctl show nvidia-fabricmanager --no-pager \
  -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Result
ng_tool fabricmanager.version nv-fabricmanager --version
# issue 39.5: the IMEX daemon (NVL72 multi-node NVLink memory export; NVIDIA IMEX guide)
ng_tool systemd.imex_show systemctl show nvidia-imex --no-pager -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Result
ng_item fabricmanager.log ng_f_fmlog
ng_tool dkms.status dkms status
ng_tool smi.version nvidia-smi --version
ng_tool smi.qx nvidia-smi -q -x
ng_tool smi.nvlink_status nvidia-smi nvlink -s
ng_tool smi.nvlink_errors nvidia-smi nvlink -e
ng_tool ib.ibstat ibstat
ng_need iblinkinfo ib.iblinkinfo ng_f_iblink
ng_need nvidia-smi smi.clocks_samples ng_f_clocks
ng_item kernel.log ng_f_klog
@@EXTRA@@
printf '%s DONE\n' "$M"
