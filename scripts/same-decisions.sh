#!/usr/bin/env bash
# Checks that two builds of `nvl72` make the same placement decisions: runs the simulator on
# the documented workloads (scripts/benchmarks.sh's, plus segments larger than a rack and the
# spread policy) with both binaries and compares the `--json` reports byte for byte
# (`--no-timing` leaves no timing in them). For refactors that must not change behaviour.
#
#   cp target/release/nvl72 /tmp/nvl72-before     # at the old commit
#   bash scripts/same-decisions.sh /tmp/nvl72-before target/release/nvl72
# NEW_FIELDS="a,b": report fields the new build adds; they are removed (at any depth) before
# the comparison, which is then of the reports as jq prints them.
# AFTER_ARGS="...": extra `simulate` arguments for the new build only, e.g. `--backfill easy`;
#   against a build from before the slowdown model, `--slowdown off` (simulate's default prices
#   split jobs since then, which changes every later decision)
# against a build from before the calibrated scheduler model (with NEW_FIELDS=backfill,bf_window,tick_phase).
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BEFORE_NVL72 AFTER_NVL72" >&2; exit 2; }
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
cd "$(dirname "$0")/.."
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
POLICIES=nvl72,block,naive,nvl72-start-now
SPREAD=$OUT/spread.toml
printf '[policy]\nsegment_placement = "spread"\nprefer_degraded = false\n' >"$SPREAD"

# shellcheck source=scripts/workloads.sh
source scripts/workloads.sh
WORKLOAD[spr]="--workload synthetic --racks 64 --jobs 2000 --segment 8-16=4 --segment 32-72=4 --segment 144+=16 --policy-file $SPREAD"
differ=0 same=0
# without_new FILE: the report, without NEW_FIELDS when they are given
without_new() {
    if [ -z "${NEW_FIELDS:-}" ]; then cat "$1"; return; fi
    jq -S --arg f "$NEW_FIELDS" '($f | split(",")) as $new
        | walk(if type == "object" then with_entries(select(.key as $k | $new | index($k) | not)) else . end)' "$1"
}
for w in "${!WORKLOAD[@]}"; do
    # Load 1.2 unless the workload sets its own (the LLM-era sample's 0.9).
    load="--load 1.2"
    [[ " ${WORKLOAD[$w]} " == *" --load "* ]] && load=""
    for lam in 0 0.05; do
        for bin in before after; do
            b=$BEFORE extra=""; [ $bin = after ] && b=$AFTER extra=${AFTER_ARGS:-}
            # shellcheck disable=SC2086 # WORKLOAD, load and extra hold several arguments
            "$b" simulate ${WORKLOAD[$w]} $load --lambda "$lam" --seed 1 \
                --policies "$POLICIES" --no-timing --quiet --json "$OUT/$w-$lam-$bin.json" $extra >/dev/null
        done
        if cmp -s <(without_new "$OUT/$w-$lam-before.json") <(without_new "$OUT/$w-$lam-after.json"); then
            same=$((same + 1))
        else
            differ=$((differ + 1))
            echo "DIFFERENT: $w lambda $lam" >&2
            diff <(jq -S . "$OUT/$w-$lam-before.json") <(jq -S . "$OUT/$w-$lam-after.json") | head -20 >&2
        fi
    done
done
echo "$same identical, $differ different"
[ "$differ" -eq 0 ]
