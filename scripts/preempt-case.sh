#!/bin/bash
# preempt-case.sh — the preemption case of issue 52 (../shared/reference/preemption.md §1.5)
# in a real lab: four racks of low-tier jobs, rack1 = l1 (10 trays) + l2 (8), rack2 = l3 (10)
# + 8 free, rack3 = l4 (18), rack4 = l5 (18), all `--requeue` in partition `low`
# (PriorityTier=1, PreemptMode=REQUEUE); then a `high` (PriorityTier=10) job `-N 18
# --exclusive`. Prints `sbatch --test-only`'s "Preempts:" line, where the high job ran and each
# low job's state and Restarts (requeues). Clearing rack2 would cost one job (l3); Slurm's
# candidate order (the smallest job first) clears rack1's two.
#
#   TOPO=nvl72 bash scripts/preempt-case.sh        # or TOPO=block, TOPO=none
#   SLURM_SERIES=26.05 TOPO=block bash scripts/preempt-case.sh
# Env: TOPO [nvl72], SLURM_SERIES [24.11], PACKAGE [target/packages/topology-nvl72-<pin>.deb].
# Leaves the lab up (scripts/lab-down.sh stops it).
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO" || exit 1
export SLURM_SERIES=${SLURM_SERIES:-24.11}
case $SLURM_SERIES in
    24.11) export SLURM_PIN=24.11.5 ;;
    26.05) export SLURM_PIN=26.05.5 ;;
    *) echo "SLURM_SERIES must be 24.11 or 26.05" >&2; exit 2 ;;
esac
export PACKAGE=${PACKAGE:-$REPO/target/packages/topology-nvl72-$SLURM_PIN.deb}
TOPO=${TOPO:-nvl72}
EXTRA='PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
JobRequeue=1
PartitionName=low Nodes=gb[001-072] PriorityTier=1 PreemptMode=REQUEUE MaxTime=INFINITE State=UP
PartitionName=high Nodes=gb[001-072] PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP'
log=$(mktemp)
if ! CLEAN=1 TOPO=$TOPO EXTRA_CONF="$EXTRA" bash scripts/lab-up.sh >"$log" 2>&1; then
    tail "$log"; exit 1
fi
sl=scripts/sl
low() { $sl sbatch --parsable -p low --exclusive --requeue -J "$1" -N "$2" -w "$3" --wrap "sleep 3000"; }
jobs=("$(low l1 10 'gb[001-010]')" "$(low l2 8 'gb[011-018]')" "$(low l3 10 'gb[019-028]')"
      "$(low l4 18 'gb[037-054]')" "$(low l5 18 'gb[055-072]')")
for _ in $(seq 60); do
    [ "$($sl squeue -h -t R -p low | wc -l)" = 5 ] && break
    sleep 1
done
high=$($sl sbatch --parsable -p high -J high -N 18 --exclusive --wrap "sleep 3000")
echo "sbatch --test-only:"
$sl sbatch --test-only -p high -N 18 --exclusive --wrap "sleep 1" 2>&1 | tail -2
state=""
for _ in $(seq 120); do
    state=$($sl squeue -h -j "$high" -o %T)
    [ "$state" = RUNNING ] && break
    sleep 1
done
echo "TOPO=$TOPO series=$SLURM_SERIES high=$high state=$state nodes=$($sl squeue -h -j "$high" -o %N)"
for j in "${jobs[@]}"; do
    $sl scontrol show job "$j" | grep -oE "JobName=\S+|JobState=\S+|Restarts=\S+" | tr '\n' ' '
    echo
done
