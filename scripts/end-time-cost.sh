#!/bin/bash
# end-time-cost.sh — what `[policy] end_time` costs inside the real slurmctld: the same
# stream of jobs is run on the lab with the rule off and with `end_time = "align"`, and
# slurmctld's own figures are printed side by side: sdiag's main and backfill cycle times
# (mean per cycle and per job tested) and slurmctld's CPU time over the run.
#
#   bash scripts/end-time-cost.sh              # 300 jobs, 90 s per run, about 4 minutes
#   JOBS=600 SECONDS_PER_RUN=120 bash scripts/end-time-cost.sh
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "end-time-cost.sh: the lab needs root" >&2; exit 1; }
export LAB=${LAB:-/var/tmp/nvl72-lab}
JOBS=${JOBS:-300}
RUN=${SECONDS_PER_RUN:-90}
SL="$REPO/scripts/sl"
cargo build --release -p topology_nvl72 >&2

# The job stream: sizes 1-16 trays, limits 10-600 minutes, real run times 5-40 s (the queue
# turns over many times in one run). Fixed seed: both runs get the same stream.
stream() {
    RANDOM=7
    local sizes=(1 1 2 2 4 4 8 12 16) i
    for ((i = 0; i < JOBS; i++)); do
        echo "${sizes[RANDOM % ${#sizes[@]}]} $((10 + RANDOM % 590)) $((5 + RANDOM % 36))"
    done
}

cpu_seconds() {   # utime + stime of slurmctld, in seconds
    local pid
    pid=$(cat "$LAB/var/run/slurmctld.pid")
    awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"
}

run() {   # $1 = label, $2 = POLICY text
    CLEAN=1 POLICY="$2" bash scripts/lab-up.sh >/dev/null
    local cpu0 n t s
    cpu0=$(cpu_seconds)
    while read -r n t s; do
        "$SL" sbatch -Q -N "$n" --exclusive --time="$t" --wrap "sleep $s" >/dev/null
    done < <(stream)
    sleep "$RUN"
    local d
    d=$("$SL" sdiag)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" \
        "$(echo "$d" | awk '/^Main schedule statistics/{m=1} m&&/Mean cycle:/{print $3; exit}')" \
        "$(echo "$d" | awk '/^Main schedule statistics/{m=1} m&&/Total cycles:/{print $3; exit}')" \
        "$(echo "$d" | awk '/^Backfilling stats/{m=1} m&&/Mean cycle:/{print $3; exit}')" \
        "$(echo "$d" | awk '/^Backfilling stats/{m=1} m&&/Depth Mean:/{print $3; exit}')" \
        "$(echo "$d" | awk '/^Backfilling stats/{m=1} m&&/Total backfilled jobs \(since last slurm start\):/{print $NF; exit}')" \
        "$(awk -v a="$(cpu_seconds)" -v b="$cpu0" 'BEGIN {printf "%.2f", a - b}')"
    "$SL" scancel --user=root || true
}

echo "$JOBS jobs, ${RUN}s per run; cycle times in microseconds"
{
    printf 'rule\tmain mean cycle\tmain cycles\tbackfill mean cycle\tbackfill depth mean\tbackfilled jobs\tslurmctld CPU s\n'
    run off ''
    run align $'end_time = "align"'
} | column -t -s $'\t'
bash scripts/lab-up.sh >/dev/null
