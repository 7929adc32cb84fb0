# shellcheck shell=bash disable=SC2034
# lab-lib.sh — helpers shared by lab-up.sh, lab-down.sh and sl.  Source it; do not run it.
#
# Sets: SLURM_SERIES (exported), LAB (canonical, exported), ROOT (the chroot: LAB_ROOTFS, else
# $LAB/rootfs), VAR (runtime
# data; the same path on the host and inside the chroot), LAB_SCRIPTS (this folder), LAB_REPO
# (its parent, the repo); SLURM_PREFIX (exported, "" for Debian's Slurm), PREFIX_VERSION (the
# installation's release, e.g. 25.11.7, or ""), SLURM_DEBS (exported, "" unless SchedMD's
# packages), SMD_VERSION (their Debian version, e.g. 26.05.3-1, or ""), LAB_ENV (a command prefix that runs a Slurm
# command inside the chroot: empty for Debian's Slurm; for an installation "env PATH=<its bin
# and sbin>:... SLURM_CONF=/etc/slurm/slurm.conf"; use it as chroot "$ROOT" "${LAB_ENV[@]}" CMD).
# Env: SLURM_SERIES=24.11 (or 26.05) — which Debian Slurm the lab runs; it picks LAB's default.
#      SLURM_PREFIX=/opt/slurm-25.11.7 — instead, an existing Slurm installation (the layout of
#      `make install`: sbin/slurmctld, bin/sbatch, lib/slurm/); its release (from
#      SLURM_VERSION_NUMBER in include/slurm/slurm_version.h, else `sbin/slurmctld -V`) sets SLURM_SERIES, which must
#      match when given. Supported: 25.05, 25.11, 26.11, and also 24.11 and 26.05 builds.
#      SLURM_DEBS=/var/tmp/smd-debs/26.05.3 — instead, SchedMD's own Debian packages
#      (slurm-smd_<version>_amd64.deb and its siblings, built with debuild from SchedMD's release
#      tree) in that folder; their version (SMD_VERSION, e.g. 26.05.3-1, read with dpkg-deb from
#      slurm-smd_*.deb) sets SLURM_SERIES, which must match when given. Not with SLURM_PREFIX.
#      LAB=/var/tmp/nvl72-lab (24.11) or /var/tmp/nvl72-lab-26.05 (26.05); with SLURM_PREFIX
#      /var/tmp/nvl72-lab-25.05, /var/tmp/nvl72-lab-25.11 (/var/tmp/nvl72-lab-prefix-24.11,
#      -26.05 and -26.11 for those series); with SLURM_DEBS /var/tmp/nvl72-lab-smd-<series>
#      — must be the same for every lab script.

SLURM_PREFIX=${SLURM_PREFIX:-}
PREFIX_VERSION=""
SLURM_DEBS=${SLURM_DEBS:-}
SMD_VERSION=""
LAB_ENV=()
# prefix_version: the release of the installation at SLURM_PREFIX, or nothing
prefix_version() {
    local h=$SLURM_PREFIX/include/slurm/slurm_version.h v="" n=""
    # "#define SLURM_VERSION_NUMBER 0x190b07" = 25.11.7
    [ -r "$h" ] && n=$(sed -n 's/^#define[[:space:]]\{1,\}SLURM_VERSION_NUMBER[[:space:]]\{1,\}\(0x[0-9a-fA-F]\{1,\}\).*/\1/p' "$h" | head -n 1)
    [ -n "$n" ] && v=$(printf '%d.%02d.%d' $(( (n >> 16) & 255 )) $(( (n >> 8) & 255 )) $(( n & 255 )))
    if [ -z "$v" ] && [ -x "$SLURM_PREFIX/sbin/slurmctld" ]; then
        # "slurm 25.11.7"; needs a host that can run the installation's binaries
        v=$("$SLURM_PREFIX/sbin/slurmctld" -V 2>/dev/null | awk '{ print $2; exit }') || v=""
    fi
    [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] && echo "${BASH_REMATCH[0]}"
    return 0
}
# smd_version: the Debian version of SchedMD's slurm-smd package in SLURM_DEBS, or nothing
smd_version() {
    local debs=("$SLURM_DEBS"/slurm-smd_*.deb) v=""
    [ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || return 0
    v=$(dpkg-deb -f "${debs[0]}" Version 2>/dev/null) || v=""
    # without dpkg-deb: the file name, slurm-smd_26.05.3-1_amd64.deb
    [ -n "$v" ] || { v=${debs[0]##*/slurm-smd_}; v=${v%%_*}; }
    [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] && echo "$v"
    return 0
}
if [ -n "$SLURM_DEBS" ]; then
    [ -z "$SLURM_PREFIX" ] || { echo "give SLURM_DEBS (SchedMD's packages) or SLURM_PREFIX (an installation), not both" >&2; exit 2; }
    case $SLURM_DEBS in
        /?*) SLURM_DEBS=${SLURM_DEBS%/} ;;
        *) echo "SLURM_DEBS must be an absolute path, got '$SLURM_DEBS'" >&2; exit 2 ;;
    esac
    case $SLURM_DEBS in
        *[[:space:]]*) echo "SLURM_DEBS must not contain whitespace: '$SLURM_DEBS'" >&2; exit 2 ;;
    esac
    n=$(compgen -G "$SLURM_DEBS/slurm-smd_*.deb" | wc -l)
    [ "$n" = 1 ] || { echo "SLURM_DEBS=$SLURM_DEBS must hold exactly one slurm-smd_<version>_<arch>.deb (SchedMD's packages, built with debuild from its release tree; docs/install.md), found $n" >&2; exit 2; }
    SMD_VERSION=$(smd_version)
    [ -n "$SMD_VERSION" ] || { echo "cannot read the version of $(compgen -G "$SLURM_DEBS/slurm-smd_*.deb")" >&2; exit 2; }
    s=${SMD_VERSION%%-*}; s=${s%.*}
    if [ -n "${SLURM_SERIES:-}" ] && [ "$SLURM_SERIES" != "$s" ]; then
        echo "SLURM_SERIES=$SLURM_SERIES, but SchedMD's packages in SLURM_DEBS=$SLURM_DEBS are Slurm $SMD_VERSION (series $s); unset SLURM_SERIES or make them match" >&2
        exit 2
    fi
    SLURM_SERIES=$s
    unset s n
    case $SLURM_SERIES in
        24.11|25.05|25.11|26.05|26.11) LAB=${LAB:-/var/tmp/nvl72-lab-smd-$SLURM_SERIES} ;;
        *) echo "SchedMD's packages in SLURM_DEBS=$SLURM_DEBS are Slurm $SMD_VERSION; topology/nvl72 supports the series 24.11, 25.05, 25.11, 26.05 and 26.11" >&2; exit 2 ;;
    esac
elif [ -n "$SLURM_PREFIX" ]; then
    # The path as given (not resolved): the installation's binaries have it compiled in, and
    # the chroot holds its copy at the same path.
    SLURM_PREFIX=${SLURM_PREFIX%/}
    case $SLURM_PREFIX in
        /?*) ;;
        *) echo "SLURM_PREFIX must be an absolute path, got '$SLURM_PREFIX'" >&2; exit 2 ;;
    esac
    case $SLURM_PREFIX in
        *[[:space:]]*) echo "SLURM_PREFIX must not contain whitespace: '$SLURM_PREFIX'" >&2; exit 2 ;;
        /usr|/usr/local|/|/opt|/var|/var/tmp|/tmp|/etc|/home|/root) echo "refusing SLURM_PREFIX=$SLURM_PREFIX (the lab copies it into its chroot; give the folder of one Slurm installation)" >&2; exit 2 ;;
    esac
    PREFIX_VERSION=$(prefix_version)
    if [ -n "$PREFIX_VERSION" ]; then
        s=${PREFIX_VERSION%.*}
        if [ -n "${SLURM_SERIES:-}" ] && [ "$SLURM_SERIES" != "$s" ]; then
            echo "SLURM_SERIES=$SLURM_SERIES, but the Slurm installation at SLURM_PREFIX=$SLURM_PREFIX is $PREFIX_VERSION (series $s); unset SLURM_SERIES or make them match" >&2
            exit 2
        fi
        SLURM_SERIES=$s
        unset s
    elif [ -z "${SLURM_SERIES:-}" ]; then
        echo "cannot read the Slurm release of SLURM_PREFIX=$SLURM_PREFIX (no include/slurm/slurm_version.h, and sbin/slurmctld -V gave none); is it a Slurm installation (make install)?" >&2
        exit 2
    fi
    case $SLURM_SERIES in
        25.05) LAB=${LAB:-/var/tmp/nvl72-lab-25.05} ;;
        25.11) LAB=${LAB:-/var/tmp/nvl72-lab-25.11} ;;
        24.11|26.05|26.11) LAB=${LAB:-/var/tmp/nvl72-lab-prefix-$SLURM_SERIES} ;;
        *) echo "the Slurm installation at SLURM_PREFIX=$SLURM_PREFIX is ${PREFIX_VERSION:-$SLURM_SERIES}; topology/nvl72 supports the series 24.11, 25.05, 25.11, 26.05 and 26.11" >&2; exit 2 ;;
    esac
    LAB_ENV=(env "PATH=$SLURM_PREFIX/bin:$SLURM_PREFIX/sbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
             SLURM_CONF=/etc/slurm/slurm.conf)
else
    SLURM_SERIES=${SLURM_SERIES:-24.11}
    case $SLURM_SERIES in
        24.11) LAB=${LAB:-/var/tmp/nvl72-lab} ;;
        26.05) LAB=${LAB:-/var/tmp/nvl72-lab-26.05} ;;
        25.05|25.11|26.11) echo "Debian ships no Slurm $SLURM_SERIES: give your own installation of it, SLURM_PREFIX=/path/to/slurm-$SLURM_SERIES.x (docs/lab.md)" >&2; exit 2 ;;
        *) echo "SLURM_SERIES must be 24.11 (Debian trixie) or 26.05 (Debian sid), got '$SLURM_SERIES' (or give SLURM_PREFIX=<a Slurm installation>)" >&2; exit 2 ;;
    esac
fi
export SLURM_SERIES SLURM_PREFIX SLURM_DEBS
LAB=$(readlink -m "$LAB")       # canonical: compared with /proc/PID/root and /proc/mounts
export LAB
# LAB_ROOTFS: the chroot, $LAB/rootfs unless given. Two chroots of different Slurm releases
# may share one LAB's var/ (state, spool, logs, job output): that is a Slurm upgrade with the
# state directory in place (tests/e2e/tests/e2e_upgrade.rs).
ROOT=$(readlink -m "${LAB_ROOTFS:-$LAB/rootfs}")
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
