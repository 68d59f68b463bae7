#!/bin/sh
# bench/test_gameloop_idle.sh GAMELOOP_LULL — ctest bench_gameloop_idle:
# the game loop's --idle hands each frame's slack to lull_idle, and the
# minors then run between frames, where the frame's temporaries are dead.
# At pause-target=2ms the nursery is about a frame's allocation (1.3
# MiB): 1.3 MiB in a Release build, 1.8 MiB in a RelWithDebInfo one (the
# cost each measures). Without the calls the minors land inside frames
# and promote much of them: survival_pct 41-89 at --scale 0.1, depending
# on the build and the run; with them most minors run in idle time and
# about a quarter is promoted (21-26). The check wants the calls to cut
# survival to two thirds or less: asking for half failed once in a
# RelWithDebInfo build (45.5 against 21.9). At 1 ms instead, a clang
# build's idle minors no longer held (704 minors, 290 in idle time,
# survival 53 against 89). A gameloop that ignored --idle, or a
# lull_idle that did not collect, leaves idle_minors at 0 or the survival
# where it was, and fails here. The concurrent majors' final pauses wait
# for the calls too (8 of 10 at --scale 0.1): idle_majors at 0 fails.
set -u
exe=$1
run() {
    LULL_GC_DEBUG= LULL_GC_PARAMS=pause-target=2ms "$exe" --scale 0.1 "$@" | grep '^RESULT ' ||
        { echo "test_gameloop_idle: gameloop $* failed"; exit 1; }
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# The survival comparison means something only when most minors ran in
# idle time: how many fit depends on the slack the frames leave (16.6 ms
# less the frame's work) and on how long the idle minors take, so on the
# machine's speed and its load (171 of 542 minors in idle time in one
# RelWithDebInfo run here beside other work, survival 45.3 against 74.1).
# Fewer than three quarters of them: the pair is run again (load passes);
# still fewer, the test exits 77 (skipped), saying why. That lull_idle
# runs minors at all (a quarter of the frames) and that majors' pauses
# wait for the calls stay required on every machine.
attempt=1
while :; do
    plain=$(run) || exit 1
    idle=$(run --idle) || exit 1
    sp=$(field "$plain" survival_pct)
    si=$(field "$idle" survival_pct)
    minors=$(field "$idle" minor_pauses)
    im=$(field "$idle" idle_minors)
    ij=$(field "$idle" idle_majors)
    frames=$(field "$idle" frames)
    p50=$(field "$idle" frame_p50_ms)
    echo "without --idle: survival_pct=$sp; with: survival_pct=$si, idle_minors=$im of $minors minors, idle_majors=$ij, $frames frames (p50 $p50 ms)"
    if [ -z "$sp" ] || [ -z "$si" ] || [ -z "$im" ] || [ -z "$ij" ] || [ -z "$frames" ] || [ -z "$minors" ]; then
        echo "test_gameloop_idle: the RESULT line lacks a figure"
        exit 1
    fi
    if [ -n "$(field "$plain" idle_minors)" ]; then
        echo "test_gameloop_idle: idle_minors reported without --idle"
        exit 1
    fi
    if [ "$((im * 4))" -lt "$frames" ]; then
        echo "test_gameloop_idle: only $im minors in idle time over $frames frames"
        exit 1
    fi
    if [ "$ij" -lt 1 ]; then
        echo "test_gameloop_idle: no major's pause ran in idle time"
        exit 1
    fi
    [ "$((im * 4))" -ge "$((minors * 3))" ] && break
    if [ "$attempt" -ge 2 ]; then
        echo "test_gameloop_idle: skipped: only $im of $minors minors fit the frames' idle time on this machine now" \
             "(frame p50 $p50 ms of 16.6), twice: the survival with and without the calls would not compare them"
        exit 77
    fi
    echo "test_gameloop_idle: only $im of $minors minors in idle time: once more"
    attempt=$((attempt + 1))
done
if ! awk -v a="$si" -v b="$sp" 'BEGIN { exit !(a * 3 < b * 2) }'; then
    echo "test_gameloop_idle: survival $si% with the idle calls against $sp% without: not below two thirds"
    exit 1
fi
echo "test_gameloop_idle: ok"
