#!/usr/bin/env bash
# Runs the real-Slurm replays behind docs/benchmarks.md ("Real Slurm"): each workload is
# compressed in time and submitted to three real slurmctlds 24.11.5 at once (topology/nvl72,
# topology/block, no topology plugin), next to the simulator's prediction for the same stream.
# Two workloads run at a time (six labs, about 900 slurmd, 10 GB), so the five take about
# 35 minutes on 2 cores.
#
#   bash scripts/replays.sh                  # syn, syn-fail, ph4, ph4-fail, syn-fail-s2
#   ONLY="syn ph4" bash scripts/replays.sh   # a subset
#   OUT=/tmp/replays MINUTES=8 bash scripts/replays.sh
#
# Each workload leaves <OUT>/<name>.txt (the tables), <name>.json, <name>.svg and
# <name>/ (slurmctld logs, lab-up logs). Needs root (the labs are chroots).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/replay}
MINUTES=${MINUTES:-8}
ONLY=${ONLY:-syn syn-fail ph4 ph4-fail syn-fail-s2}
T=${CARGO_TARGET_DIR:-target}/release

# name: extra arguments of `nvl72 replay` (8 racks each)
declare -A WORKLOAD=(
    [syn]="--workload synthetic --jobs 200 --load 0.9"
    [syn-fail]="--workload synthetic --jobs 200 --load 0.9 --lambda 0.05"
    [ph4]="--workload philly --scale-sizes 4 --jobs 120 --load 0.9"
    [ph4-fail]="--workload philly --scale-sizes 4 --jobs 120 --load 0.9 --lambda 0.05"
    [syn-fail-s2]="--workload synthetic --jobs 200 --load 0.9 --lambda 0.05 --seed 2"
)

cargo build --release --bin nvl72 --lib >&2
mkdir -p "$OUT"
run() {   # run NAME SLOT: SLOT 0 or 1 picks the lab folders and ports
    local name=$1 slot=$2 prefix=/var/tmp/nvl72-replay
    [ "$slot" = 1 ] && prefix=/var/tmp/nvl72-replay2
    # shellcheck disable=SC2086 # WORKLOAD holds several arguments
    "$T/nvl72" replay ${WORKLOAD[$name]} --racks 8 --minutes "$MINUTES" --drain 0.25 \
        --plugin "$T/libtopology_nvl72.so" --lab-prefix "$prefix" --port-offset "$slot" \
        --out "$OUT/$name" --json "$OUT/$name.json" --plot "$OUT/$name.svg" --quiet \
        > "$OUT/$name.txt" 2>&1
}
# shellcheck disable=SC2086 # ONLY is a list of names
set -- $ONLY
while [ $# -gt 0 ]; do
    [ -n "${WORKLOAD[$1]:-}" ] || { echo "replays.sh: unknown workload $1 (${!WORKLOAD[*]})" >&2; exit 2; }
    run "$1" 0 & a=$!
    b=""
    if [ $# -gt 1 ]; then
        [ -n "${WORKLOAD[$2]:-}" ] || { echo "replays.sh: unknown workload $2 (${!WORKLOAD[*]})" >&2; exit 2; }
        sleep 2; run "$2" 1 & b=$!
    fi
    rc=0; wait "$a" || rc=1; [ -z "$b" ] || wait "$b" || rc=1
    for n in "$1" ${b:+"$2"}; do echo "### $n"; cat "$OUT/$n.txt"; echo; done
    [ "$rc" = 0 ] || { echo "replays.sh: a replay failed (see above and $OUT/*/)" >&2; exit 1; }
    shift; [ -z "$b" ] || shift
done
