#!/bin/bash
# test.sh — the project's test command (README, .ci/run): installs what it needs, builds the
# plugin and its Debian package, brings up the real Slurm lab with the package installed and
# topology/nvl72 loaded, then runs every test:
# unit and property tests of the core, and the end-to-end tests that submit real jobs to the
# real slurmctld. Ends with "N passed, N failed". Stops the lab it started (KEEP_LAB=1 keeps it).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "test.sh: the lab needs root" >&2; exit 1; }
export LAB=${LAB:-/var/tmp/nvl72-lab}

bash scripts/install-deps.sh
bash scripts/fetch-slurm-source.sh >/dev/null
echo "== build (and the Debian package the lab installs)"
deb=$(bash scripts/package.sh | tail -1)
export PACKAGE="$REPO/$deb"
echo "== build with the test-only fault-injection switch (tests/e2e_faults.rs loads it)"
cargo build --release --lib --features fault-injection --target-dir target/fault-injection
export NVL72_FAULT_PLUGIN="$REPO/target/fault-injection/release/libtopology_nvl72.so"
echo "== lab (fresh logs)"
# Set before lab-up so that a half-started lab is stopped too.
if [ "${KEEP_LAB:-0}" != 1 ]; then
    trap 'bash scripts/lab-down.sh >/tmp/nvl72-lab-down.log 2>&1 || true' EXIT
fi
CLEAN=1 TOPO=nvl72 bash scripts/lab-up.sh
echo "== tests"
log=$(mktemp)
set +e
cargo test --release --all-targets --no-fail-fast 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -o '[0-9]* failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"
[ "$rc" = 0 ] || [ "$failed" -gt 0 ] || failed=1   # a build error counts as a failure
echo "$passed passed, $failed failed"
exit "$rc"
