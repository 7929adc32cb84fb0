#!/bin/bash
# Coverage-guided fuzzing of the safe core with cargo-fuzz (libFuzzer) on the stable
# toolchain; see docs/fuzzing.md.
#
#   bash scripts/fuzz.sh                  # every target, 10,000,000 inputs each
#   bash scripts/fuzz.sh placement 100000 # one target, N inputs
#   FUZZ_SECONDS=300 bash scripts/fuzz.sh hostlist   # time-limited instead
#
# One fuzzer process at a time (-jobs=1 -workers=1, no -fork): the machine is shared.
# Corpora grow in fuzz/corpus/<target>/ (git-ignored; fuzz/seeds/<target>/ is the committed
# seed corpus), crashes land in fuzz/artifacts/<target>/. Prints per target: inputs executed,
# exec/s, wall time, corpus size and crashes; exits 1 if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
ALL=(config block_conf hostlist placement sacct saved_pieces)
which=${1:-all}
runs=${2:-10000000}
if [ "$which" = all ]; then targets=("${ALL[@]}"); else targets=("$which"); fi

# Longest input per target: room for a few racks / rules, short enough to stay fast.
max_len() {
    case $1 in
        config) echo 4096 ;;
        block_conf) echo 512 ;;
        hostlist) echo 256 ;;
        placement) echo 512 ;;
        sacct) echo 2048 ;;
        saved_pieces) echo 256 ;;
        *) echo "unknown target $1 (one of: ${ALL[*]})" >&2; exit 2 ;;
    esac
}

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked || exit 1
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/fuzz/target}
# `-s none`: no sanitizer, so no nightly-only -Zsanitizer flag: the stable compiler builds
# the libFuzzer/SanitizerCoverage instrumentation. `-a`: debug assertions and overflow checks.
FUZZ_FLAGS=(-s none -a)
cd "$ROOT/fuzz" || exit 1
cargo fuzz build "${FUZZ_FLAGS[@]}" || exit 1

failed=0
summary=()
for t in "${targets[@]}"; do
    len=$(max_len "$t") || exit 2
    mkdir -p "corpus/$t" "artifacts/$t"
    extra=()
    [ -d "seeds/$t" ] && extra+=("seeds/$t")
    opts=(-max_len="$len" -jobs=1 -workers=1 -print_final_stats=1 -artifact_prefix="artifacts/$t/")
    [ -f "$t.dict" ] && opts+=(-dict="$t.dict")
    if [ -n "${FUZZ_SECONDS:-}" ]; then opts+=(-max_total_time="$FUZZ_SECONDS"); else opts+=(-runs="$runs"); fi
    before=$(find "artifacts/$t" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
    log=$(mktemp)
    start=$(date +%s)
    echo "== $t: ${opts[*]}"
    cargo fuzz run "${FUZZ_FLAGS[@]}" "$t" "corpus/$t" "${extra[@]}" -- "${opts[@]}" >"$log" 2>&1
    rc=$?
    wall=$(( $(date +%s) - start ))
    after=$(find "artifacts/$t" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    # libFuzzer's own count of the inputs it keeps (the directory also holds older ones).
    corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    crashes=$((after - before))
    if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
        failed=1
        grep -A4 'panicked at' "$log" | head -12
        grep 'Test unit written' "$log"
    fi
    line=$(printf '%-11s runs %10s  exec/s %7s  wall %5ss  corpus %5s  crashes %s  (rc %s)' \
        "$t" "${execs:-?}" "${rate:-?}" "$wall" "$corpus" "$crashes" "$rc")
    echo "$line"
    summary+=("$line")
    rm -f "$log"
done
echo "== $(date -u +%Y-%m-%dT%H:%MZ) rustc $(rustc --version | cut -d' ' -f2) cargo-fuzz $(cargo fuzz --version | cut -d' ' -f2)"
printf '%s\n' "${summary[@]}"
exit $failed
