#!/usr/bin/env bash
# Runs the simulation matrix behind docs/notebook/benchmarks.md and prints one summary table per
# configuration (mean over seeds, min-max range in brackets).
#
#   bash scripts/benchmarks.sh                 # everything, about 10 minutes on 2 cores
#   ONLY=syn bash scripts/benchmarks.sh        # one workload: syn, seg, gpu, phi, phg or ph4
#   OUT=/tmp/bench SEEDS="1 2" bash scripts/benchmarks.sh
#   POLICIES=nvl72,nvl72-balanced LOADS=1.2 LAMBDAS="0.02 0.05" bash scripts/benchmarks.sh   # an A/B
#   BACKFILL=conservative ONLY=phi bash scripts/benchmarks.sh   # Slurm's backfill (slow at 278 racks)
#   SLOWDOWN=default bash scripts/benchmarks.sh   # split jobs pay the slowdown model
#
# SLOWDOWN is off by default: the tables of docs/notebook/benchmarks.md before the slowdown model
# were made without it (split jobs at full speed). scripts/usable-sweep.sh runs the priced matrix.
#
# The tables of docs/notebook/benchmarks.md were made with the simulator's EASY backfill
# (`simulate`'s default too), which keeps this matrix at 10 minutes; Slurm's own (`--backfill
# conservative`, replay's default; docs/notebook/benchmarks.md, "The model") is 20-100 times
# slower on the 278-rack, overloaded configurations.
#
# JSON reports are kept in $OUT (default target/bench-results) for later `nvl72 summarize`.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/bench-results}
SEEDS=${SEEDS:-1 2 3}
ONLY=${ONLY:-}
POLICIES=${POLICIES:-nvl72,block,naive,nvl72-start-now}
LOADS=${LOADS:-0.9 1.2}
LAMBDAS=${LAMBDAS:-0 0.02 0.05}
BACKFILL=${BACKFILL:-easy}
SLOWDOWN=${SLOWDOWN:-off}
B=${CARGO_TARGET_DIR:-target}/release/nvl72

cargo build --release --bin nvl72 >&2
mkdir -p "$OUT"

# shellcheck source=scripts/workloads.sh
source scripts/workloads.sh
declare -A TITLE=(
    [syn]="synthetic NVL72 mix, 278 racks (32-72 trays without --segment)"
    [seg]="synthetic NVL72 mix, 278 racks, 32-72 trays with --segment=4"
    [gpu]="synthetic NVL72 mix, 278 racks, half the jobs without --segment sized by GPUs (--gpus, no -N)"
    [phi]="Philly trace as is, 8 racks"
    [phg]="Philly trace, 8 racks, every job sized by GPUs (--gpus, no -N)"
    [ph4]="Philly trace, sizes x 4, 32 racks"
)

for w in syn seg gpu phi phg ph4; do
    [ -n "$ONLY" ] && [ "$ONLY" != "$w" ] && continue
    for load in $LOADS; do
        for lam in $LAMBDAS; do
            files=()
            for seed in $SEEDS; do
                f="$OUT/$w-$load-$lam-$seed.json"
                # shellcheck disable=SC2086 # WORKLOAD holds several arguments
                $B simulate ${WORKLOAD[$w]} --load "$load" --lambda "$lam" --seed "$seed" \
                    --policies "$POLICIES" --backfill "$BACKFILL" --slowdown "$SLOWDOWN" --no-timing --quiet --json "$f" >/dev/null
                files+=("$f")
            done
            echo "### ${TITLE[$w]}: load $load, lambda $lam"
            echo
            $B summarize "${files[@]}"
            echo
        done
    done
done
