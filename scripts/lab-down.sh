#!/bin/bash
# lab-down.sh — stop the lab cluster started by lab-up.sh.
#
#   * cancels all jobs (unless --keep-jobs),
#   * stops every slurmd, slurmctld and munged by its PID file: SIGTERM, SIGKILL after a timeout,
#   * then (ACCOUNTING=1 labs) slurmdbd, then mariadbd, by their PID files in $LAB/var/run,
#   * kills, one PID at a time, any leftover process whose root directory is the lab chroot
#     (slurmstepd, job processes); nothing outside the chroot is ever touched,
#   * unmounts everything below the chroot (and below an unfinished one, its .tmp).
#
# Flags: --keep-mounts  keep the mounts and munged running (lab-up.sh uses it for restarts)
#        --keep-jobs    do not scancel
#        --keep-steps   stop the daemons but not the jobs: running jobs' slurmstepd and
#                       processes, munged and the mounts stay, as Slurm's upgrade guide has it
#                       (a new slurmd, of this or another LAB_ROOTFS, takes the steps over)
#        --keep-accounting  keep slurmdbd and mariadbd running (lab-up.sh's restarts with
#                       ACCOUNTING=1 and an unchanged slurmdbd.conf)
#        --slurmctld-only  stop slurmctld alone (implies --keep-steps): the slurmd keep
#                       running, the first half of Slurm's upgrade order (a newer slurmctld, of
#                       another LAB_ROOTFS, starts next with lab-up.sh's SLURMD=0)
# Env:   SLURM_SERIES=24.11 | 26.05, SLURM_PREFIX (a Slurm installation), SLURM_DEBS (SchedMD's
#        packages) and LAB (default
#        /var/tmp/nvl72-lab, /var/tmp/nvl72-lab-26.05 for 26.05, /var/tmp/nvl72-lab-25.11 for
#        an installation of 25.11, ...) and LAB_ROOTFS: the same as given to lab-up.sh
#        STOP_WAIT=15  seconds between SIGTERM and SIGKILL (more for a slurmctld under valgrind,
#                      which writes its leak report on exit; see docs/notebook/valgrind.md)
# The rootfs and $LAB/var (state, logs, job output) are kept; remove them with rm -rf.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lab-lib.sh"

KEEP_MOUNTS=0; KEEP_JOBS=0; KEEP_ACCT=0; KEEP_STEPS=0; CTLD_ONLY=0
for a in "$@"; do
    case $a in
        --keep-mounts) KEEP_MOUNTS=1 ;;
        --keep-jobs)   KEEP_JOBS=1 ;;
        --keep-accounting) KEEP_ACCT=1 ;;
        --keep-steps)  KEEP_STEPS=1; KEEP_JOBS=1; KEEP_MOUNTS=1 ;;
        --slurmctld-only) CTLD_ONLY=1; KEEP_STEPS=1; KEEP_JOBS=1; KEEP_MOUNTS=1 ;;
        -h|--help)     sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "lab-down.sh: unknown argument $a" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "lab-down.sh: must run as root" >&2; exit 1; }
STOP_WAIT=${STOP_WAIT:-15}
[[ $STOP_WAIT =~ ^[0-9]+$ ]] || { echo "lab-down.sh: STOP_WAIT must be a number of seconds" >&2; exit 2; }
[ -d "$LAB" ] && lab_lock      # one lab-up/lab-down at a time per LAB
T0=$(now_us)
say() { local e=$(( ($(now_us) - T0) / 100000 )); printf '[lab-down %3d.%ds] %s\n' $((e / 10)) $((e % 10)) "$*"; }

pids=()
stop_pidfile() {   # SIGTERM the pid in $1 if alive, and remember it
    local f=$1 p
    if alive "$f"; then
        read -r p < "$f"; kill -TERM "$p" 2>/dev/null && pids+=("$p")
    fi
    return 0
}
ours() {           # pid $1 still runs inside this lab's chroot (not a reused pid)
    kill -0 "$1" 2>/dev/null && [ "$(readlink "/proc/$1/root" 2>/dev/null)" = "$ROOT" ]
}
wait_pids() {      # wait up to $1 s for the remembered pids, then SIGKILL the remaining ones
    local end=$(( $(date +%s) + $1 )) p left
    while [ ${#pids[@]} -gt 0 ]; do
        left=0; for p in "${pids[@]}"; do ours "$p" && left=1; done
        [ $left = 0 ] && break
        if [ "$(date +%s)" -ge "$end" ]; then
            for p in "${pids[@]}"; do
                ours "$p" && { say "SIGKILL $p"; kill -KILL "$p" 2>/dev/null; }
            done
            break
        fi
        sleep 0.2
    done
    pids=()
}

if [ ! -d "$ROOT" ] && [ ! -d "$ROOT.tmp" ]; then
    say "no lab at $LAB"; exit 0
fi

if [ $KEEP_JOBS = 0 ] && alive "$VAR/run/slurmctld.pid" && mountpoint -q "$ROOT/proc"; then
    jobs=$(timeout 20 chroot "$ROOT" "${LAB_ENV[@]}" squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    if [ -n "${jobs// }" ]; then
        say "scancel $jobs"
        # shellcheck disable=SC2086
        timeout 20 chroot "$ROOT" "${LAB_ENV[@]}" scancel $jobs; sleep 1
    fi
fi

# SIGTERM slurmctld first, then every slurmd, and wait for all of them together.  (Stopped
# after the slurmd, slurmctld keeps agent threads talking to dead nodes and needs ~4 s more.)
ctld=0; alive "$VAR/run/slurmctld.pid" && ctld=1
stop_pidfile "$VAR/run/slurmctld.pid"
# BACKUP_CTLD=1 labs: the backup controller's own pid file
alive "$VAR/ctl2/run/slurmctld.pid" && ctld=$((ctld + 1))
stop_pidfile "$VAR/ctl2/run/slurmctld.pid"
[ $CTLD_ONLY = 1 ] || for f in "$VAR"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    stop_pidfile "$f"
done
[ ${#pids[@]} -gt 0 ] && say "stopping $( [ $ctld -gt 0 ] && echo "$ctld slurmctld and ")$(( ${#pids[@]} - ctld )) slurmd"
# ACCOUNTING=1: slurmdbd and mariadbd are stopped after slurmctld (which sends slurmdbd what it
# still holds as it exits), mariadbd after slurmdbd.
acct=0
if [ $KEEP_ACCT = 0 ] && { alive "$VAR/run/slurmdbd.pid" || alive "$VAR/run/mariadb.pid"; }; then acct=1; fi
# munged too (unless --keep-mounts); it takes ~2 s to exit, so overlap that with the others
# (with slurmdbd's stop when that runs: slurmctld may still need munge as it exits)
stop_munged() {
    if [ $KEEP_MOUNTS = 0 ] && alive "$ROOT/run/munge/munged.pid"; then
        say "stopping munged"; stop_pidfile "$ROOT/run/munge/munged.pid"
    fi
}
[ $acct = 1 ] || stop_munged
wait_pids "$STOP_WAIT"
# The daemons remove their pid files, unless SIGKILLed. A pid file whose process still runs
# belongs to a daemon of another chroot of this LAB (LAB_ROOTFS: slurmctld of the new release
# while the old slurmd stop, or the other way round), or to a slurmd --slurmctld-only keeps.
for f in "$VAR/run/slurmctld.pid" "$VAR/ctl2/run/slurmctld.pid" "$VAR"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    p=""; read -r p < "$f" 2>/dev/null || true
    [[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null || rm -f "$f"
done
[ -e "$VAR/run/slurmctld.pid" ] || rm -f "$VAR/run/slurmctld.wrap"
if [ $acct = 1 ]; then
    if alive "$VAR/run/slurmdbd.pid"; then say "stopping slurmdbd"; stop_pidfile "$VAR/run/slurmdbd.pid"; fi
    stop_munged
    wait_pids "$STOP_WAIT"
    if alive "$VAR/run/mariadb.pid"; then say "stopping mariadbd"; stop_pidfile "$VAR/run/mariadb.pid"; fi
    wait_pids "$STOP_WAIT"
    rm -f "$VAR/run/slurmdbd.pid" "$VAR/run/mariadb.pid"
fi
# --keep-accounting: their pids are not leftovers
keep=()
if [ $KEEP_ACCT = 1 ]; then
    for f in "$VAR/run/slurmdbd.pid" "$VAR/run/mariadb.pid"; do alive "$f" && keep+=("$(cat "$f")"); done
fi

# Leftovers living in the lab chroot (slurmstepd, job shells, sleep): kill by PID only.
leftover=()
[ $KEEP_STEPS = 1 ] || for d in /proc/[0-9]*; do
    r=$(readlink "$d/root" 2>/dev/null) || continue
    [ "$r" = "$ROOT" ] || [ "$r" = "$ROOT.tmp" ] || continue
    [ $KEEP_MOUNTS = 1 ] && [ "$(cat "$d/comm" 2>/dev/null)" = munged ] && continue
    [[ " ${keep[*]} " = *" ${d#/proc/} "* ]] && continue
    leftover+=("${d#/proc/}")
done
if [ ${#leftover[@]} -gt 0 ]; then
    say "killing leftover chroot pids: ${leftover[*]}"
    for p in "${leftover[@]}"; do kill -TERM "$p" 2>/dev/null; done
    pids=("${leftover[@]}"); wait_pids 5
fi

rc=0
if [ $KEEP_MOUNTS = 0 ]; then
    for d in "$ROOT" "$ROOT.tmp"; do
        [ -d "$d" ] || continue
        if ! unmount_all "$d"; then
            say "ERROR: still mounted below $d:"; mounts_under "$d" | sed 's/^/    /'; rc=1
        fi
    done
    [ $rc = 0 ] && say "unmounted"
fi
say "down."
exit $rc
