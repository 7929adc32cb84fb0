#!/bin/bash
# without-plugin.sh — runs the end-to-end tests (e2e, e2e_sizing, e2e_end_time, e2e_faults, e2e_preemption,
# e2e_block_parity, and
# on 26.05 e2e_slurm26) against stock Slurm instead of topology/nvl72,
# to show that they test the plugin and not Slurm's own selection: every placement test should
# fail here. TOPO=none (default) runs topology/default, TOPO=block runs topology/block, on the
# same lab nodes. Prints each test's result and a summary; docs/lab.md records the last run.
# The tests that stock Slurm also passes are listed there with the reason.
# Not part of scripts/test.sh: it expects failures. Takes about 15 minutes (a test whose job
# never starts waits 60 s for it). Arguments filter the tests: without-plugin.sh segments
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
[ "$(id -u)" = 0 ] || { echo "without-plugin.sh: the lab needs root" >&2; exit 1; }
TOPO=${TOPO:-none}
case $TOPO in none|block) ;; *) echo "TOPO must be none or block" >&2; exit 2 ;; esac
export SLURM_SERIES=${SLURM_SERIES:-24.11}   # 26.05: the sid lab, tests built for 26.05.5
case $SLURM_SERIES in
    24.11) export SLURM_PIN=24.11.5 profile=release ;;
    26.05) export SLURM_PIN=26.05.5 profile=slurm-26-05 ;;
    *) echo "SLURM_SERIES must be 24.11 or 26.05" >&2; exit 2 ;;
esac
bash scripts/install-deps.sh
cargo build --profile "$profile" -p topology_nvl72 -p nvl72-e2e --tests
mkdir -p target
log=target/without-plugin-$SLURM_SERIES-$TOPO.log   # the whole output, with each failure's message
# Extra arguments filter the tests, as for cargo test (e.g. `segments`).
tests=(--test e2e --test e2e_sizing --test e2e_end_time --test e2e_faults --test e2e_block_parity
       --test e2e_preemption --test e2e_preemption_qos)
[ "$SLURM_SERIES" = 24.11 ] || tests+=(--test e2e_slurm26)
E2E_TOPO=$TOPO cargo test --profile "$profile" -p nvl72-e2e "${tests[@]}" --no-fail-fast -- "$@" 2>&1 |
    tee "$log" | grep -E '^test .* \.\.\. (ok|FAILED)$'
echo "== without the plugin (TopologyPlugin=topology/${TOPO/none/default}):"
echo "   failed (the plugin is what makes them pass):"
grep -E '^test .* \.\.\. FAILED$' "$log" | sed 's/^test /     /; s/ \.\.\. FAILED$//'
echo "   passed anyway (see docs/lab.md for why each is expected):"
grep -E '^test .* \.\.\. ok$' "$log" | sed 's/^test /     /; s/ \.\.\. ok$//'
echo "(full output: $log)"
# Back to the plugin for whoever uses the lab next.
TOPO=nvl72 PLUGIN="$REPO/target/$profile/libtopology_nvl72.so" bash scripts/lab-up.sh >/dev/null
