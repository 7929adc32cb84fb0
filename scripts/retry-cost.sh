#!/bin/bash
# retry-cost.sh — what slurmctld pays for jobs the racks fit but Slurm's own selection refuses on
# every rack (issue 36): in one real CLOUD lab (scripts/lab-up.sh CLOUD=1, no slurmd), every
# other tray is taken by one job, so no two free trays are adjacent, then JOBS jobs
# `-N 2 --contiguous --exclusive --gres=gpu:4` wait for ever. On 26.05 Slurm's retry loop
# (common_topo_choose_nodes) calls the plugin again after each refusal, one dropped node at a
# time (JOB_ARGS changes the jobs). Measured per plugin build, one after the other in the same lab, over WINDOW seconds:
#   main_cpu_s   CPU of slurmctld's sched_agent thread (the main scheduler)
#   bf_cpu_s     CPU of its bckfl thread (backfill)
#   main_max_ms  sdiag schedule_cycle_max (the longest main scheduling pass, write locks held)
#   main_cycles, main_mean_ms   schedule_cycle_total, schedule_cycle_sum / total
#   bf_max_ms, bf_cycles        bf_cycle_max, bf_cycle_counter
#
# Usage (root; build each plugin for the lab's series first):
#   PLUGINS="before=/tmp/before.so after=target/slurm-26-05/libtopology_nvl72.so" \
#     SLURM_SERIES=26.05 bash scripts/retry-cost.sh
# Env [defaults]: PLUGINS (name=path ..., required; `block` alone means topology/block),
#   RACKS [278], JOBS [50], WINDOW [120], SLURM_SERIES [26.05],
#   JOB_ARGS ["-N 2 --contiguous"] (the waiting jobs' shape; "-N 10" waits too, as no rack
#   has 10 free trays, but for a reason the plugin sees: the baseline of an ordinary wait;
#   "-n 10 --gpus-per-task=3" with JOB_GRES= fits a rack's nine free trays by GPU count, but a
#   tray runs one such task: Slurm refuses every rack for resources and its retry loop drops
#   one free tray a call), JOB_GRES ["--gres=gpu:4"] (added to JOB_ARGS),
#   LAB [/var/tmp/nvl72-retry-cost-<series>], CTLD_PORT [6897], KEEP [0] (1: leave the lab up)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_SERIES=${SLURM_SERIES:-26.05}
RACKS=${RACKS:-278}
JOBS=${JOBS:-50}
WINDOW=${WINDOW:-120}
LAB=${LAB:-/var/tmp/nvl72-retry-cost-$SLURM_SERIES}
CTLD_PORT=${CTLD_PORT:-6897}
KEEP=${KEEP:-0}
JOB_ARGS=${JOB_ARGS:--N 2 --contiguous}
JOB_GRES=${JOB_GRES---gres=gpu:4}
PLUGINS=${PLUGINS:?set PLUGINS=\"name=path.so ...\" (or block)}
export LAB

die() { echo "[retry-cost] ERROR: $*" >&2; exit 1; }
say() { printf '[retry-cost %s] %s\n' "$(date +%T)" "$*"; }
[ "$(id -u)" = 0 ] || die "must run as root"
for v in RACKS JOBS WINDOW; do [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a number"; done
sl() { "$HERE/sl" "$@"; }
cleanup() { [ "$KEEP" = 1 ] || "$HERE/lab-down.sh" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# thread_ns PID COMM: CPU time of the threads named COMM (sched_agent, bckfl)
# shellcheck source=scripts/thread-cpu.sh
source "$HERE/thread-cpu.sh"
sdiag_value() { sl sdiag --json | awk -v k="\"$1\":" '$1 == k {v = $2; gsub(/[^0-9]/, "", v); print v; exit}'; }

printf '%-8s %10s %10s %12s %12s %12s %10s %10s\n' plugin main_cpu_s bf_cpu_s main_max_ms main_mean_ms main_cycles bf_max_ms bf_cycles
for entry in $PLUGINS; do
    name=${entry%%=*} path=${entry#*=}
    if [ "$entry" = block ]; then topo=block plugin_env=(); else
        [ -s "$path" ] || die "$name: no plugin at $path"
        topo=nvl72 plugin_env=(PLUGIN="$(readlink -f "$path")")
    fi
    env TOPO=$topo "${plugin_env[@]}" RACKS="$RACKS" CLOUD=1 CPU_NODES=0 CLEAN=1 \
        CTLD_PORT="$CTLD_PORT" WAIT=1800 bash "$HERE/lab-up.sh" > "$LAB.lab-up.log" 2>&1 ||
        { tail -n 20 "$LAB.lab-up.log" >&2; die "lab-up.sh failed for $name"; }
    # Every other tray (in node table order) taken, by one job per rack (a job of one rack
    # fits every plugin): no two free trays are adjacent.
    sl sinfo -h -N -p gpu -o %N | sort -u | awk 'NR % 2 == 1' |
        awk -v npr=$((18 / 2)) '{ printf "%s%s", $0, (NR % npr ? "," : "\n") }' > "$LAB.holders"
    while read -r trays; do
        sl sbatch -Q -N "$(tr ',' '\n' <<< "$trays" | wc -l)" --exclusive -w "$trays" -t 600 \
            -o /dev/null --wrap 'sleep 36000' >/dev/null
    done < "$LAB.holders"
    for _ in $(seq 600); do
        [ -z "$(sl squeue -h -t PD -o %i)" ] && break
        sleep 1
    done
    read -r pid < "$LAB/var/run/slurmctld.pid"
    sl sdiag -r >/dev/null
    m0=$(thread_ns "$pid" sched_agent) b0=$(thread_ns "$pid" bckfl)
    # A slurmctld that holds its locks for long makes sbatch time out: counted, not fatal.
    failed=0
    for _ in $(seq "$JOBS"); do
        # shellcheck disable=SC2086  # JOB_ARGS and JOB_GRES are lists of options
        sl sbatch -Q $JOB_ARGS --exclusive $JOB_GRES -t 10 -o /dev/null \
            --wrap 'sleep 60' >/dev/null 2>&1 || failed=$((failed + 1))
    done
    sleep "$WINDOW"
    m1=$(thread_ns "$pid" sched_agent) b1=$(thread_ns "$pid" bckfl)
    pending=$(sl squeue -h -t PD | wc -l || echo 0)
    [ "$failed" = 0 ] || say "$name: $failed of $JOBS sbatch timed out (slurmctld busy)"
    [ "$pending" -ge "$JOBS" ] || say "$name: $pending jobs pending"
    slow=$(grep -c 'very large processing time' "$LAB/var/log/slurmctld.log" || true)
    longest=$(grep -o 'very large processing time from [a-z_]*: usec=[0-9]*' "$LAB/var/log/slurmctld.log" |
        sort -t= -k2 -n | tail -n 1 || true)
    say "$name: $slow 'very large processing time' warnings; longest: ${longest:-none}"
    awk -v n="$name" -v m=$(( m1 - m0 )) -v b=$(( b1 - b0 )) -v mx="$(sdiag_value schedule_cycle_max)" \
        -v su="$(sdiag_value schedule_cycle_sum)" -v tot="$(sdiag_value schedule_cycle_total)" \
        -v bmx="$(sdiag_value bf_cycle_max)" -v bc="$(sdiag_value bf_cycle_counter)" \
        'BEGIN { printf "%-8s %10.3f %10.3f %12.1f %12.1f %12d %10.1f %10d\n", n, m / 1e9, b / 1e9,
                 mx / 1e3, (tot ? su / tot / 1e3 : 0), tot, bmx / 1e3, bc }'
    "$HERE/lab-down.sh" >/dev/null 2>&1 || true
done
