#!/bin/bash
# valgrind-storm.sh [N ...] — slurmctld under valgrind (memcheck; helgrind or DRD with
# TOOL=) with topology/nvl72 loaded, through a storm of N mixed sbatch submissions with a
# reconfigure in the middle; once per N (default: 500 2000), then a comparison.  See
# docs/notebook/valgrind.md.
#
# For each N, on an isolated lab (never the shared default one):
#   1. lab-up.sh with CLEAN=1 and slurmctld under valgrind (CTLD_WRAP; valgrind is installed in
#      the chroot), log_decisions on and `scontrol setdebug verbose`, so that every evaluation
#      that reaches the plugin's engine leaves a line in slurmctld.log;
#   2. N sbatch of mixed shapes (-N k, -N a-b, --segment, -w in one rack and across racks,
#      --gpus, -n --gpus-per-task, --ntasks-per-node, -c, --mem, --exclusive, the cpu partition,
#      --begin), short sleeps, so that pending jobs are evaluated again and again; some are
#      refused at submission by design;
#   3. `scontrol reconfigure` after N/2 submissions, checking that the new slurmctld process runs
#      under valgrind too;
#   4. waits for the queue to drain (DRAIN_TIMEOUT), cancels what is left, stops slurmctld with
#      SIGTERM and waits for valgrind's leak report;
#   5. summarises the valgrind logs (scripts/valgrind-summary.py): invalid reads/writes/frees,
#      uninitialised uses, crashes, definite and indirect leaks — all, and those with a frame in
#      topology_nvl72.so (our Rust code, the Rust std it carries, and Slurm's topology helper
#      library that build.rs compiles into it); with TOOL=helgrind or drd, the race and lock
#      reports (possible data races, lock order, misuse of the pthread API), ours and Slurm's.
# Then it compares the runs and exits 1 if an invalid access, uninitialised use or crash has a
# frame of ours, or if the leaks with a frame of ours grow with N; with TOOL=helgrind or drd,
# if a race or lock report has a frame of ours that EXPLAINED does not explain.
#
# With READERS > 0 (the default for helgrind and drd), that many client loops read slurmctld
# during the storm and the drain, so that RPC threads reach the plugin while the scheduler and
# backfill do: `scontrol show topology`, `sinfo`, `squeue --start`, `scontrol show job`.
#
# Env (defaults in brackets):
#   TOOL [memcheck]        memcheck, helgrind or drd (race detectors: no leak check)
#   HG_HISTORY [full]      helgrind's --history-level (full: both stacks of a race; approx:
#                          faster, the earlier access as a segment)
#   READERS [0; 2 for helgrind/drd]  concurrent RPC reader loops during the storm and drain
#   READ_PAUSE [0.5]       seconds each reader sleeps between two rounds of its four commands
#   EXPLAINED [scripts/valgrind-races-explained.txt]  race reports with a frame of ours that
#                          are explained (docs/notebook/valgrind.md), matched on both stacks;
#                          still counted and listed, but no failure
#   PREEMPT [0]            1: preemption by partition (PreemptType=preempt/partition_prio;
#                          partitions low, PriorityTier=1, REQUEUE, and high, PriorityTier=10,
#                          over every tray); every rack job goes to high (1 in 4, by the job's
#                          own draw, so the mix is the same) or to low with --requeue, so the
#                          plugin's preemption planning (src/preemption.rs) runs too
#   ROOTFS_FROM [/var/tmp/nvl72-lab]  copy that lab's finished rootfs (same Slurm) on the
#                          first run instead of a debootstrap (lab-up.sh; read only)
#   LAB [/var/tmp/nvl72-vg], CTLD_PORT [6917], PORT0 [27000], CPU_PORT0 [27900]
#                          the lab (refuses the shared /var/tmp/nvl72-lab)
#   RACKS [4], NPR [18]    lab size, as for lab-up.sh
#   PLUGIN [<repo>/target/release/libtopology_nvl72.so]; build it with debug info for readable
#                          stacks: CARGO_PROFILE_RELEASE_DEBUG=true CARGO_PROFILE_RELEASE_STRIP=none
#   SRC_ROOT [the checkout above PLUGIN's target/, else this one]  frames under it are ours
#   SEED [1]               job mix (the same N and SEED give the same submissions)
#   DRAIN_TIMEOUT [1800]   seconds to wait for the queue to drain after the last submission
#   STOP_TIMEOUT [900]     seconds to wait for slurmctld + valgrind's leak check after SIGTERM
#   SETTLE [0]             seconds to wait after the queue drained before stopping slurmctld
#                          (with EXTRA_CONF=MinJobAge=2: until finished job records are purged)
#   EXTRA_CONF []          passed on to lab-up.sh (slurm.conf lines)
#   VG_EXTRA []            more valgrind options, e.g. --track-origins=yes
#   CTLD_ENV []            VAR=value words for slurmctld's environment (run through env), e.g.
#                          LD_PRELOAD=/usr/local/lib/x.so (a path inside the chroot)
#   SUPP [scripts/valgrind-slurm.supp if it exists]  suppressions (Slurm-internal noise only)
#   KEEP_LAB [0]           1: leave the lab up at the end
# Output: $LAB/var/valgrind/run-<N>-<time>/ (vg.<pid>.log, slurmctld.log, sdiag-*.txt,
# submissions.txt, reads.txt, meta.txt, summary.json, plugin-reports.txt, and with helgrind or
# drd slurm-reports.txt) and a table on stdout.  With TOOL other than memcheck the run folder is
# run-<TOOL>-<N>-<time>.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export LAB=${LAB:-/var/tmp/nvl72-vg}
export CTLD_PORT=${CTLD_PORT:-6917} PORT0=${PORT0:-27000} CPU_PORT0=${CPU_PORT0:-27900}
export RACKS=${RACKS:-4} NPR=${NPR:-18}
# shellcheck source=lab-lib.sh
. "$HERE/lab-lib.sh"
PLUGIN=${PLUGIN:-$LAB_REPO/target/release/libtopology_nvl72.so}
# The checkout the plugin was built from (its frames' source paths): the folder above the
# target/ folder PLUGIN lies in when that holds a Cargo.toml (another worktree's build), else
# this one.
SRC_ROOT=${SRC_ROOT:-$LAB_REPO}
case $PLUGIN in */target/*) d=${PLUGIN%%/target/*}; [ ! -f "$d/Cargo.toml" ] || SRC_ROOT=${d%/} ;; esac
SEED=${SEED:-1}
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-1800}
STOP_TIMEOUT=${STOP_TIMEOUT:-900}
SETTLE=${SETTLE:-0}
VG_EXTRA=${VG_EXTRA:-}
CTLD_ENV=${CTLD_ENV:-}
SUPP=${SUPP:-}
[ -n "$SUPP" ] || { [ -f "$HERE/valgrind-slurm.supp" ] && SUPP=$HERE/valgrind-slurm.supp; } || true
KEEP_LAB=${KEEP_LAB:-0}
TOOL=${TOOL:-memcheck}
HG_HISTORY=${HG_HISTORY:-full}
case $TOOL in memcheck) READERS=${READERS:-0} ;; *) READERS=${READERS:-2} ;; esac
READ_PAUSE=${READ_PAUSE:-0.5}
EXPLAINED=${EXPLAINED:-$HERE/valgrind-races-explained.txt}
export ROOTFS_FROM=${ROOTFS_FROM:-/var/tmp/nvl72-lab}
PREEMPT=${PREEMPT:-0}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(500 2000)

T0=$(now_us)
say() { local e=$(( ($(now_us) - T0) / 1000000 )); printf '[vg-storm %5ds] %s\n' "$e" "$*"; }
die() { echo "[vg-storm] ERROR: $*" >&2; exit 1; }
sl() { "$HERE/sl" "$@"; }
ctld_pid() { local p=""; [ -s "$VAR/run/slurmctld.pid" ] && read -r p < "$VAR/run/slurmctld.pid"; echo "$p"; }
in_lab() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && [ "$(readlink "/proc/$1/root" 2>/dev/null)" = "$ROOT" ]; }

# ------------------------------------------------------------------------------ checks
[ "$(id -u)" = 0 ] || die "must run as root (the lab uses chroot and mount)"
case $LAB in /var/tmp/nvl72-lab) die "LAB=$LAB is the shared default lab; use your own (default /var/tmp/nvl72-vg)" ;; esac
case $TOOL in memcheck|helgrind|drd) ;; *) die "TOOL must be memcheck, helgrind or drd (got '$TOOL')" ;; esac
case $HG_HISTORY in full|approx|none) ;; *) die "HG_HISTORY must be full, approx or none (got '$HG_HISTORY')" ;; esac
[[ $READ_PAUSE =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "READ_PAUSE must be a number of seconds (got '$READ_PAUSE')"
[ "$TOOL" = memcheck ] || [ -z "$EXPLAINED" ] || [ -f "$EXPLAINED" ] || die "EXPLAINED=$EXPLAINED does not exist"
case $PREEMPT in 0|1) ;; *) die "PREEMPT must be 0 or 1 (got '$PREEMPT')" ;; esac
for v in SEED DRAIN_TIMEOUT STOP_TIMEOUT SETTLE RACKS NPR READERS; do
    [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer (got '${!v}')"
done
for n in "${SIZES[@]}"; do
    if ! [[ $n =~ ^[1-9][0-9]*$ ]] || [ "$n" -lt 2 ]; then die "sizes must be integers >= 2 (got '$n')"; fi
done
if [ "$NPR" -lt 4 ] || [ "$RACKS" -lt 2 ]; then die "the job mix needs RACKS >= 2 and NPR >= 4"; fi
[ -s "$PLUGIN" ] || die "plugin $PLUGIN missing; build it: CARGO_PROFILE_RELEASE_DEBUG=true CARGO_PROFILE_RELEASE_STRIP=none cargo build --release -p topology_nvl72"
[ -z "$SUPP" ] || [ -f "$SUPP" ] || die "SUPP=$SUPP does not exist"
if command -v readelf >/dev/null && ! readelf -S "$PLUGIN" | grep -q '\.debug_line'; then
    say "warning: $PLUGIN has no line info; stacks in it will show function names only"
fi

G=$((RACKS * NPR))                 # gb nodes
gbn() { printf 'gb%03d' "$1"; }
# a tray of rack R (1-based), slot S (1-based)
tray() { gbn $(( ($1 - 1) * NPR + $2 )); }

# shape: the sbatch arguments of the next submission, in args (deterministic: RANDOM is seeded
# per run, and only read here, never in a subshell, which would reseed it)
shape() {
    local k=$((RANDOM % 20)) r=$((RANDOM % RACKS + 1)) s=$((RANDOM % 4 + 1))
    local a=$((RANDOM % NPR + 1)) b=$((RANDOM % (NPR - 1))) c=$((RANDOM % NPR + 1)) x=$RANDOM
    args=(-t 5 --wrap "sleep $s")
    case $k in
        0) args+=(-N $((1 << (x % 4))) --gres=gpu:4 --exclusive) ;;
        1) args+=(-N "$NPR" --exclusive) ;;                                               # a whole rack
        2) args+=(-N "2-$((x % (NPR - 2) + 3))") ;;
        3) args+=(-N 8 --segment=4 --gres=gpu:4 --exclusive) ;;
        4) args+=(-N 4 --segment=2 --gres=gpu:2) ;;
        5) case $((x % 3)) in                                                             # refused
               0) args+=(-N 5 --segment=2) ;;
               1) args+=(-N 4 --segment=$((NPR + 2))) ;;
               *) args+=(-N "$G" --segment=$((NPR - 1))) ;;
           esac ;;
        6) args+=(-N 2 -w "$(tray "$r" "$a"),$(tray "$r" $(( (a + b) % NPR + 1 )))" --gres=gpu:4) ;;  # one rack
        7) args+=(-N 2 -w "$(tray 1 "$a"),$(tray "$RACKS" "$c")") ;;                      # refused
        8) args+=(--gpus=$((1 << (x % 5)))) ;;
        9) args+=(-n $((4 << (x % 3))) --gpus-per-task=1) ;;
        10) args+=(-N 2 --ntasks-per-node=4 --gres=gpu:4) ;;
        11) args+=(-c $((8 << (x % 3))) --gpus=2) ;;
        12) args+=(-N 1 --mem=$((100 + x % 400))G --gres=gpu:2) ;;
        13) args+=(-p cpu -N 1 -c 4) ;;                                                   # in no rack
        14) args+=(-N $((NPR * 2)) --exclusive) ;;                                        # two racks
        15) args+=(-N 2 --exclusive=topo) ;;
        16) args+=(-n 8 --gpus=8 -w "$(tray 1 "$a"),$(tray "$RACKS" "$c")") ;;           # refused
        17) args+=(-N 4 --gres=gpu:1) ;;
        18) args+=(--begin=now+$((30 + x % 60)) -N 3 --gres=gpu:4) ;;
        *) args+=(-N 1 -n 4 --gpus=4 --mem=64G) ;;
    esac
    if [ "$PREEMPT" = 1 ] && [ "$k" != 13 ]; then
        if [ $((x % 4)) = 0 ]; then args+=(-p high); else args+=(-p low --requeue); fi
    fi
}
# PREEMPT=1: the partitions and preemption settings (slurm.conf lines, after lab-up's own)
LAB_EXTRA_CONF=${EXTRA_CONF:-}
if [ "$PREEMPT" = 1 ]; then
    LAB_EXTRA_CONF+="${LAB_EXTRA_CONF:+
}PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
PartitionName=low Nodes=gb[001-$(printf %03d "$G")] PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=gb[001-$(printf %03d "$G")] PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP"
fi

# count_lines PATTERN FILE: matching lines (0 when none)
count_lines() { grep -c -E -- "$1" "$2" 2>/dev/null || true; }

# RPC readers: READERS loops of `scontrol show topology`, `sinfo`, `squeue --start` and
# `scontrol show job`, each call logged to $run/reads.<k>.txt as "ok|fail COMMAND", until
# $run/readers.stop exists.  Started in the background; their pids in READER_PIDS.
READ_CMDS=("scontrol show topology" "sinfo" "squeue --start" "scontrol show job")
READER_PIDS=()
reader() {   # reader K RUN
    local k=$1 dir=$2 c
    while [ ! -e "$dir/readers.stop" ]; do
        for c in "${READ_CMDS[@]}"; do
            # shellcheck disable=SC2086  # the command's words
            if timeout 120 "$HERE/sl" $c > /dev/null 2>&1; then echo "ok $c"; else echo "fail $c"; fi
        done >> "$dir/reads.$k.txt"
        sleep "$READ_PAUSE"
    done
}
start_readers() {   # start_readers RUN
    local k
    READER_PIDS=()
    for ((k = 1; k <= READERS; k++)); do
        reader "$k" "$1" &
        READER_PIDS+=($!)
    done
}
stop_readers() {   # stop_readers RUN: ask them to stop, wait for their current round
    local p
    [ ${#READER_PIDS[@]} -gt 0 ] || return 0
    touch "$1/readers.stop"
    for p in "${READER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    READER_PIDS=()
}

STARTED_LAB=0
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local rc=$? p
    for p in "${READER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ "$STARTED_LAB" = 1 ] && [ "$KEEP_LAB" != 1 ]; then
        STOP_WAIT=$STOP_TIMEOUT "$HERE/lab-down.sh" >/dev/null 2>&1 || echo "[vg-storm] lab-down.sh failed; run: LAB=$LAB $HERE/lab-down.sh" >&2
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM

RUNS=()
for N in "${SIZES[@]}"; do
    tag=$N; [ "$TOOL" = memcheck ] || tag=$TOOL-$N
    run=$VAR/valgrind/run-$tag-$(date +%Y%m%d-%H%M%S)
    mkdir -p "$run"
    RUNS+=("$run")
    ts=$(now_us)
    say "=== $N submissions under $TOOL, valgrind output in $run"
    vg="valgrind --tool=$TOOL --trace-children=yes --fair-sched=try --enable-debuginfod=no"
    [ -z "$CTLD_ENV" ] || vg="env $CTLD_ENV $vg"
    # --keep-debuginfo=yes keeps stacks through the plugin readable after Slurm unloads it;
    # DRD 3.24 asserts with it (drd_main.c:458, suppress_relocation_conflicts) when
    # plugin_peek loads a library where an unloaded one was
    [ "$TOOL" = drd ] || vg+=" --keep-debuginfo=yes"
    vg+=" --fullpath-after= --num-callers=30"
    case $TOOL in
        memcheck) vg+=" --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite" ;;
        # --error-limit=no: Slurm's own reports pass valgrind's default limit of 1,000
        # contexts, after which it would report none of ours either
        helgrind) vg+=" --history-level=$HG_HISTORY --error-limit=no" ;;
        # stack variables are thread-private in slurmctld (and in Rust: a borrow cannot cross
        # threads without a lock); DRD would report every stack reuse by another thread
        drd) vg+=" --check-stack-var=no --error-limit=no" ;;
    esac
    vg+=" --log-file=$run/vg.%p.log"
    if [ -n "$SUPP" ]; then cp "$SUPP" "$run/slurm.supp"; vg+=" --suppressions=$run/slurm.supp"; fi
    explained=()
    if [ "$TOOL" != memcheck ] && [ -n "$EXPLAINED" ]; then
        cp "$EXPLAINED" "$run/races-explained.txt"; explained=(--explained "$run/races-explained.txt")
    fi
    [ -z "$VG_EXTRA" ] || vg+=" $VG_EXTRA"
    STARTED_LAB=1
    CLEAN=1 PLUGIN=$PLUGIN TOPO=nvl72 CHROOT_PACKAGES=valgrind CTLD_WRAP=$vg CTLD_WAIT=600 WAIT=900 \
        EXTRA_CONF=$LAB_EXTRA_CONF \
        STOP_WAIT=$STOP_TIMEOUT POLICY='log_decisions = true' "$HERE/lab-up.sh" > "$run/lab-up.log" 2>&1 ||
        { tail -n 30 "$run/lab-up.log" >&2; die "lab-up.sh failed (full output: $run/lab-up.log)"; }
    pid1=$(ctld_pid)
    in_lab "$pid1" || die "no slurmctld after lab-up"
    case $(readlink "/proc/$pid1/exe") in *"$TOOL"*) ;; *) die "slurmctld pid $pid1 is not running under $TOOL" ;; esac
    say "slurmctld pid $pid1 under $TOOL; lab up in $(( ($(now_us) - ts) / 1000000 )) s"
    sl scontrol setdebug verbose
    rm -f "$run/readers.stop"
    start_readers "$run"
    [ "$READERS" = 0 ] || say "$READERS RPC reader loop(s) started: ${READ_CMDS[*]}"

    RANDOM=$SEED
    accepted=0; refused=0; reconfigured=no; pid2=""
    : > "$run/submissions.txt"
    half=$((N / 2))
    for i in $(seq 1 "$N"); do
        shape
        if out=$(sl sbatch --parsable -J "vg$i" -o /dev/null "${args[@]}" 2>&1); then
            accepted=$((accepted + 1)); echo "$i ok $out: ${args[*]}" >> "$run/submissions.txt"
        else
            refused=$((refused + 1)); echo "$i refused ($(tr '\n' ' ' <<<"$out")): ${args[*]}" >> "$run/submissions.txt"
        fi
        if [ "$i" = "$half" ]; then
            sl sdiag > "$run/sdiag-before-reconfigure.txt" 2>&1 || true
            say "$i submitted ($accepted accepted, $refused refused); scontrol reconfigure"
            sl scontrol reconfigure
            end=$(( $(date +%s) + 600 ))
            while :; do
                pid2=$(ctld_pid)
                if [ -n "$pid2" ] && [ "$pid2" != "$pid1" ] && in_lab "$pid2" &&
                   sl scontrol ping 2>/dev/null | grep -q 'is UP'; then break; fi
                [ "$(date +%s)" -lt "$end" ] || die "no new slurmctld answered within 600 s of the reconfigure"
                sleep 1
            done
            case $(readlink "/proc/$pid2/exe") in
                *"$TOOL"*) reconfigured=yes ;;
                *) die "after the reconfigure slurmctld pid $pid2 is NOT under $TOOL ($(readlink "/proc/$pid2/exe"))" ;;
            esac
            grep -q 'Command: /usr/sbin/slurmctld' "$run/vg.$pid2.log" 2>/dev/null ||
                die "no valgrind log for the new slurmctld pid $pid2"
            # the old process leaves with _exit(0): valgrind writes its leak report then
            end=$(( $(date +%s) + STOP_TIMEOUT ))
            while in_lab "$pid1"; do
                [ "$(date +%s)" -lt "$end" ] || die "old slurmctld pid $pid1 still runs ${STOP_TIMEOUT}s after the reconfigure"
                sleep 1
            done
            say "reconfigured: slurmctld pid $pid1 -> $pid2, under $TOOL too"
            sl scontrol setdebug verbose      # a reconfigure resets the level from slurm.conf
        fi
        if [ $((i % 250)) = 0 ]; then say "$i submitted ($accepted accepted, $refused refused)"; fi
    done
    submitted_s=$(( ($(now_us) - ts) / 1000000 ))
    say "all $N submitted ($accepted accepted, $refused refused); waiting for the queue to drain (up to ${DRAIN_TIMEOUT}s)"
    end=$(( $(date +%s) + DRAIN_TIMEOUT ))
    drained=no; last=""
    while :; do
        left=$(sl squeue -h -o %i 2>/dev/null | wc -l) || left=unknown
        if [ "$left" = 0 ]; then drained=yes; break; fi
        [ "$(date +%s)" -lt "$end" ] || break
        if [ "$left" != "$last" ]; then say "  $left jobs in the queue"; last=$left; fi
        sleep 10
    done
    sl sdiag > "$run/sdiag-end.txt" 2>&1 || true
    stop_readers "$run"
    cat "$run"/reads.*.txt > "$run/reads.txt" 2>/dev/null || : > "$run/reads.txt"
    reads_ok=$(count_lines '^ok ' "$run/reads.txt"); reads_fail=$(count_lines '^fail ' "$run/reads.txt")
    [ "$READERS" = 0 ] || say "RPC reads: $reads_ok answered, $reads_fail failed ($(
        for c in "${READ_CMDS[@]}"; do printf '%s %s; ' "$(count_lines "^ok $c\$" "$run/reads.txt")" "$c"; done))"
    if [ $drained = no ]; then
        say "queue not drained after ${DRAIN_TIMEOUT}s ($left left): cancelling them"
        sl scancel -u root || true
        sleep 10
    fi
    if [ "$SETTLE" -gt 0 ]; then
        say "settling ${SETTLE}s before stopping ($(sl scontrol show jobs -o 2>/dev/null | grep -c JobId=) job records in memory)"
        sleep "$SETTLE"
    fi
    records=$(sl scontrol show jobs -o 2>/dev/null | grep -c JobId=) || true
    requeued=$(sl scontrol show jobs -o 2>/dev/null | grep -c 'Restarts=[1-9]') || true
    # stop slurmctld ourselves (lab-down would SIGKILL it after STOP_WAIT): SIGTERM, then wait
    # for valgrind's leak check to finish
    pid2=${pid2:-$pid1}
    cur=$(ctld_pid)
    [ "$cur" = "$pid2" ] || die "slurmctld pid changed unexpectedly ($pid2 -> $cur)"
    say "SIGTERM slurmctld pid $cur; waiting for valgrind's report (up to ${STOP_TIMEOUT}s)"
    ts_stop=$(now_us)
    kill -TERM "$cur"
    end=$(( $(date +%s) + STOP_TIMEOUT ))
    while in_lab "$cur"; do
        [ "$(date +%s)" -lt "$end" ] || die "slurmctld pid $cur still runs ${STOP_TIMEOUT}s after SIGTERM"
        sleep 1
    done
    # its slurmscriptd (also under valgrind) exits on its own once slurmctld is gone
    sleep 5
    stop_s=$(( ($(now_us) - ts_stop) / 1000000 ))
    cp "$VAR/log/slurmctld.log" "$run/slurmctld.log"
    log=$run/slurmctld.log
    placed=$(count_lines 'topology/nvl72: JobId=[0-9]+ nodes=.* -> ' "$log")
    waits=$(count_lines 'topology/nvl72: JobId=[0-9]+: waits' "$log")
    noneof=$(count_lines 'topology/nvl72: JobId=[0-9]+: none of' "$log")
    never=$(grep -E 'topology/nvl72: JobId=[0-9]+: ' "$log" | grep -c -v -E ': (waits|none of|to start by preemption|preemption )' || true)
    plans=$(count_lines 'topology/nvl72: JobId=[0-9]+: to start by preemption' "$log")
    preempted=$(count_lines 'preempted JobId=[0-9]+ has been' "$log")
    evals=$((placed + waits + noneof + never))
    minutes=$(awk -v s=$(( ($(now_us) - ts) / 1000000 )) 'BEGIN { printf "%.1f", s / 60 }')
    cat > "$run/meta.txt" <<EOF
submissions=$N
tool=$TOOL
readers=$READERS
reads_ok=$reads_ok
reads_fail=$reads_fail
$(for c in "${READ_CMDS[@]}"; do echo "reads_ok_${c// /_}=$(count_lines "^ok $c\$" "$run/reads.txt")"; done)
accepted=$accepted
refused=$refused
seed=$SEED
lab=$RACKS racks x $NPR trays + cpu nodes
ctld_pids=$pid1 ${pid2:-}
reconfigured=$reconfigured
drained=$drained
job_records_at_stop=$records
extra_conf=$(tr '\n' ' ' <<<"$LAB_EXTRA_CONF")
preempt=$PREEMPT
preemption_plans_logged=$plans
jobs_preempted_logged=$preempted
jobs_requeued_in_memory=$requeued
ctld_env=$CTLD_ENV
vg_extra=$VG_EXTRA
vg_options=$vg
explained=$EXPLAINED
eval_lines=$evals
eval_placed=$placed
eval_waits=$waits
eval_none_fit=$noneof
eval_refused=$never
submit_seconds=$submitted_s
stop_seconds=$stop_s
minutes=$minutes
date=$(date -u +%Y-%m-%dT%H:%MZ)
plugin=$PLUGIN
src_root=$SRC_ROOT
plugin_sha256=$(sha256sum "$PLUGIN" | cut -d' ' -f1)
valgrind=$(chroot "$ROOT" valgrind --version)
EOF
    say "evaluations logged by the plugin: $evals ($placed placed, $waits waits, $noneof none fit, $never refused); ${minutes} min"
    # the chroot's python3 (installed by lab-up.sh) reads the logs at the same path
    chroot "$ROOT" python3 - run "$run" --ours "$LAB_REPO/" --ours "$SRC_ROOT/" --ours /rustc/ \
        --ours /rust/deps/ --ours "${CARGO_HOME:-$HOME/.cargo}/registry/" "${explained[@]}" \
        < "$HERE/valgrind-summary.py"
done

echo
say "comparison"
rc=0
chroot "$ROOT" python3 - compare "${RUNS[@]}" < "$HERE/valgrind-summary.py" || rc=$?
exit $rc
