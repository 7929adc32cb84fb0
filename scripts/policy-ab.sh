#!/usr/bin/env bash
# The engine's knobs judged on goodput (issue 38 part 7 on usable GPUs, issue 50 on goodput;
# docs/notebook/benchmarks.md "Results: the engine's settings on usable GPUs" and "Results: wait or
# split"): nvl72 as shipped against each `[policy]` variant (start-now, balanced, spill,
# end-time tie-break and align) and against `[policy] switches = { count = 1, wait_minutes = W }`
# for each W in WAITS, on the documented workloads (scripts/workloads.sh, as docs/results.md
# runs them), with and without failures, under the slowdown model's variants; topology/block's
# goodput beside them, since a default changes only when it raises nvl72 over block too.
#
#   bash scripts/policy-ab.sh                     # everything: about 15 minutes on 2 cores
#   ONLY=ph4 SEEDS=1 bash scripts/policy-ab.sh    # one workload, one seed
#
# One markdown row per workload, lambda and model: nvl72's goodput while jobs wait and its
# mean wait (means over SEEDS), block's goodput, then each variant's difference in points of
# goodput and its mean wait. `gpu` (half the jobs sized by --gpus) is left out: the engine
# places a job of n whole trays and one of 4n GPUs alike on healthy trays, so its rows are the
# synthetic mix's. JSON reports stay in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/policy-ab}
SEEDS=${SEEDS:-1 2 3}
ONLY=${ONLY:-syn seg phi ph4 llm}
LAMBDAS=${LAMBDAS:-0 0.05}
MODELS=${MODELS:-low default high}
WAITS=${WAITS:-5 30 120}
B=${CARGO_TARGET_DIR:-target}/release/nvl72
VARIANTS=nvl72,block,nvl72-start-now,nvl72-balanced,nvl72-spill,nvl72-end-tie,nvl72-end-align

cargo build --release --bin nvl72 >&2
mkdir -p "$OUT"

# shellcheck source=scripts/workloads.sh
source scripts/workloads.sh
for w in $WAITS; do
    printf '[policy]\nswitches = { count = 1, wait_minutes = %s }\n' "$w" > "$OUT/switches-$w.toml"
done

# Means over the seeds: nvl72's goodput and wait, block's goodput, then each variant's
# difference.
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
goodput = lambda p: p.get("goodput_while_waiting")
wait = lambda p: p["wait"][0]["mean_h"]
base = mean("nvl72", goodput)
cells = ["%.1f%%, %.1f h" % (base * 100, mean("nvl72", wait)), "%+.1f" % ((mean("block", goodput) - base) * 100)]
for pol in ("nvl72-start-now", "nvl72-balanced", "nvl72-spill", "nvl72-end-tie", "nvl72-end-align"):
    cells.append("%+.1f, %.1f h" % ((mean(pol, goodput) - base) * 100, mean(pol, wait)))
for w in waits:
    cells.append("%+.1f, %.1f h" % ((mean("nvl72", goodput, w) - base) * 100, mean("nvl72", wait, w)))
print("| %s | %s |" % (label, " | ".join(cells)))
PY
}

head="| workload, lambda, model | nvl72 goodput, wait | block | start-now | balanced | spill | end-tie | end-align |"
sep="|---|---|---|---|---|---|---|---|"
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
