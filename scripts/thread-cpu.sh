#!/bin/bash
# thread-cpu.sh — sourced by sched-cost.sh and retry-cost.sh.
# thread_ns PID COMM: CPU time (ns, from schedstat) of the process's threads named COMM; in
# slurmctld, sched_agent runs the main scheduler and bckfl the backfill scheduler.
thread_ns() {
    local t s=0 c
    for t in /proc/"$1"/task/*; do
        read -r c < "$t/comm" 2>/dev/null || continue
        [ "$c" = "$2" ] && s=$(( s + $(cut -d' ' -f1 "$t/schedstat") ))
    done
    echo "$s"
}
