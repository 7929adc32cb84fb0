# shellcheck shell=bash disable=SC2034
# lab-lib.sh — helpers shared by lab-up.sh, lab-down.sh and sl.  Source it; do not run it.
#
# Sets: SLURM_SERIES (exported), LAB (canonical, exported), ROOT (the chroot), VAR (runtime
# data; the same path on the host and inside the chroot), LAB_SCRIPTS (this folder), LAB_REPO
# (its parent, the repo).
# Env: SLURM_SERIES=24.11 (or 26.05) — which Slurm the lab runs; it picks LAB's default.
#      LAB=/var/tmp/nvl72-lab (24.11) or /var/tmp/nvl72-lab-26.05 (26.05) — must be the same
#      for every lab script.

SLURM_SERIES=${SLURM_SERIES:-24.11}
case $SLURM_SERIES in
    24.11) LAB=${LAB:-/var/tmp/nvl72-lab} ;;
    26.05) LAB=${LAB:-/var/tmp/nvl72-lab-26.05} ;;
    *) echo "SLURM_SERIES must be 24.11 (Debian trixie) or 26.05 (Debian sid), got '$SLURM_SERIES'" >&2; exit 2 ;;
esac
export SLURM_SERIES
LAB=$(readlink -m "$LAB")       # canonical: compared with /proc/PID/root and /proc/mounts
export LAB
ROOT=$LAB/rootfs
VAR=$LAB/var
LAB_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_REPO=$(dirname "$LAB_SCRIPTS")

case $LAB in
    /|/var|/var/tmp|/tmp|/usr|/home|/root) echo "refusing LAB=$LAB (too broad)" >&2; exit 1 ;;
    *[[:space:]]*) echo "LAB must not contain whitespace: '$LAB'" >&2; exit 1 ;;
esac

# alive PIDFILE: the pid file names a live process whose root directory is this lab's chroot
# (so a stale pid file — reboot, copied rootfs, another lab — never matches a foreign process)
alive() {
    local p=""
    [ -s "$1" ] && read -r p < "$1" 2>/dev/null
    [[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null && [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$ROOT" ]
}

# now_us: wall clock in microseconds (bash 5 EPOCHREALTIME; no bc needed)
now_us() { local t=${EPOCHREALTIME//[.,]/}; echo "$t"; }

# mounts_under DIR: mount points at or below DIR, deepest first
mounts_under() {
    awk -v p="$1" '$2 == p || index($2, p "/") == 1 { print length($2), $2 }' /proc/mounts \
        | sort -rn | cut -d' ' -f2-
}

# unmount_all DIR: unmount everything mounted at or below DIR (a chroot).  /dev is made a
# slave first so that unmounting its sub-mounts can never propagate to the host's /dev.
# Returns non-zero if something is still mounted afterwards.
unmount_all() {
    local d=$1 m
    mountpoint -q "$d/dev" 2>/dev/null && mount --make-rslave "$d/dev" 2>/dev/null
    for m in $(mounts_under "$d"); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    [ -z "$(mounts_under "$d")" ]
}

# mount_chroot DIR [VARDIR]: proc, sys, dev (rbind + rslave) and optionally VARDIR bound at
# the same path inside DIR.  Idempotent.
mount_chroot() {
    local d=$1 v=${2:-}
    mountpoint -q "$d/proc" || mount -t proc proc "$d/proc"
    mountpoint -q "$d/sys"  || mount -t sysfs sys "$d/sys"
    if ! mountpoint -q "$d/dev"; then
        mount --rbind /dev "$d/dev"
        mount --make-rslave "$d/dev"    # so umount -R never propagates to the host /dev
    fi
    if [ -n "$v" ]; then
        mkdir -p "$v" "$d$v"
        mountpoint -q "$d$v" || mount --bind "$v" "$d$v"
    fi
}

# lab_lock: serialize lab-up.sh / lab-down.sh runs on one LAB (several sessions may share a
# lab).  Holds an flock on $LAB/.lock on fd 9 until the script exits; a nested call (lab-up
# running lab-down) sees LAB_LOCK_HELD and goes on.  Daemons must be started with 9>&- so
# that they do not inherit the lock.  Env: LOCK_WAIT=600 (seconds to wait for the lock).
lab_lock() {
    [ "${LAB_LOCK_HELD:-}" = "$LAB" ] && return 0
    command -v flock >/dev/null || return 0
    mkdir -p "$LAB"
    exec 9>>"$LAB/.lock"
    if ! flock -n 9; then
        echo "[lab] $LAB is busy (another lab-up/lab-down holds $LAB/.lock); waiting up to ${LOCK_WAIT:-600}s" >&2
        flock -w "${LOCK_WAIT:-600}" 9 || { echo "[lab] ERROR: timed out waiting for $LAB/.lock" >&2; exit 1; }
    fi
    export LAB_LOCK_HELD=$LAB
}
