#!/bin/sh
# bench/test_gameloop_frames.sh GAMELOOP_LULL — ctest bench_gameloop_frames:
# the game loop tells the frames its pauses made long from the others.
# With LULL_GC_DEBUG=verify-nursery every minor verifies the nursery inside
# its pause, so minors take several ms and many frames run over 16.6 ms
# because of them; taken out, those pauses leave few frames over (1 of 53
# when this was written). A count that did not take the pauses out would
# equal frames_over_16ms, and fail here.
set -u
exe=$1
out=$(LULL_GC_DEBUG=verify-nursery LULL_GC_PARAMS= "$exe" --scale 0.05) || { echo "test_gameloop_frames: gameloop failed"; exit 1; }
line=$(echo "$out" | grep '^RESULT ')
field() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
over=$(field frames_over_16ms)
beside=$(field frames_over_16ms_beside_pauses)
p99=$(field frame_p99_ms)
p99b=$(field frame_p99_ms_beside_pauses)
echo "frames_over_16ms=$over frames_over_16ms_beside_pauses=$beside frame_p99_ms=$p99 frame_p99_ms_beside_pauses=$p99b"
if [ -z "$over" ] || [ -z "$beside" ] || [ -z "$p99" ] || [ -z "$p99b" ]; then
    echo "test_gameloop_frames: the RESULT line lacks a frame figure"
    exit 1
fi
if [ "$over" -lt 10 ]; then
    echo "test_gameloop_frames: only $over frames over 16.6 ms with verify-nursery; the test needs pauses that make frames long"
    exit 1
fi
if [ $((beside * 2)) -gt "$over" ]; then
    echo "test_gameloop_frames: $beside of $over long frames still over without their pauses: the pauses are not taken out"
    exit 1
fi
if ! awk -v a="$p99b" -v b="$p99" 'BEGIN { exit !(a < b) }'; then
    echo "test_gameloop_frames: frame p99 without pauses $p99b ms is not below the frame p99 $p99 ms"
    exit 1
fi
echo "test_gameloop_frames: ok"
