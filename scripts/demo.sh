#!/bin/bash
# demo.sh — the main job: build topology/nvl72, start the real Slurm lab with it (4 NVL72 racks
# of 18 four-GPU trays), submit a job mix, fail a tray, and show where everything landed,
# rack by rack. The lab stays up afterwards for exploring (scripts/sl squeue, ...);
# stop it with scripts/lab-down.sh.
#   SLURM_SERIES=26.05 bash scripts/demo.sh   # the same on Debian sid's Slurm 26.05.5
#                                             # (scripts/sl and lab-down.sh need it too)
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "demo.sh: the lab needs root" >&2; exit 1; }
export SLURM_SERIES=${SLURM_SERIES:-24.11}
case $SLURM_SERIES in
    24.11) export SLURM_PIN=24.11.5 profile=release ;;
    26.05) export SLURM_PIN=26.05.5 profile=slurm-26-05 ;;
    *) echo "demo.sh: SLURM_SERIES must be 24.11 or 26.05" >&2; exit 1 ;;
esac
sl() { "$REPO/scripts/sl" "$@"; }

bash scripts/install-deps.sh
echo "== building topology_nvl72.so for Slurm $SLURM_PIN"
cargo build --profile "$profile" -p topology_nvl72 2>&1 | tail -1
echo "== starting the lab (Debian's slurmctld/slurmd $SLURM_PIN, TopologyPlugin=topology/nvl72)"
CLEAN=1 TOPO=nvl72 PLUGIN="$REPO/target/$profile/libtopology_nvl72.so" bash scripts/lab-up.sh | tail -4

submit() {   # submit LABEL ARGS...: a 10-minute job; remembers a letter for the picture
    local label=$1; shift
    local out id
    if out=$(sl sbatch --parsable -J "$label" "$@" --wrap 'sleep 600' 2>&1); then
        id=${out%%;*}
        printf '  %-3s sbatch %-40s -> job %s\n' "$label" "$*" "$id"
    else
        printf '  %-3s sbatch %-40s -> REJECTED: %s\n' "$label" "$*" "$(echo "$out" | tail -1)"
    fi
}

settle() {   # wait (up to 30 s) until the scheduler and backfill have considered every job
    for _ in $(seq 60); do
        sl squeue -h -t PD -o '%r' | grep -qE '^(None|Priority)$' || return 0
        sleep 0.5
    done
}

picture() {   # one line per rack: a letter per tray (its job), '.' free, 'X' drained/down
    sleep 1; settle
    declare -A owner=()
    local id name nodes n
    while read -r id name nodes; do
        [ "$nodes" = "(null)" ] || [ -z "$nodes" ] && continue
        for n in $(sl scontrol show hostnames "$nodes"); do owner[$n]=$name; done
    done < <(sl squeue -h -t R -o '%i %j %N')
    local bad; bad=" $(sl sinfo -h -N -t drain,down -o '%N' | tr '\n' ' ') "
    local r t line free
    for r in 1 2 3 4; do
        line=""; free=0
        for t in $(seq 1 18); do
            n=$(printf 'gb%03d' $(( (r - 1) * 18 + t )))
            if [[ $bad == *" $n "* ]]; then line+="X"
            elif [ -n "${owner[$n]:-}" ]; then line+="${owner[$n]:0:1}"
            else line+="."; free=$((free + 1)); fi
        done
        printf '  rack%s  %s  free trays %2d (%2d GPUs)\n' "$r" "$line" "$free" $((free * 4))
    done
    echo "  pending:"; sl squeue -h -t PD -o '    %j  -N %D  %r' || true
}

echo
echo "== 1. a job mix on an empty cluster (all --exclusive, --gres=gpu:4)"
G=(--exclusive --gres=gpu:4)
submit A -N 18 "${G[@]}"                 # a full NVL72 rack
submit B -N 4 "${G[@]}"                  # small jobs pack into one rack ...
submit C -N 4 "${G[@]}"
submit D -N 8 --segment=4 "${G[@]}"      # ... segments of 4 each stay inside a rack
submit E -N 20 --segment=10 "${G[@]}"    # 10 + 10 in two racks
submit F -N 2 "${G[@]}"
submit G -N 12 --segment=4 "${G[@]}"
picture

echo
echo "== 2. requests no rack layout can satisfy are refused at submission"
submit V -N 5 --segment=2 "${G[@]}"
submit W -N 4 --segment=20 "${G[@]}"

echo
echo "== 3. job A ends, then a tray in its rack fails (gb005 drained): rack1 now has 68 GPUs"
sl scancel -n A
sl scontrol update nodename=gb005 state=drain reason=demo-tray-failure
submit H -N 18 "${G[@]}"                 # needs a whole healthy rack: none left, so it waits
submit I -N 17 "${G[@]}"                 # fits the degraded rack exactly
submit J -N 4 --segment=4 "${G[@]}"      # best fit: the 4-tray hole in rack4
picture

echo
echo "== scontrol show topology"
sl scontrol show topology
echo
env=""; [ "$SLURM_SERIES" = 24.11 ] || env="SLURM_SERIES=$SLURM_SERIES "
echo "The lab is still running: try ${env}scripts/sl squeue, ${env}scripts/sl sbatch -N 8 --segment=4 --wrap 'sleep 60'"
echo "Stop it with: ${env}scripts/lab-down.sh"
