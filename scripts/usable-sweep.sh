#!/usr/bin/env bash
# Does "+27% usable GPUs" hold? Usable occupancy of nvl72, block and naive on the documented
# workloads, with and without failures, under the slowdown model's three variants (low: every
# job data-parallel, default: dense TP8, high: mixture of experts EP32) and both time-limit
# modes, then the uniform break-even x* per workload (docs/notebook/benchmarks.md, "Usable GPUs").
#
#   bash scripts/usable-sweep.sh                  # everything, about 10 minutes on 2 cores
#   ONLY=ph4 bash scripts/usable-sweep.sh         # one workload: syn, seg, phi, ph4, llm
#   SACCT=history.txt SACCT_RACKS=40 bash scripts/usable-sweep.sh   # add a site's sacct export
#   VARIANTS="default,multiplier=0.5 default,multiplier=2" LIMITS=lenient bash scripts/usable-sweep.sh
#   EXTRA="--comm-mix by-size" bash scripts/usable-sweep.sh
#
# One markdown row per configuration: means over SEEDS of usable occupancy while jobs wait,
# nvl72's gain in percent over naive and over block, and each policy's share of work split
# across racks. JSON reports stay in $OUT for `nvl72 summarize`.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-target/usable-sweep}
SEEDS=${SEEDS:-1 2 3}
ONLY=${ONLY:-}
LAMBDAS=${LAMBDAS:-0 0.05}
VARIANTS=${VARIANTS:-low default high}
LIMITS=${LIMITS:-lenient strict}
EXTRA=${EXTRA:-}
BREAKEVEN=${BREAKEVEN:-1}
B=${CARGO_TARGET_DIR:-target}/release/nvl72

cargo build --release --bin nvl72 >&2
mkdir -p "$OUT"

# shellcheck source=scripts/workloads.sh
source scripts/workloads.sh
names="syn seg phi ph4 llm"
if [ -n "${SACCT:-}" ]; then
    WORKLOAD[site]="--workload sacct $SACCT --racks ${SACCT_RACKS:?how many racks the site has}"
    names="$names site"
fi

# The mean of each policy's figures over the reports named after the label, as one table row.
row() {
    python3 -c '
import json, sys
label = sys.argv[1]
reps = [json.load(open(f)) for f in sys.argv[2:]]
def mean(pol, key):
    v = [p[key] for r in reps for p in r["policies"] if p["policy"] == pol and p.get(key) is not None]
    return sum(v) / len(v) if v else float("nan")
u = {p: mean(p, "usable_occupancy_while_waiting") for p in ("nvl72", "block", "naive")}
f = {p: mean(p, "split_work_share") for p in ("nvl72", "block", "naive")}
gain = lambda a, b: "%+.1f%%" % ((u[a] / u[b] - 1) * 100)
print("| %s | %.1f%% | %.1f%% | %.1f%% | %s | %s | %.0f / %.0f / %.0f%% |" % (
    label, u["nvl72"] * 100, u["block"] * 100, u["naive"] * 100,
    gain("nvl72", "naive"), gain("nvl72", "block"),
    f["naive"] * 100, f["block"] * 100, f["nvl72"] * 100))
' "$@"
}

echo "| workload, lambda, model, limits | usable nvl72 | block | naive | nvl72 vs naive | nvl72 vs block | split work naive / block / nvl72 |"
echo "|---|---|---|---|---|---|---|"
for w in $names; do
    [ -n "$ONLY" ] && [ "$ONLY" != "$w" ] && continue
    for lam in $LAMBDAS; do
        for variant in $VARIANTS; do
            for limits in $LIMITS; do
                files=()
                for seed in $SEEDS; do
                    f="$OUT/$w-$lam-$variant-$limits-$seed.json"
                    # shellcheck disable=SC2086 # WORKLOAD and EXTRA hold several arguments
                    $B simulate ${WORKLOAD[$w]} --lambda "$lam" --seed "$seed" --slowdown "$variant" \
                        --time-limits "$limits" $EXTRA --no-timing --quiet --json "$f" >/dev/null
                    files+=("$f")
                done
                row "$w, $lam, $variant, $limits" "${files[@]}"
            done
        done
    done
done

[ "$BREAKEVEN" = 1 ] || exit 0
for w in $names; do
    [ -n "$ONLY" ] && [ "$ONLY" != "$w" ] && continue
    for lam in $LAMBDAS; do
        echo
        echo "### break-even: $w, lambda $lam, seed 1"
        echo
        # shellcheck disable=SC2086
        $B breakeven ${WORKLOAD[$w]} --lambda "$lam" --seed 1 $EXTRA
    done
done
