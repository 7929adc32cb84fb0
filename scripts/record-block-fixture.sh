#!/bin/bash
# record-block-fixture.sh — records what the REAL Slurm 24.11.5 topology/block chooses, so the
# simulator's block model can be checked against it (tests in crates/sim/src read the fixture).
#
# Brings the lab up with TopologyPlugin=topology/block (4 racks x 18, BlockSizes=18,36,72), then
# replays a fixed pseudo-random script of exclusive submissions and completions. Before each
# submission it records the free trays; afterwards where Slurm put the job, or PENDING (then
# the job is cancelled at once so it cannot start later), or REJECTED.
#
#   bash scripts/record-block-fixture.sh [STEPS] > tests/fixtures/block-24.11.5.trace
# Env: LAB (as for lab-up.sh), SEED (default 7). Leaves the lab running with topology/block;
# the e2e tests (or TOPO=nvl72 scripts/lab-up.sh) switch it back.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STEPS=${1:-80}
RANDOM=${SEED:-7}
export LAB=${LAB:-/var/tmp/nvl72-lab}
sl() { "$REPO/scripts/sl" "$@"; }

CLEAN=1 TOPO=block bash "$REPO/scripts/lab-up.sh" >&2
echo "# recorded by scripts/record-block-fixture.sh: Slurm 24.11.5 topology/block, seed ${SEED:-7}"
echo "# $(sl scontrol show config | awk '/^TopologyPlugin/{print $3}'); topology.conf: $(grep BlockSizes "$LAB/rootfs/etc/slurm/topology.conf")"
echo "racks 4 trays 18"
SIZES=(1 2 3 4 4 5 6 8 8 9 10 12 16 17 18 18 19 20 24 30 36)
SEGS=(0 0 0 0 2 3 4 6 9 10 16 18)
running=()
free_nodes() { sl sinfo -h -p gpu -t idle -o '%N'; }
settle() {   # wait until the job runs, or waits for resources; print the outcome
    local id=$1 st reason
    for _ in $(seq 60); do
        read -r st reason < <(sl squeue -h -j "$id" -o '%T %r')
        [ "$st" = RUNNING ] && { sl squeue -h -j "$id" -o '%N'; return; }
        [ "$st" = PENDING ] && [ "$reason" = Resources ] && { echo PENDING; return; }
        sleep 0.25
    done
    echo "PENDING"   # never evaluated to Resources within 15 s: still not placed
}
wait_idle() {   # after a cancel, the trays must be idle again before the next step
    for _ in $(seq 80); do
        [ -z "$(sl sinfo -h -p gpu -t comp,mix -o '%N')" ] && return
        sleep 0.25
    done
}
for _ in $(seq 1 "$STEPS"); do
    if [ ${#running[@]} -gt 0 ] && [ $((RANDOM % 10)) -lt 4 ]; then
        i=$((RANDOM % ${#running[@]})); id=${running[$i]}
        sl scancel "$id"; wait_idle
        echo "cancel $id"
        running=("${running[@]:0:$i}" "${running[@]:$((i + 1))}")
        continue
    fi
    n=${SIZES[$((RANDOM % ${#SIZES[@]}))]}
    s=${SEGS[$((RANDOM % ${#SEGS[@]}))]}
    [ "$s" -gt 0 ] && [ "$s" -gt "$n" ] && s=0
    free=$(free_nodes)
    args=(-N "$n" --exclusive)
    [ "$s" -gt 0 ] && args+=("--segment=$s")
    if out=$(sl sbatch --parsable "${args[@]}" --wrap 'sleep 3600' 2>&1); then
        id=${out%%;*}
        result=$(settle "$id")
        if [ "$result" = PENDING ]; then sl scancel "$id"; wait_idle; else running+=("$id"); fi
    else
        id=-; result=REJECTED
    fi
    echo "submit $id nodes=$n segment=$s free=${free:-none} -> $result"
done
sl scancel --user=root
