#!/bin/bash
# test.sh — the project's test command (README, .ci/run): installs what it needs, and for each
# Slurm series with a Debian lab (24.11.5 from trixie, 26.05.5 from sid) builds the plugin and
# its Debian package for that release, brings up the real Slurm lab with the package installed
# and topology/nvl72 loaded, and runs every test against it: unit and property tests of the
# core, and the end-to-end tests that submit real jobs to the real slurmctld. Then build and
# linkage checks for 25.05 and 25.11 where a source tree is given (SLURM_SRC_25_05,
# SLURM_SRC_25_11; Debian ships no binaries of those). Ends with "N passed, N failed".
# Stops the labs it started (KEEP_LAB=1 keeps them).
#   TEST_SERIES="24.11 26.05"   the lab series to test (default both; empty: only the build checks)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "test.sh: the lab needs root" >&2; exit 1; }
unset LAB   # each series has its own lab (lab-lib.sh's default for SLURM_SERIES)

bash scripts/install-deps.sh
log=$(mktemp)
started=()
stop_labs() {
    for s in "${started[@]}"; do
        SLURM_SERIES=$s bash scripts/lab-down.sh >"/tmp/nvl72-lab-down-$s.log" 2>&1 || true
    done
}
# Set before any lab-up so that a half-started lab is stopped too.
[ "${KEEP_LAB:-0}" = 1 ] || trap stop_labs EXIT

rc=0
for series in ${TEST_SERIES-24.11 26.05}; do
    case $series in
        24.11) pin=24.11.5 profile=release ;;
        26.05) pin=26.05.5 profile=slurm-26-05 ;;
        *) echo "test.sh: no lab for Slurm $series (24.11, 26.05)" >&2; exit 1 ;;
    esac
    export SLURM_PIN=$pin SLURM_SERIES=$series
    echo "== Slurm $series: build for $pin (and the Debian package the lab installs)"
    deb=$(bash scripts/package.sh | tail -1)
    export PACKAGE="$REPO/$deb"
    echo "== Slurm $series: build with the test-only fault-injection switch (tests/e2e_faults.rs)"
    cargo build --profile "$profile" --lib --features fault-injection --target-dir target/fault-injection
    export NVL72_FAULT_PLUGIN="$REPO/target/fault-injection/$profile/libtopology_nvl72.so"
    echo "== Slurm $series: lab (fresh logs)"
    started+=("$series")
    CLEAN=1 TOPO=nvl72 bash scripts/lab-up.sh
    echo "== Slurm $series: tests"
    set +e
    cargo test --profile "$profile" --all-targets --no-fail-fast 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    set -e
    [ "${KEEP_LAB:-0}" = 1 ] || SLURM_SERIES=$series bash scripts/lab-down.sh >/dev/null 2>&1 || true
done
unset SLURM_PIN SLURM_SERIES PACKAGE NVL72_FAULT_PLUGIN

# Series without Debian packages: the export layer must build against the tree and link
# lazily (tests/linkage.rs), and the core's tests pass with that series' cfgs.
for series in 25.05 25.11; do
    var=SLURM_SRC_${series/./_}
    tree=${!var:-}
    if [ -z "$tree" ]; then
        echo "== Slurm $series: build and linkage check skipped: no source tree ($var=/path/to/slurm-$series.x)"
        continue
    fi
    echo "== Slurm $series: build and linkage check against $tree"
    set +e
    (
        export SLURM_SRC=$tree
        cargo build --release --lib --target-dir "target/slurm-$series" &&
            cargo test --release --lib --test linkage --target-dir "target/slurm-$series"
    ) 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    set -e
done

passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -o '[0-9]* failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"
[ "$rc" = 0 ] || [ "$failed" -gt 0 ] || failed=1   # a build error counts as a failure
echo "$passed passed, $failed failed"
exit "$rc"
