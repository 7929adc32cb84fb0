#!/usr/bin/env bash
# chaos.sh: long chaos storms with invariants against a real lab (issue 53).
#
# Runs tests/e2e/tests/e2e_chaos.rs with many seeds and steps: each seed is a random sequence
# of submissions in every request style, cancels, pending-job updates, tray drains, downs and
# resumes, killed slurmds, reconfigures, rack edits (valid, wrong, held-tray moves), kill -9 of
# the primary controller, takeovers by the backup, dynamic nodes; after every step the
# invariants are read from Slurm (tests/e2e/src/chaos/). A violation stops the run and prints
# the seed, the step, the last operations and the queue; `CHAOS_SEEDS=<seed>` replays the same
# operations. Method and figures: docs/notebook/soak.md, "Chaos storms".
#
# Usage (root; the series' main lab rootfs must exist: scripts/lab-up.sh once):
#   scripts/chaos.sh                                   # 24.11, seeds 11-18, 400 steps each
#   SLURM_SERIES=26.05 SEEDS=21,22 STEPS=1000 scripts/chaos.sh
#   DURATION_MIN=120 scripts/chaos.sh                  # seeds from SEED0 on until the time is up
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SLURM_SERIES=${SLURM_SERIES:-24.11}
SEEDS=${SEEDS:-}
SEED0=${SEED0:-11}
STEPS=${STEPS:-400}
DURATION_MIN=${DURATION_MIN:-0}
OUT=${OUT:-$REPO/target/chaos}
export SLURM_SERIES

log() { echo "[chaos $(date -u +%H:%M:%S)] $*"; }
die() { echo "[chaos] ERROR: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (the lab is a chroot)"
[[ $STEPS =~ ^[0-9]+$ ]] || die "STEPS must be a number"
[[ $DURATION_MIN =~ ^[0-9]+$ ]] || die "DURATION_MIN must be a number of minutes"

case $SLURM_SERIES in
    24.11) build=(--release); pin=24.11.5; profile_dir=release; ctld=6991; port0=13000 ;;
    26.05) build=(--profile slurm-26-05); pin=26.05.5; profile_dir=slurm-26-05; ctld=6993; port0=12000 ;;
    *) die "SLURM_SERIES must be 24.11 or 26.05" ;;
esac
# Its own lab and ports, clear of the test command's chaos labs (docs/lab.md), so that both
# can run at once.
export CHAOS_LAB=${CHAOS_LAB:-/var/tmp/nvl72-chaos-long-$SLURM_SERIES}
export CHAOS_CTLD_PORT=${CHAOS_CTLD_PORT:-$ctld} CHAOS_PORT0=${CHAOS_PORT0:-$port0}
export SLURM_PIN=$pin
cd "$REPO"
# Its own target dir by default, so that builds in the checkout during a long run change
# neither the storm nor the plugin under test.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/var/tmp/nvl72-chaos-target}
log "building the plugin and the storm for Slurm $SLURM_SERIES (in $CARGO_TARGET_DIR)"
cargo build "${build[@]}" -p topology_nvl72 -p nvl72-cli
# The storm's test binary, run directly for each seed: a `cargo test` per seed would rebuild
# it from whatever the checkout holds by then.
storm_bin=$(cargo test "${build[@]}" -p nvl72-e2e --test e2e_chaos --no-run 2>&1 |
    sed -n 's/.*Executable tests\/e2e_chaos.rs (\(.*\))$/\1/p' | tail -1)
[ -x "$storm_bin" ] || die "cannot find the e2e_chaos test binary"

mkdir -p "$OUT"
# The plugin under test, a copy named by its commit (lab-up.sh restarts a lab whose plugin
# file changed).
PLUGIN=$OUT/plugin-$SLURM_SERIES-$(git rev-parse --short HEAD).so
export PLUGIN
cp "$CARGO_TARGET_DIR/$profile_dir/libtopology_nvl72.so" "$PLUGIN"
log "plugin $PLUGIN ($(sha256sum "$PLUGIN" | cut -c1-12))"
summary=$OUT/summary-$SLURM_SERIES-$(date -u +%Y%m%d-%H%M%S).txt
# storm SEED: one storm; its whole output in $OUT, its summary line appended to $summary.
storm() {
    local seed=$1 out=$OUT/seed-$SLURM_SERIES-$1.log
    log "seed $seed, $STEPS steps (output: $out)"
    if CHAOS_SEEDS=$seed CHAOS_STEPS=$STEPS "$storm_bin" --nocapture >"$out" 2>&1; then
        grep '^chaos: ' "$out" | tee -a "$summary"
    else
        grep -A60 'violated' "$out" | head -80 >&2 || tail -40 "$out" >&2
        echo "seed $seed: VIOLATION (see $out)" >>"$summary"
        return 1
    fi
}

rc=0
if [ -n "$SEEDS" ]; then
    for seed in ${SEEDS//,/ }; do storm "$seed" || rc=1; done
elif [ "$DURATION_MIN" -gt 0 ]; then
    end=$(( $(date +%s) + 60 * DURATION_MIN ))
    seed=$SEED0
    while [ "$(date +%s)" -lt "$end" ]; do storm "$seed" || rc=1; seed=$((seed + 1)); done
else
    for seed in $(seq "$SEED0" $((SEED0 + 7))); do storm "$seed" || rc=1; done
fi
log "summary: $summary"
cat "$summary"
exit "$rc"
