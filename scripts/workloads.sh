# shellcheck shell=bash
# The documented simulator workloads (docs/notebook/benchmarks.md), sourced by benchmarks.sh and
# same-decisions.sh. name: extra arguments of `nvl72 simulate`.
# shellcheck disable=SC2034 # read by the scripts that source this file
declare -A WORKLOAD=(
    [syn]="--workload synthetic --racks 278 --jobs 6000"
    [seg]="--workload synthetic --racks 278 --jobs 6000 --segment 32-72=4"
    [gpu]="--workload synthetic --racks 278 --jobs 6000 --gpu-sized 0.5"
    [phi]="--workload philly --racks 8"
    [phg]="--workload philly --racks 8 --gpu-sized 1"
    [ph4]="--workload philly --racks 32 --scale-sizes 4"
    [llm]="--workload csv data/acme-kalos-llm-jobs.csv --racks 16 --load 0.9"
)
