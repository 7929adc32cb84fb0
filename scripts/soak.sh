#!/usr/bin/env bash
# soak.sh: the plugin under a long, disturbed replay in a real slurmctld (issue 21, part 3).
#
# Runs `nvl72 replay` (time-compressed weeks of the synthetic workload, tray failures and
# repairs) on an 8-rack lab with one slurmd per tray, and beside it:
#   * every RECONF_S:  `scontrol reconfigure`;
#   * every RESTART_S: slurmctld stopped (SIGTERM by its pid file, waited for) and started
#                      again as lab-up.sh starts it (`chroot ROOT slurmctld`), slurmd untouched;
#   * every DRAIN_S:   a tray drained (`reason=soak`), and the oldest of its own drains that
#                      is still `soak` resumed once more than DRAIN_KEEP of them are drained;
#   * every SAMPLE_S:  slurmctld's pid, VmRSS, utime+stime, sdiag's job tests and the plugin's
#                      placement lines, to samples.csv.
# At the end it checks, from Slurm's own records (sacct from slurmdbd, ACCOUNTING=1, and the
# logs): every job the driver submitted has a final state (0 lost), no job of <= 18 trays and
# no --segment piece split across racks, no error or panic from the plugin, no growth of
# slurmctld's RSS or CPU per evaluation; prints the figures, writes soak.svg, and exits 1
# when a promise fails. Method and last figures: docs/notebook/soak.md.
#
# Usage (root):  scripts/soak.sh          # 2 hours
#   DURATION_MIN=8 RECONF_S=60 RESTART_S=180 DRAIN_S=45 JOBS=200 scripts/soak.sh   # a check
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION_MIN=${DURATION_MIN:-120}   # submissions + drain, real minutes (lab start comes on top)
RECONF_S=${RECONF_S:-300}           # scontrol reconfigure period
RESTART_S=${RESTART_S:-1800}        # slurmctld restart period
DRAIN_S=${DRAIN_S:-240}             # drain one more tray this often
DRAIN_KEEP=${DRAIN_KEEP:-2}         # trays the soak keeps drained before resuming its oldest
SAMPLE_S=${SAMPLE_S:-30}            # sampling period
RACKS=${RACKS:-8}
JOBS=${JOBS:-2500}                  # synthetic jobs drawn (about 7 simulated weeks on 8 racks)
LAMBDA=${LAMBDA:-0.05}              # share of trays down (tray failures)
MTTR_H=${MTTR_H:-24}                # simulated mean time to repair, hours
DRAIN_SHARE=${DRAIN_SHARE:-0.5}     # the driver's --drain: the tail after the last submission
SEED=${SEED:-1}
LAB_PREFIX=${LAB_PREFIX:-/var/tmp/nvl72-soak}
PORT_OFFSET=${PORT_OFFSET:-6}       # slurmctld 6863, slurmdbd 6865, slurmd 26001...
OUT=${OUT:-$REPO/target/soak}
NVL72=${NVL72:-$REPO/target/release/nvl72}
PLUGIN=${PLUGIN:-$REPO/target/release/libtopology_nvl72.so}
ROOTFS_FROM=${ROOTFS_FROM:-/var/tmp/nvl72-lab}
KEEP_LAB=${KEEP_LAB:-0}             # 1: leave the lab running at the end
RSS_GROWTH_MAX=${RSS_GROWTH_MAX:-0.15}   # last hour vs first hour (mean), share
CPU_GROWTH_MAX=${CPU_GROWTH_MAX:-0.50}   # CPU per evaluation, last vs first 30 min, share

LAB=$LAB_PREFIX-nvl72
ROOT=$LAB/rootfs
VAR=$LAB/var
CTLD_PORT=$((6857 + PORT_OFFSET))
PORT0=$((20000 + 1000 * PORT_OFFSET))
NTRAYS=$((RACKS * 18))
TCK=$(getconf CLK_TCK)

log() { echo "[soak $(date -u +%H:%M:%S)] $*"; }
die() { echo "[soak] ERROR: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (chroot)"
[ -x "$NVL72" ] || die "no $NVL72 (cargo build --release -p topology_nvl72 -p nvl72-cli)"
[ -f "$PLUGIN" ] || die "no $PLUGIN"
[ $((PORT0 + NTRAYS)) -le 65535 ] || die "PORT_OFFSET=$PORT_OFFSET: slurmd ports up to $((PORT0 + NTRAYS)) > 65535"
for p in $CTLD_PORT $((CTLD_PORT + 2)) $(seq $((PORT0 + 1)) $((PORT0 + NTRAYS))); do
    if ss -Hltn "sport = :$p" | grep -q .; then
        # Our own lab from an earlier run may still hold them (KEEP_LAB=1): that is stopped below.
        [ -d "$LAB" ] && grep -qs . "$VAR/run/slurmctld.pid" && break
        die "port $p is taken (PORT_OFFSET=$PORT_OFFSET); pick another offset"
    fi
done

lab_env() { env LAB="$LAB" SLURM_SERIES=24.11 TOPO=nvl72 CTLD_PORT="$CTLD_PORT" PORT0="$PORT0" TZ=UTC "$@"; }
in_root() { chroot "$ROOT" env TZ=UTC "$@"; }
# ctld_pid: the pid in slurmctld's pid file when it is a live process of this chroot
ctld_pid() {
    local p=""
    [ -s "$VAR/run/slurmctld.pid" ] && read -r p < "$VAR/run/slurmctld.pid" 2>/dev/null
    [[ $p =~ ^[0-9]+$ ]] && kill -0 "$p" 2>/dev/null && [ "$(readlink "/proc/$p/root")" = "$ROOT" ] && echo "$p"
}
ctld_up() { in_root scontrol ping 2>/dev/null | grep -q 'is UP'; }
# wait_ctld SECONDS: poll until slurmctld answers
wait_ctld() {
    local end=$(( $(date +%s) + $1 ))
    until ctld_up; do [ "$(date +%s)" -lt "$end" ] || return 1; sleep 0.5; done
}
event() { echo "$(date +%s.%N | cut -c1-14),$1,${2:-}" >> "$OUT/events.csv"; log "$1 ${2:-}"; }

# A lab left from an earlier run (KEEP_LAB=1): stop it; the driver starts it with CLEAN=1.
if [ -d "$LAB" ] && { [ -n "$(ctld_pid)" ] || compgen -G "$VAR/run/slurmd-*.pid" >/dev/null; }; then
    log "stopping the lab left in $LAB"
    lab_env bash "$REPO/scripts/lab-down.sh" >/dev/null
fi

rm -rf "$OUT"; mkdir -p "$OUT/replay"
echo "epoch,kind,detail" > "$OUT/events.csv"
echo "epoch,pid,rss_kb,cpu_ticks,main_cycles,main_depth,bf_cycles,bf_try_depth,main_us,bf_us,tests,placements,running,pending" > "$OUT/samples.csv"
MINUTES=$(python3 -c "print(round($DURATION_MIN / (1 + $DRAIN_SHARE), 3))")
{
    echo "started $(date -u +%FT%TZ) on $(hostname), $(nproc) cores; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "knobs: DURATION_MIN=$DURATION_MIN RECONF_S=$RECONF_S RESTART_S=$RESTART_S DRAIN_S=$DRAIN_S DRAIN_KEEP=$DRAIN_KEEP SAMPLE_S=$SAMPLE_S RACKS=$RACKS JOBS=$JOBS LAMBDA=$LAMBDA MTTR_H=$MTTR_H DRAIN_SHARE=$DRAIN_SHARE SEED=$SEED PORT_OFFSET=$PORT_OFFSET"
    echo "plugin: $PLUGIN $(sha256sum "$PLUGIN" | cut -c1-16), built $(date -u -r "$PLUGIN" +%FT%TZ); driver: $NVL72; commit $(git -C "$REPO" rev-parse --short HEAD)"
} > "$OUT/run.txt"
cat "$OUT/run.txt"

# ------------------------------------------------------------------ the driver, in the background
DRIVER=(
    "$NVL72" replay --workload synthetic --racks "$RACKS" --jobs "$JOBS" --seed "$SEED"
    --minutes "$MINUTES" --drain "$DRAIN_SHARE" --lambda "$LAMBDA" --mttr "$MTTR_H"
    --topologies nvl72 --lab-prefix "$LAB_PREFIX" --port-offset "$PORT_OFFSET"
    --plugin "$PLUGIN" --scripts "$REPO/scripts" --keep-labs --quiet
    --out "$OUT/replay" --json "$OUT/replay.json"
)
echo "driver: ${DRIVER[*]}" >> "$OUT/run.txt"
# lab-up.sh takes these from the environment (the driver sets only LAB, ports, RACKS, ...):
# accounting for sacct, a copied rootfs, and the plugin's decision lines at info.
ACCOUNTING=1 ROOTFS_FROM=$ROOTFS_FROM POLICY='log_decisions = true' \
    "${DRIVER[@]}" > "$OUT/driver.log" 2>&1 &
DRIVER_PID=$!
log "driver pid $DRIVER_PID (log $OUT/driver.log)"
cleanup() {
    if kill -0 "$DRIVER_PID" 2>/dev/null; then
        log "interrupted: stopping the driver (pid $DRIVER_PID)"
        kill -TERM "$DRIVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Wait for the lab: lab-up.sh's last line (the driver runs it with CLEAN=1).
until grep -qs "nodes up" "$OUT/replay/nvl72-lab-up.log"; do
    kill -0 "$DRIVER_PID" 2>/dev/null || { tail -20 "$OUT/driver.log" >&2; die "the driver ended before the lab was up"; }
    sleep 1
done
event lab-up "$(grep -o 'all [0-9]* nodes up' "$OUT/replay/nvl72-lab-up.log")"

# ------------------------------------------------------------------ sampling
LOG=$VAR/log/slurmctld.log
placements=0; log_off=0
sample() {
    local pid size rss=0 cpu=0 mc=0 md=0 bc=0 bd=0 mus=0 bus=0 running=0 pending=0 new
    # The plugin's decision lines (log_decisions): one per placement it chose.
    if [ -f "$LOG" ]; then
        size=$(stat -c %s "$LOG")
        [ "$size" -ge "$log_off" ] || log_off=0
        new=$(tail -c +$((log_off + 1)) "$LOG" | head -c $((size - log_off)) | grep -c 'topology/nvl72: JobId=[0-9]* nodes=' || true)
        placements=$((placements + new)); log_off=$size
    fi
    pid=$(ctld_pid) || true
    if [ -n "$pid" ]; then
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        cpu=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)
        # sdiag's raw sums (its text output has only integer means): job tests of the main
        # scheduler and of backfill, and their cycles' time in microseconds.
        read -r mc md bc bd mus bus < <(in_root sdiag --json 2>/dev/null | python3 -c '
import json, sys
try:
    s = json.load(sys.stdin)["statistics"]
except Exception:
    s = {}
print(*(int(s.get(k) or 0) for k in ("schedule_cycle_total", "schedule_cycle_depth", "bf_cycle_counter", "bf_depth_try_sum", "schedule_cycle_sum", "bf_cycle_sum")))' || echo 0 0 0 0 0 0)
        read -r running pending < <(in_root squeue -h -t R,PD -o '%t' 2>/dev/null | awk '$1 == "R" {r++} $1 == "PD" {p++} END {print r + 0, p + 0}')
    fi
    echo "$(date +%s),${pid:-},$rss,$cpu,$mc,$md,$bc,$bd,$mus,$bus,$((md + bd)),$placements,$running,$pending" >> "$OUT/samples.csv"
}

# ------------------------------------------------------------------ disturbances
restart_ctld() {
    local pid t0 end
    pid=$(ctld_pid) || { event restart-skipped "no live slurmctld"; return 0; }
    t0=$(date +%s.%N)
    kill -TERM "$pid"
    end=$(( $(date +%s) + 120 ))
    while kill -0 "$pid" 2>/dev/null; do
        [ "$(date +%s)" -lt "$end" ] || { event restart-error "slurmctld $pid still alive 120 s after SIGTERM"; return 1; }
        sleep 0.2
    done
    # As lab-up.sh starts it (step 3): the stale pid file removed, `slurmctld` in the chroot.
    rm -f "$VAR/run/slurmctld.pid"
    in_root slurmctld || { event restart-error "slurmctld exited with status $?"; return 1; }
    LAST_RESTART=$(date +%s)
    if wait_ctld 120; then
        event restart "$pid -> $(ctld_pid) in $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
    else
        event restart-error "slurmctld did not answer within 120 s"
        return 1
    fi
}
reconfigure() {
    local pid t0 out
    pid=$(ctld_pid) || true
    t0=$(date +%s.%N)
    if out=$(in_root scontrol reconfigure 2>&1) && wait_ctld 120; then
        event reconfigure "$pid -> $(ctld_pid || echo '?') in $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s"
    else
        event reconfigure-error "$out"
    fi
}
# all_responding: slurmctld answers, no node is marked not responding (`*`) or unknown, and
# the last restart is 20 s past (the slurmd register again within a few seconds of it)
LAST_RESTART=0
all_responding() {
    local states
    [ $(( $(date +%s) - LAST_RESTART )) -ge 20 ] || return 1
    states=$(in_root sinfo -h -N -o '%t' 2>/dev/null) || return 1
    ! grep -q -E '\*|^unk' <<< "$states"
}
SOAK_DRAINED=()
drain_one() {
    local node oldest reason
    # A tray that is up (not drained or down by the driver's failures or by us), at random.
    node=$(in_root sinfo -h -N -p gpu -o '%N %t' 2>/dev/null | awk '$2 ~ /^(idle|mix|alloc)$/ {print $1}' | sort -u | shuf -n 1 || true)
    if [ -n "$node" ]; then
        if in_root scontrol update nodename="$node" state=drain reason=soak 2>>"$OUT/soak-errors.log"; then
            SOAK_DRAINED+=("$node"); event drain "$node"
        else
            event drain-error "$node"
        fi
    fi
    while [ ${#SOAK_DRAINED[@]} -gt "$DRAIN_KEEP" ]; do
        oldest=${SOAK_DRAINED[0]}; SOAK_DRAINED=("${SOAK_DRAINED[@]:1}")
        reason=$(in_root sinfo -h -N -n "$oldest" -o '%E' 2>/dev/null | head -1)
        if [ "$reason" = soak ]; then
            # Still ours (a driver failure since would have replaced the reason): resume it.
            if in_root scontrol update nodename="$oldest" state=resume 2>>"$OUT/soak-errors.log"; then
                event resume "$oldest"
            elif in_root sinfo -h -N -n "$oldest" -o '%t' 2>/dev/null | grep -q -E '^(drain|drng)'; then
                event resume-error "$oldest"
            else
                # Refused and yet resumed, as 24.11 does for a tray not registered again after a
                # restart (docs/notebook/soak.md): not a lost drain, but counted.
                event resume-refused "$oldest (refused with an error, and resumed)"
            fi
        else
            event resume-skipped "$oldest (reason now: ${reason:-none})"
        fi
    done
}

T0=$(date +%s)
next_sample=$T0; next_reconf=$((T0 + RECONF_S)); next_restart=$((T0 + RESTART_S)); next_drain=$((T0 + DRAIN_S))
log "soaking: reconfigure every ${RECONF_S}s, restart every ${RESTART_S}s, drain every ${DRAIN_S}s, sample every ${SAMPLE_S}s"
while kill -0 "$DRIVER_PID" 2>/dev/null; do
    now=$(date +%s)
    if [ "$now" -ge "$next_restart" ]; then
        restart_ctld || true
        next_restart=$((next_restart + RESTART_S))
        # A reconfigure due within the minute after a restart is moved behind it.
        [ "$next_reconf" -ge $((now + 60)) ] || next_reconf=$((now + 60))
    elif [ "$now" -ge "$next_reconf" ]; then
        reconfigure; next_reconf=$((next_reconf + RECONF_S))
    fi
    if [ "$now" -ge "$next_drain" ]; then
        # Not while slurmd are re-registering after a restart: a resume of a drained tray that
        # has not answered the new slurmctld yet is refused ("Invalid node state specified")
        # and still clears the drain.
        if all_responding; then drain_one; next_drain=$((next_drain + DRAIN_S)); else next_drain=$((now + 5)); fi
    fi
    if [ "$now" -ge "$next_sample" ]; then sample; next_sample=$((next_sample + SAMPLE_S)); fi
    sleep 1
done
trap - EXIT
set +e
wait "$DRIVER_PID"; DRIVER_RC=$?
sample
event driver-exit "status $DRIVER_RC"
# The soak's own drains are resumed (the lab is kept or stopped next; they are done).
for n in "${SOAK_DRAINED[@]}"; do in_root scontrol update nodename="$n" state=resume 2>/dev/null; done

# ------------------------------------------------------------------ Slurm's own records
# The jobs the driver submitted: `replay: N jobs of ...`; each is named replay-<0..N-1>.
EXPECTED=$(sed -n 's/^replay: \([0-9]*\) jobs of .*/\1/p' "$OUT/driver.log" | head -1)
left=$(in_root squeue -h -o '%i' 2>/dev/null | wc -l)
# slurmdbd gets the end records asynchronously: poll until every job has a final state.
# shellcheck disable=SC2054 # -o takes one comma-separated argument
SACCT=(sacct -X -D -n -P --allusers --starttime 2020-01-01 -o JobID,JobName,State,NNodes,NodeList,SubmitLine)
end=$(( $(date +%s) + 300 ))
while :; do
    in_root "${SACCT[@]}" > "$OUT/sacct.txt" 2>"$OUT/sacct.err"
    final=$(awk -F'|' '$2 ~ /^replay-/ && $3 !~ /^(PENDING|RUNNING|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|SUSPENDED|COMPLETING|CONFIGURING|RESIZING|SIGNALING|STAGE_OUT)/ {print $2}' "$OUT/sacct.txt" | sort -u | wc -l)
    [ "$final" -ge "${EXPECTED:-0}" ] && break
    [ "$(date +%s)" -lt "$end" ] || break
    sleep 2
done
# The plugin's errors, panics and warnings in every daemon's log (this lab's logs start with the
# driver's CLEAN=1).
grep -a -h -E 'topology/nvl72.*(error|panick|internal error)|error: topology/nvl72|panicked at|RUST_BACKTRACE' \
    "$LOG" "$VAR"/log/slurmd-*.log > "$OUT/plugin-errors.txt" 2>/dev/null
grep -a -h -E 'warning: topology/nvl72' "$LOG" "$VAR"/log/slurmd-*.log > "$OUT/plugin-warnings.txt" 2>/dev/null
grep -a -h -E 'fatal|Segmentation|SIGSEGV|SIGBUS|core dumped' "$LOG" "$VAR"/log/slurmd-*.log > "$OUT/fatal.txt" 2>/dev/null
grep -a -o -E 'error: .*' "$LOG" | sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn > "$OUT/slurmctld-error-kinds.txt"
cp "$LOG" "$OUT/slurmctld.log"
echo "left in squeue after the driver: $left" >> "$OUT/run.txt"
echo "ended $(date -u +%FT%TZ); load at end: $(cut -d' ' -f1-3 /proc/loadavg); driver status $DRIVER_RC" >> "$OUT/run.txt"

if [ "$KEEP_LAB" = 1 ]; then
    log "lab kept: LAB=$LAB CTLD_PORT=$CTLD_PORT PORT0=$PORT0 scripts/sl sacct ..."
else
    lab_env bash "$REPO/scripts/lab-down.sh" > "$OUT/lab-down.log" 2>&1
fi

python3 "$REPO/scripts/soak-report.py" "$OUT" --expected "${EXPECTED:-0}" --driver-rc "$DRIVER_RC" \
    --trays-per-rack 18 --rss-growth-max "$RSS_GROWTH_MAX" --cpu-growth-max "$CPU_GROWTH_MAX" \
    --svg "$OUT/soak.svg" --tck "$TCK"
