#!/bin/sh
# one_cpu.sh RUNS PROGRAM [ARGS...] — run PROGRAM RUNS times with all its
# threads on one CPU (the first this shell may use). There every thread is
# preempted at any instruction and a concurrent mark stretches over hundreds
# of minors, which cement thousands of objects: the consumer torture lost an
# object in 12-15% of runs this way until 2026-11-26 (unit_cement),
# where 3,300 runs on two free CPUs had found nothing.
runs=$1
shift
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*\([0-9]*\).*/\1/p' /proc/self/status)
i=1
while [ "$i" -le "$runs" ]; do
    echo "one_cpu: run $i of $runs on CPU ${cpu:-0}: $*"
    taskset -c "${cpu:-0}" "$@" || { echo "one_cpu: run $i failed" >&2; exit 1; }
    i=$((i + 1))
done
