#!/usr/bin/env bash
# The engine's knobs judged on usable GPUs (issue 38, part 7; docs/benchmarks.md "Results:
# the engine's settings on usable GPUs" and "Results: wait or split"): nvl72 as shipped
# against each `[policy]` variant (start-now, balanced, spill, end-time tie-break and align)
# and against `[policy] switches = { count = 1, wait_minutes = W }` for each W in WAITS, on
# the documented workloads, with and without failures, under the slowdown model's default
# (dense TP8) and high (mixture of experts EP32) variants.
#
#   bash scripts/policy-ab.sh                     # everything: about 6 minutes on 2 cores
#   ONLY=ph4 SEEDS=1 bash scripts/policy-ab.sh    # one workload, one seed
#
# One markdown row per workload, lambda and model: nvl72's usable occupancy while jobs wait
# and its mean wait (means over SEEDS), then each variant's difference in points of usable
# occupancy and its mean wait. `gpu` (half the jobs sized by --gpus) is left out: the engine
# places a job of n whole trays and one of 4n GPUs alike on healthy trays, so its rows are the
# synthetic mix's. JSON reports stay in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/policy-ab}
SEEDS=${SEEDS:-1 2 3}
ONLY=${ONLY:-syn seg ph4 llm}
LAMBDAS=${LAMBDAS:-0 0.05}
MODELS=${MODELS:-default high}
WAITS=${WAITS:-5 30 120}
B=${CARGO_TARGET_DIR:-target}/release/nvl72
VARIANTS=nvl72,nvl72-start-now,nvl72-balanced,nvl72-spill,nvl72-end-tie,nvl72-end-align

cargo build --release --bin nvl72 >&2
mkdir -p "$OUT"

# shellcheck source=scripts/workloads.sh
source scripts/workloads.sh
WORKLOAD[syn]="--workload synthetic --racks 64 --jobs 2000"
WORKLOAD[seg]="--workload synthetic --racks 64 --jobs 2000 --segment 32-72=4"
for w in $WAITS; do
    printf '[policy]\nswitches = { count = 1, wait_minutes = %s }\n' "$w" > "$OUT/switches-$w.toml"
done

# Means over the seeds: nvl72's usable occupancy and wait, then each variant's difference.
row() {
    python3 - "$@" <<'PY'
import json, re, sys
label, waits, files = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
# Each report by its switches wait ("" for the runs without the setting).
runs = [(m.group(1) if (m := re.search(r"-switches-(\d+)-", f)) else "", json.load(open(f))) for f in files]
def mean(pol, figure, tag=""):
    v = [figure(p) for t, r in runs if t == tag for p in r["policies"] if p["policy"] == pol]
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else float("nan")
usable = lambda p: p.get("usable_occupancy_while_waiting")
wait = lambda p: p["wait"][0]["mean_h"]
base = mean("nvl72", usable)
cells = ["%.1f%%, %.1f h" % (base * 100, mean("nvl72", wait))]
for pol in ("nvl72-start-now", "nvl72-balanced", "nvl72-spill", "nvl72-end-tie", "nvl72-end-align"):
    cells.append("%+.1f, %.1f h" % ((mean(pol, usable) - base) * 100, mean(pol, wait)))
for w in waits:
    cells.append("%+.1f, %.1f h" % ((mean("nvl72", usable, w) - base) * 100, mean("nvl72", wait, w)))
print("| %s | %s |" % (label, " | ".join(cells)))
PY
}

head="| workload, lambda, model | nvl72 usable, wait | start-now | balanced | spill | end-tie | end-align |"
sep="|---|---|---|---|---|---|---|"
for w in $WAITS; do head="$head switches 1@$w |"; sep="$sep---|"; done
echo "$head"; echo "$sep"
for name in $ONLY; do
    for lam in $LAMBDAS; do
        for model in $MODELS; do
            files=()
            for seed in $SEEDS; do
                f="$OUT/$name-$lam-$model-$seed.json"
                # shellcheck disable=SC2086 # WORKLOAD holds several arguments
                $B simulate ${WORKLOAD[$name]} --lambda "$lam" --seed "$seed" --slowdown "$model" \
                    --policies "$VARIANTS" --no-timing --quiet --json "$f" >/dev/null
                files+=("$f")
                for w in $WAITS; do
                    f="$OUT/$name-$lam-$model-switches-$w-$seed.json"
                    # shellcheck disable=SC2086
                    $B simulate ${WORKLOAD[$name]} --lambda "$lam" --seed "$seed" --slowdown "$model" \
                        --policies nvl72 --policy-file "$OUT/switches-$w.toml" --no-timing --quiet \
                        --json "$f" >/dev/null
                    files+=("$f")
                done
            done
            row "$name, $lam, $model" "$WAITS" "${files[@]}"
        done
    done
done
