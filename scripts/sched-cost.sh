#!/bin/bash
# sched-cost.sh — slurmctld's scheduling cost with topology/nvl72 vs topology/block, measured in
# two real Slurm labs (scripts/lab-up.sh) with the same nodes and the same queue, run after run,
# and printed side by side as ratios nvl72/block with their run-to-run spread.
# Method and results: docs/notebook/real-slurm-cost.md.
#
# Usage:  [ENV=...] scripts/sched-cost.sh            (root; build the plugin first:
#                                                      cargo build --release -p topology_nvl72)
#   For final figures hold the shared bench lock:  flock /var/tmp/nvl72-bench.lock bash scripts/sched-cost.sh
#
# Per repeat, per plugin, interleaved (block, nvl72; then nvl72, block; ...) so both see the
# same machine noise, one lab measured at a time:
#   1. clean state: RESET=clean restarts the lab with CLEAN=1 (fresh slurmctld, wiped state);
#      RESET=scancel cancels every job and waits until all nodes are idle again;
#   2. SETTLE seconds of quiet, then `sdiag -r` and slurmctld's utime+stime (/proc/PID/stat);
#   3. submits the same deterministic mixed queue (JOBS jobs from SEED, all --exclusive
#      --gres=gpu:4 with a time limit and --wrap 'sleep N'): 1, 2, 4 trays; 8, 12, 16 trays
#      with --segment=4; 18 trays; 32-72 trays — one sbatch after the other, each timed;
#   4. waits until WINDOW seconds after the first submit, then reads the CPU delta and
#      `sdiag --json` (exact sums, not sdiag's rounded means):
#        cpu_s        slurmctld utime+stime over the window
#        main_cpu_us/job  CPU time of slurmctld's sched_agent thread (the main scheduler;
#                     /proc/PID/task/TID/schedstat, ns) / schedule_cycle_depth
#        bf_cpu_us/job    CPU time of the bckfl thread (backfill) / bf_depth_sum
#                     (these two are not stretched by other processes on the host: the
#                     sdiag times below are wall-clock, and grow when the host is busy)
#        main_us/job  schedule_cycle_sum / schedule_cycle_depth  (main scheduler time per job
#                     it tested; depth = jobs tested summed over all cycles)
#        bf_us/job    bf_cycle_sum / bf_depth_sum  (backfill time per job it considered)
#        bf_us/try    bf_cycle_sum / bf_depth_try_sum  (per job it tried to place)
#        submit_us    REQUEST_SUBMIT_BATCH_JOB total_time / count (server side)
#        sbatch_ms    mean wall time of one sbatch (client side: exec + munge + RPC)
#        rss_mb, hwm_mb   slurmctld's resident memory at the end of the window, and its peak
#      plus cycles, depths, jobs started/backfilled, the largest cycles and bf_table_mean
#      (bf_table_size_sum / bf_cycle_counter: backfill's mean node-space table size, i.e. how
#      many distinct future times it planned over) for context.
# Prints one line per run and a final table: per metric block mean [min-max], nvl72 mean
# [min-max], ratio of the means and the min-max of the per-repeat ratios.
#
# Env (defaults in brackets):
#   RACKS [8]            racks of 18 trays (both labs the same)
#   JOBS [400]           queue size per run
#   REPEATS [5]          runs per plugin
#   CLOUD [0]            1 = lab-up CLOUD=1: trays are power-saving cloud nodes without slurmd;
#                        jobs are placed and stay CONFIGURING (see docs/notebook/real-slurm-cost.md)
#   WINDOW [120]         seconds measured, from the first submit (must exceed the submit time)
#   SEED [1]             queue seed (the same queue for both plugins and every repeat)
#   SLEEP_MIN [20], SLEEP_MAX [90]  job run time (sleep) range in seconds
#   RESET [clean; scancel for real labs of more than 600 trays]  see step 1
#   SETTLE [5]           quiet seconds before each measured window
#   BOTH_UP [1 when CLOUD=1 or RACKS*18 <= 600]  keep both labs up (else one at a time)
#   ORDER [block,nvl72]  first repeat's order (alternates after)
#   SCHED_PARAMS [bf_interval=5]  slurm.conf SchedulerParameters for both labs
#   PLUGIN [target/release/libtopology_nvl72.so]
#   LAB_BLOCK [/var/tmp/nvl72-cost-block], LAB_NVL72 [/var/tmp/nvl72-cost-nvl72]
#   CTLD_PORT_BLOCK [6847], CTLD_PORT_NVL72 [6837]
#   PORT0_BLOCK, PORT0_NVL72 [31000, 30000 up to 999 trays; 26100 for both above (cloud
#                        nodes listen on nothing; real big labs run one at a time)]
#   OUT [/var/tmp/nvl72-cost-logs/<RACKS>r-<cloud|real>-<time>]  runs.tsv, queue, sbatch times
#   KEEP [0]             1 = leave the labs up at the end (default: lab-down.sh both)
#   PERF [0]             1 = perf record -g slurmctld during each nvl72 window into OUT
#   PREEMPT [0]          1 = the cost of preemption (issue 52): partitions low (PriorityTier=1,
#                        requeued) and high (PriorityTier=10) over every tray; before each
#                        window the lab is filled with low jobs (FILL_SIZES, --requeue, not
#                        measured), then the JOBS queue is submitted to `high`, so every job
#                        starts only by preemption, over hundreds of candidates
#   FILL_SIZES ["1 2 2 4 4 8 8 10 18"]  low job sizes drawn (from SEED) to fill every tray
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")

RACKS=${RACKS:-8}
JOBS=${JOBS:-400}
REPEATS=${REPEATS:-5}
CLOUD=${CLOUD:-0}
WINDOW=${WINDOW:-120}
SEED=${SEED:-1}
SLEEP_MIN=${SLEEP_MIN:-20}
SLEEP_MAX=${SLEEP_MAX:-90}
SETTLE=${SETTLE:-5}
NPR=18
NNODES=$((RACKS * NPR))
if [ "$CLOUD" = 1 ] || [ "$NNODES" -le 600 ]; then RESET=${RESET:-clean}; BOTH_UP=${BOTH_UP:-1}
else RESET=${RESET:-scancel}; BOTH_UP=${BOTH_UP:-0}; fi
ORDER=${ORDER:-block,nvl72}
SCHED_PARAMS=${SCHED_PARAMS:-bf_interval=5}
PLUGIN=${PLUGIN:-$REPO/target/release/libtopology_nvl72.so}
LAB_BLOCK=${LAB_BLOCK:-/var/tmp/nvl72-cost-block}
LAB_NVL72=${LAB_NVL72:-/var/tmp/nvl72-cost-nvl72}
CTLD_PORT_BLOCK=${CTLD_PORT_BLOCK:-6847}
CTLD_PORT_NVL72=${CTLD_PORT_NVL72:-6837}
if [ "$NNODES" -le 999 ]; then PORT0_BLOCK=${PORT0_BLOCK:-31000}; PORT0_NVL72=${PORT0_NVL72:-30000}
else PORT0_BLOCK=${PORT0_BLOCK:-26100}; PORT0_NVL72=${PORT0_NVL72:-26100}; fi
KEEP=${KEEP:-0}
PERF=${PERF:-0}
PREEMPT=${PREEMPT:-0}
FILL_SIZES=${FILL_SIZES:-1 2 2 4 4 8 8 10 18}
PREEMPT_CONF='PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
PartitionName=low Nodes=ALL PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=ALL PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP'
if [ "$PREEMPT" = 1 ]; then EXTRA_CONF=$PREEMPT_CONF; HIGH=(-p high); else EXTRA_CONF=""; HIGH=(); fi
OUT=${OUT:-/var/tmp/nvl72-cost-logs/${RACKS}r-$([ "$CLOUD" = 1 ] && echo cloud || echo real)$([ "$PREEMPT" = 1 ] && echo -preempt)-$(date +%Y%m%d-%H%M%S)}

die() { echo "[sched-cost] ERROR: $*" >&2; exit 1; }
say() { printf '[sched-cost %s] %s\n' "$(date +%T)" "$*"; }
for v in RACKS JOBS REPEATS WINDOW SEED SLEEP_MIN SLEEP_MAX SETTLE; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
if [ "$RACKS" -lt 1 ] || [ "$JOBS" -lt 1 ] || [ "$REPEATS" -lt 1 ]; then die "RACKS, JOBS, REPEATS must be >= 1"; fi
case $CLOUD in 0|1) ;; *) die "CLOUD must be 0 or 1" ;; esac
case $PREEMPT in 0|1) ;; *) die "PREEMPT must be 0 or 1" ;; esac
case $RESET in clean|scancel) ;; *) die "RESET must be clean or scancel" ;; esac
case $ORDER in block,nvl72|nvl72,block) ;; *) die "ORDER must be block,nvl72 or nvl72,block" ;; esac
[ "$(id -u)" = 0 ] || die "must run as root"
[ -s "$PLUGIN" ] || die "plugin $PLUGIN missing: cargo build --release -p topology_nvl72"
if [ "$PERF" = 1 ]; then command -v perf >/dev/null || die "PERF=1 needs perf (apt-get install linux-perf)"; fi
mkdir -p "$OUT"
TCK=$(getconf CLK_TCK)

lab_of()  { if [ "$1" = block ]; then echo "$LAB_BLOCK"; else echo "$LAB_NVL72"; fi; }
sl()      { local lab=$1; shift; LAB=$lab "$HERE/sl" "$@"; }
ctld_pid() { local p; read -r p < "$(lab_of "$1")/var/run/slurmctld.pid"; echo "$p"; }   # first line: see Lab::live_pid
# up PLUGIN [CLEAN]: lab-up.sh for that plugin's lab (output to OUT/lab-up.log)
up() {
    local p=$1 c=${2:-0} port0 cport
    if [ "$p" = block ]; then port0=$PORT0_BLOCK; cport=$CTLD_PORT_BLOCK; else port0=$PORT0_NVL72; cport=$CTLD_PORT_NVL72; fi
    LAB=$(lab_of "$p") TOPO=$p RACKS=$RACKS NPR=$NPR CPU_NODES=0 CLOUD=$CLOUD CTLD_PORT=$cport \
        PORT0=$port0 PLUGIN=$PLUGIN SCHED_PARAMS=$SCHED_PARAMS CLEAN=$c WAIT=${WAIT:-1800} EXTRA_CONF=$EXTRA_CONF \
        "$HERE/lab-up.sh" >> "$OUT/lab-up.log" 2>&1 && return 0
    # lab-up.sh checks each slurmd's pid file 3 s after starting them; on a loaded 2-core host a
    # slurmd may take longer to write it ("slurmd for gbNNN is not running" while it runs).
    # lab-up.sh is idempotent: wait and run it again (without CLEAN) to finish the start.
    say "lab-up.sh for $p failed; retrying once in 10 s: $(grep ERROR "$OUT/lab-up.log" | tail -n 1)"
    sleep 10
    LAB=$(lab_of "$p") TOPO=$p RACKS=$RACKS NPR=$NPR CPU_NODES=0 CLOUD=$CLOUD CTLD_PORT=$cport \
        PORT0=$port0 PLUGIN=$PLUGIN SCHED_PARAMS=$SCHED_PARAMS CLEAN=0 WAIT=${WAIT:-1800} EXTRA_CONF=$EXTRA_CONF \
        "$HERE/lab-up.sh" >> "$OUT/lab-up.log" 2>&1 ||
        { tail -n 30 "$OUT/lab-up.log" >&2; die "lab-up.sh for $p failed (log: $OUT/lab-up.log)"; }
}
down() { LAB=$(lab_of "$1") "$HERE/lab-down.sh" >> "$OUT/lab-up.log" 2>&1 || true; }
STARTED=()
cleanup() {
    [ "$KEEP" = 1 ] && return 0
    local p
    for p in "${STARTED[@]}"; do down "$p"; done
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM

# ------------------------------------------------------------------ the queue (deterministic)
# One line per job: trays segment(- = none) time_limit_minutes sleep_seconds
awk -v n="$JOBS" -v seed="$SEED" -v max="$NNODES" -v smin="$SLEEP_MIN" -v smax="$SLEEP_MAX" 'BEGIN {
    srand(seed)
    split("1 1 1 1 1 1 1 2 2 2 4 4 8 8 12 16 18 18 32 36 48 64 72", pool, " ")   # 23 kinds
    split("10 20 30 60", tl, " ")
    for (i = 1; i <= n; i++) {
        k = pool[int(rand() * 23) + 1] + 0
        if (k > max) k = max
        seg = (k >= 8 && k <= 16) ? 4 : "-"
        printf "%d %s %d %d\n", k, seg, tl[int(rand() * 4) + 1], smin + int(rand() * (smax - smin + 1))
    }
}' > "$OUT/queue"
if [ "$PREEMPT" = 1 ]; then
    # One line per low job: its trays; they add up to every tray.
    awk -v seed="$SEED" -v max="$NNODES" -v sizes="$FILL_SIZES" 'BEGIN {
        srand(seed + 1000); k = split(sizes, pool, " "); left = max
        while (left > 0) { n = pool[int(rand() * k) + 1] + 0; if (n > left) n = left; print n; left -= n }
    }' > "$OUT/fill"
    say "fill: $(wc -l < "$OUT/fill") low jobs on every tray, before each window (not measured)"
fi
say "queue: $JOBS jobs, $(awk '{t += $1} END {print t}' "$OUT/queue") tray-jobs on $NNODES trays; sizes: $(
    awk '{c[$1]++} END {for (k in c) printf "%sx%d ", c[k], k; print ""}' "$OUT/queue" | tr ' ' '\n' | sort -t x -k2 -n | paste -sd' ')"
say "RACKS=$RACKS CLOUD=$CLOUD JOBS=$JOBS REPEATS=$REPEATS WINDOW=${WINDOW}s RESET=$RESET BOTH_UP=$BOTH_UP SEED=$SEED SCHED_PARAMS=$SCHED_PARAMS"
say "plugin $PLUGIN ($(sha256sum "$PLUGIN" | cut -c1-12)); output in $OUT"

# ------------------------------------------------------------------ one measured run
# wait_idle PLUGIN: every gb node idle (or idle~ for cloud) and no job left
wait_idle() {
    local lab end n
    lab=$(lab_of "$1"); end=$(( $(date +%s) + 600 ))
    while :; do
        n=$(sl "$lab" sinfo -h -N -p gpu -o '%N %t' | sort -u | awk '$2 == "idle" || $2 == "idle~"' | wc -l)
        [ "$n" -ge "$NNODES" ] && [ -z "$(sl "$lab" squeue -h -o %i)" ] && return 0
        [ "$(date +%s)" -lt "$end" ] || die "$1: nodes not idle after 600 s ($n/$NNODES)"
        sleep 1
    done
}
reset_lab() {
    local p=$1 lab ids
    lab=$(lab_of "$p")
    if [ "$BOTH_UP" = 0 ]; then
        local o; o=$([ "$p" = block ] && echo nvl72 || echo block)
        if [ -s "$(lab_of "$o")/var/run/slurmctld.pid" ]; then down "$o"; fi
    fi
    if [ "$RESET" = clean ]; then
        up "$p" 1
    else
        up "$p" 0
        ids=$(sl "$lab" squeue -h -o %i | tr '\n' ' ')
        # shellcheck disable=SC2086
        [ -z "${ids// }" ] || sl "$lab" scancel $ids
        wait_idle "$p"
    fi
    [[ " ${STARTED[*]} " == *" $p "* ]] || STARTED+=("$p")
}
# fill_lab PLUGIN: every tray running a low, requeueable job (PREEMPT=1)
fill_lab() {
    local lab end n
    lab=$(lab_of "$1")
    cp "$OUT/fill" "$lab/var/jobs/fill"
    # shellcheck disable=SC2016  # expands in the chroot's bash
    sl "$lab" /bin/bash -c 'while read -r n; do
        sbatch -Q -p low --requeue -J f$n -N "$n" --exclusive -t 60 -o /dev/null --wrap "sleep 3000" >/dev/null ||
            echo "sbatch failed: fill $n" >&2
        done < fill'
    # Full, or as full as the plugin's placement lets the drawn sizes get (the last few jobs
    # may not fit the holes left): the held count unchanged for 30 s and at least 98 %.
    local last=-1 since
    since=$(date +%s); end=$(( since + 1800 ))
    while :; do
        n=$(sl "$lab" squeue -h -p low -t R,CF -o %D | awk '{t += $1} END {print t + 0}')
        [ "$n" -ge "$NNODES" ] && return 0
        if [ "$n" != "$last" ]; then last=$n; since=$(date +%s); fi
        if [ $(( $(date +%s) - since )) -ge 30 ] && [ $(( n * 100 )) -ge $(( NNODES * 98 )) ]; then
            say "$1: the low jobs hold $n of $NNODES trays (the rest fit none of the waiting sizes)"
            return 0
        fi
        [ "$(date +%s)" -lt "$end" ] || die "$1: the low jobs hold $n of $NNODES trays after 1800 s"
        sleep 2
    done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# thread_ns PID COMM: CPU time of the threads named COMM (sched_agent, bckfl)
# shellcheck source=scripts/thread-cpu.sh
source "$HERE/thread-cpu.sh"

# sdiag --json (pretty-printed, one key a line) -> "key value" lines for the figures we use
sdiag_figures() {
    awk '
    /"message_type": "REQUEST_SUBMIT_BATCH_JOB"/ { sub_ = 1; next }
    sub_ && /"count":/      { v = $2; gsub(/[^0-9]/, "", v); print "submit_count", v; next }
    sub_ && /"total_time":/ { v = $2; gsub(/[^0-9]/, "", v); print "submit_total_us", v; sub_ = 0; next }
    /^    "(schedule_cycle_sum|schedule_cycle_total|schedule_cycle_depth|schedule_cycle_max|bf_cycle_sum|bf_cycle_counter|bf_depth_sum|bf_depth_try_sum|bf_cycle_max|bf_backfilled_jobs|bf_table_size_sum|jobs_started|jobs_submitted|jobs_pending|jobs_running)": [0-9]+,?$/ {
        k = $1; gsub(/[":]/, "", k); v = $2; gsub(/[^0-9]/, "", v); print k, v }'
}

RUNS=$OUT/runs.tsv
printf 'repeat\tplugin\tcpu_s\tmain_us\tmain_cycles\tmain_depth\tmain_us_per_job\tbf_us\tbf_cycles\tbf_depth\tbf_try\tbf_us_per_job\tbf_us_per_try\tsubmit_us\tsbatch_ms\tsubmit_s\tstarted\tbackfilled\tmain_max_us\tbf_max_us\tbf_table_mean\tmain_cpu_us_per_job\tbf_cpu_us_per_job\tmain_cpu_s\tbf_cpu_s\trss_mb\thwm_mb\n' > "$RUNS"

run_one() {
    local r=$1 p=$2 lab pid c0 c1 t0 t1 left rss_kb hwm_kb perfpid=""
    lab=$(lab_of "$p")
    reset_lab "$p"
    [ "$PREEMPT" = 0 ] || fill_lab "$p"
    sleep "$SETTLE"
    pid=$(ctld_pid "$p")
    sl "$lab" sdiag -r >/dev/null
    if [ "$PERF" = 1 ] && [ "$p" = nvl72 ]; then
        perf record -F 499 -g -p "$pid" -o "$OUT/perf-$r-$p.data" >/dev/null 2>&1 & perfpid=$!
    fi
    c0=$(cpu_ticks "$pid"); m0=$(thread_ns "$pid" sched_agent); b0=$(thread_ns "$pid" bckfl); t0=$(date +%s.%N)
    # all sbatch from one shell in the chroot; each one timed (us) with bash's EPOCHREALTIME
    cp "$OUT/queue" "$lab/var/jobs/queue"
    # shellcheck disable=SC2016  # expands in the chroot's bash
    sl "$lab" /bin/bash -c '
        while read -r n seg tl sl; do
            a=$EPOCHREALTIME
            if [ "$seg" = - ]; then s=(); else s=(--segment="$seg"); fi
            sbatch -Q $1 -J c$n -N "$n" "${s[@]}" --exclusive --gres=gpu:4 -t "$tl" -o /dev/null \
                --wrap "sleep $sl" >/dev/null || echo "sbatch failed: $n $seg" >&2
            b=$EPOCHREALTIME
            echo $(( ${b/./} - ${a/./} ))
        done < queue' -- "${HIGH[*]:-}" > "$OUT/sbatch-$r-$p.us"
    t1=$(date +%s.%N)
    left=$(awk -v a="$t0" -v b="$t1" -v w="$WINDOW" 'BEGIN {l = w - (b - a); print (l > 0 ? l : 0)}')
    [ "$left" != 0 ] || say "WARNING: submitting took longer than WINDOW=$WINDOW s"
    sleep "$left"
    c1=$(cpu_ticks "$pid"); m1=$(thread_ns "$pid" sched_agent); b1=$(thread_ns "$pid" bckfl)
    rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"); hwm_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
    [ -z "$perfpid" ] || { kill -INT "$perfpid"; wait "$perfpid" 2>/dev/null || true; }
    sl "$lab" sdiag --json | sdiag_figures > "$OUT/sdiag-$r-$p.txt"
    sl "$lab" sdiag > "$OUT/sdiag-$r-$p.log"
    awk -v r="$r" -v p="$p" -v rss="$rss_kb" -v hwm="$hwm_kb" -v cpu="$(( c1 - c0 ))" -v mns="$(( m1 - m0 ))" -v bns="$(( b1 - b0 ))" -v tck="$TCK" -v sub_s="$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" '
        FNR == NR { sb += $1; nsb++; next }
        { f[$1] = $2 }
        END {
            md = f["schedule_cycle_depth"]; bd = f["bf_depth_sum"]; bt = f["bf_depth_try_sum"]
            printf "%d\t%s\t%.2f\t%d\t%d\t%d\t%.2f\t%d\t%d\t%d\t%d\t%.2f\t%.2f\t%.1f\t%.2f\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.2f\t%.2f\t%.3f\t%.3f\t%.1f\t%.1f\n", r, p, cpu / tck,
                f["schedule_cycle_sum"], f["schedule_cycle_total"], md, (md ? f["schedule_cycle_sum"] / md : 0),
                f["bf_cycle_sum"], f["bf_cycle_counter"], bd, bt, (bd ? f["bf_cycle_sum"] / bd : 0), (bt ? f["bf_cycle_sum"] / bt : 0),
                (f["submit_count"] ? f["submit_total_us"] / f["submit_count"] : 0), (nsb ? sb / nsb / 1000 : 0), sub_s,
                f["jobs_started"], f["bf_backfilled_jobs"], f["schedule_cycle_max"], f["bf_cycle_max"],
                (f["bf_cycle_counter"] ? f["bf_table_size_sum"] / f["bf_cycle_counter"] : 0),
                (md ? mns / 1000 / md : 0), (bd ? bns / 1000 / bd : 0), mns / 1e9, bns / 1e9,
                rss / 1024, hwm / 1024
        }' "$OUT/sbatch-$r-$p.us" "$OUT/sdiag-$r-$p.txt" >> "$RUNS"
    tail -n 1 "$RUNS" | awk -F'\t' '{printf "[run %d %-5s] cpu %.2f s (main %.2f us/job, bf %.2f us/job on CPU) | main %d us / %d jobs in %d cycles = %.2f us/job | bf %d us / %d jobs (%d tried) in %d cycles = %.2f us/job | submit rpc %.0f us, sbatch %.1f ms (%s s) | started %d (bf %d)\n",
        $1, $2, $3, $22, $23, $4, $6, $5, $7, $8, $10, $11, $9, $12, $14, $15, $16, $17, $18}'
}

# ------------------------------------------------------------------ the runs
if [ "$BOTH_UP" = 1 ]; then
    say "bringing up both labs ($RACKS racks, CLOUD=$CLOUD)"
    for p in block nvl72; do up "$p" 1; STARTED+=("$p"); done
fi
first=${ORDER%,*}; second=${ORDER#*,}
for r in $(seq 1 "$REPEATS"); do
    if [ $((r % 2)) = 1 ]; then a=$first; b=$second; else a=$second; b=$first; fi
    run_one "$r" "$a"
    run_one "$r" "$b"
done

# ------------------------------------------------------------------ the table
{
echo
echo "== $RACKS racks ($NNODES trays), CLOUD=$CLOUD, $JOBS jobs, ${WINDOW}s window, $REPEATS repeats, $(uptime | sed 's/.*load/load/')"
awk -F'\t' '
NR == 1 { for (i = 3; i <= NF; i++) name[i] = $i; nf = NF; next }
{
    r = $1; p = $2
    for (i = 3; i <= nf; i++) {
        v[p, i, r] = $i; s[p, i] += $i; n[p, i]++
        if (!((p, i) in mn) || $i < mn[p, i]) mn[p, i] = $i
        if (!((p, i) in mx) || $i > mx[p, i]) mx[p, i] = $i
    }
    rep[r] = 1
}
END {
    printf "%-20s %-30s %-30s %-8s %s\n", "metric", "block mean [min-max]", "nvl72 mean [min-max]", "ratio", "per-repeat ratio [min-max]"
    split("3 22 23 7 12 13 14 15 24 25 4 6 8 10 11 5 9 21 17 18 19 20 26 27", order, " ")
    for (k = 1; k in order; k++) {
        i = order[k]
        if (!n["block", i] || !n["nvl72", i]) continue
        mb = s["block", i] / n["block", i]; mv = s["nvl72", i] / n["nvl72", i]
        rmin = ""; rmax = ""
        for (r in rep) if ((("block", i, r) in v) && (("nvl72", i, r) in v) && v["block", i, r] > 0) {
            q = v["nvl72", i, r] / v["block", i, r]
            if (rmin == "" || q < rmin) rmin = q; if (rmax == "" || q > rmax) rmax = q
        }
        printf "%-20s %-30s %-30s %-8s %s\n", name[i],
            sprintf("%.2f [%.2f-%.2f]", mb, mn["block", i], mx["block", i]),
            sprintf("%.2f [%.2f-%.2f]", mv, mn["nvl72", i], mx["nvl72", i]),
            (mb > 0 ? sprintf("%.3f", mv / mb) : "-"),
            (rmin != "" ? sprintf("[%.3f-%.3f]", rmin, rmax) : "-")
    }
}' "$RUNS"
} | tee "$OUT/table.txt"
say "per-run figures: $RUNS"
