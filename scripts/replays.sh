#!/usr/bin/env bash
# The simulator's calibration set (docs/notebook/benchmarks.md, "Real Slurm"): each workload is
# compressed in time and submitted to three real slurmctlds 24.11.5 at once (topology/nvl72,
# topology/block, no topology plugin), next to the simulator's prediction for the same stream;
# then `nvl72 calibrate` prints every prediction's error and the summary per plugin.
# Two workloads run at a time (six labs, about 900 slurmd, 10 GB), 10-12 minutes a pair on
# 2 cores: the whole set of 16 took 84 minutes.
#
#   bash scripts/replays.sh                  # the whole calibration set
#   ONLY="syn-s1 ph4-s1" bash scripts/replays.sh   # a subset
#   ONLY=priced bash scripts/replays.sh      # the eight whose jobs pay their split's slowdown
#   ONLY=ckpt bash scripts/replays.sh        # the eight whose requeued jobs resume from checkpoints
#   OUT=/tmp/replays MINUTES=8 bash scripts/replays.sh
#   BIN=target/replay/bin ONLY=syn-s7 bash scripts/replays.sh   # with an earlier run's binaries
#   target/release/nvl72 calibrate target/replay/*.json   # predict them again, later
#
# Each workload leaves <OUT>/<name>.txt (the tables), <name>.json (both sides and the stream),
# <name>.svg and <name>/ (slurmctld logs, what the driver observed, lab-up logs). The binaries
# are copied to <OUT>/bin first, so rebuilding during the run changes nothing. Needs root (the
# labs are chroots).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/replay}
MINUTES=${MINUTES:-8}
SYN="--workload synthetic --jobs 200 --load 0.9"
PH4="--workload philly --scale-sizes 4 --jobs 120 --load 0.9"
LLM="--workload csv data/acme-kalos-llm-jobs.csv --load 0.9"
FAIL="--lambda 0.05"
PRICED="--slowdown default"   # each job sleeps its run time × the model's slowdown for its racks
CKPT="--checkpoint-minutes 30"   # each job saves its progress; a requeued one resumes from it
# name: arguments of `nvl72 replay` (8 racks unless --racks says otherwise). `syn-s1-again`
# is `syn-s1` once more: the real run-to-run spread of one stream. `syn-s7` is the stream
# of issue 24, where the simulator with EASY backfill was 8.8 points off.
declare -A WORKLOAD=(
    [syn-s1]="$SYN --seed 1"
    [syn-s2]="$SYN --seed 2"
    [syn-s3]="$SYN --seed 3"
    [seg-s1]="$SYN --segment 32-72=4 --seed 1"
    [seg-s2]="$SYN --segment 32-72=4 --seed 2"
    [gpu-s1]="$SYN --gpu-sized 0.5 --seed 1"
    [gpu-s2]="$SYN --gpu-sized 0.5 --seed 2"
    [syn-s7]="$SYN --seed 7"
    [ph4-s1]="$PH4 --seed 1"
    [llm-16r]="$LLM --racks 16 --seed 1"
    [syn-fail-s1]="$SYN $FAIL --seed 1"
    [syn-fail-s2]="$SYN $FAIL --seed 2"
    [syn-fail-s3]="$SYN $FAIL --seed 3"
    [ph4-fail-s1]="$PH4 $FAIL --seed 1"
    [syn-s1-again]="$SYN --seed 1"
    [seg-fail-s1]="$SYN --segment 32-72=4 $FAIL --seed 1"
    # Priced: the same streams, each job stretched by the slowdown of the racks Slurm gave it
    # (`nvl72 stretch`), so usable occupancy is calibrated too.
    [syn-s1-priced]="$SYN $PRICED --seed 1"
    [syn-s2-priced]="$SYN $PRICED --seed 2"
    [seg-s1-priced]="$SYN --segment 32-72=4 $PRICED --seed 1"
    [syn-fail-s1-priced]="$SYN $FAIL $PRICED --seed 1"
    [syn-fail-s2-priced]="$SYN $FAIL $PRICED --seed 2"
    [ph4-fail-s1-priced]="$PH4 $FAIL $PRICED --seed 1"
    # Unseen when the failure model was last changed (issue 38 part 6): its check.
    [ph4-fail-s2-priced]="$PH4 $FAIL $PRICED --seed 2"
    [syn-fail-s4-priced]="$SYN $FAIL $PRICED --seed 4"
    # Checkpointed (issue 50): priced, and a requeued job resumes from its last checkpoint
    # (`nvl72 stretch --checkpoint-ms`), so goodput is calibrated too.
    [syn-fail-s1-ckpt]="$SYN $FAIL $PRICED $CKPT --seed 1"
    [syn-fail-s2-ckpt]="$SYN $FAIL $PRICED $CKPT --seed 2"
    [seg-fail-s1-ckpt]="$SYN --segment 32-72=4 $FAIL $PRICED $CKPT --seed 1"
    [ph4-fail-s1-ckpt]="$PH4 $FAIL $PRICED $CKPT --seed 1"
    # Four more, unseen by every model change before them (issue 50: the goodput bands
    # decide which rows are ties, and four replays were a thin sample).
    [syn-fail-s3-ckpt]="$SYN $FAIL $PRICED $CKPT --seed 3"
    [seg-fail-s2-ckpt]="$SYN --segment 32-72=4 $FAIL $PRICED $CKPT --seed 2"
    [ph4-fail-s2-ckpt]="$PH4 $FAIL $PRICED $CKPT --seed 2"
    [ph4-fail-s3-ckpt]="$PH4 $FAIL $PRICED $CKPT --seed 3"
)
PRICED_ORDER="syn-s1-priced syn-s2-priced seg-s1-priced syn-fail-s1-priced syn-fail-s2-priced ph4-fail-s1-priced ph4-fail-s2-priced syn-fail-s4-priced"
CKPT_ORDER="syn-fail-s1-ckpt syn-fail-s2-ckpt seg-fail-s1-ckpt ph4-fail-s1-ckpt syn-fail-s3-ckpt seg-fail-s2-ckpt ph4-fail-s2-ckpt ph4-fail-s3-ckpt"
ORDER="syn-s1 syn-s2 syn-s3 seg-s1 seg-s2 gpu-s1 ph4-s1 llm-16r syn-fail-s1 syn-fail-s2 syn-fail-s3 ph4-fail-s1 syn-s1-again seg-fail-s1 syn-s7 gpu-s2 $PRICED_ORDER $CKPT_ORDER"
ONLY=${ONLY:-$ORDER}
[ "$ONLY" != priced ] || ONLY=$PRICED_ORDER
[ "$ONLY" != ckpt ] || ONLY=$CKPT_ORDER

if [ -n "${BIN:-}" ]; then
    T=$BIN   # nvl72 and libtopology_nvl72.so built earlier (e.g. an earlier run's <OUT>/bin)
else
    cargo build --release -p topology_nvl72 -p nvl72-cli >&2
    mkdir -p "$OUT/bin"
    cp "${CARGO_TARGET_DIR:-target}/release/nvl72" "${CARGO_TARGET_DIR:-target}/release/libtopology_nvl72.so" "$OUT/bin/"
    T=$OUT/bin
fi
run() {   # run NAME SLOT: SLOT 0 or 1 picks the lab folders and ports
    local name=$1 slot=$2 prefix=/var/tmp/nvl72-replay
    [ "$slot" = 1 ] && prefix=/var/tmp/nvl72-replay2
    # shellcheck disable=SC2086 # WORKLOAD holds several arguments
    "$T/nvl72" replay ${WORKLOAD[$name]} --minutes "$MINUTES" --drain 0.25 \
        --plugin "$T/libtopology_nvl72.so" --lab-prefix "$prefix" --port-offset "$slot" \
        --out "$OUT/$name" --json "$OUT/$name.json" --plot "$OUT/$name.svg" --quiet \
        > "$OUT/$name.txt" 2>&1
}
# shellcheck disable=SC2086 # ONLY is a list of names
set -- $ONLY
for n in "$@"; do
    [ -n "${WORKLOAD[$n]:-}" ] || { echo "replays.sh: unknown workload $n ($ORDER)" >&2; exit 2; }
done
done_names=()
while [ $# -gt 0 ]; do
    run "$1" 0 & a=$!
    b=""
    if [ $# -gt 1 ]; then sleep 2; run "$2" 1 & b=$!; fi
    rc=0; wait "$a" || rc=1; [ -z "$b" ] || wait "$b" || rc=1
    for n in "$1" ${b:+"$2"}; do echo "### $n"; cat "$OUT/$n.txt"; echo; done_names+=("$n"); done
    [ "$rc" = 0 ] || { echo "replays.sh: a replay failed (see above and $OUT/*/)" >&2; exit 1; }
    shift; [ -z "$b" ] || shift
done
files=(); for n in "${done_names[@]}"; do files+=("$OUT/$n.json"); done
# predicted by the simulator as it is now, not as it was when the run began
"${CARGO_TARGET_DIR:-target}/release/nvl72" calibrate "${files[@]}"
