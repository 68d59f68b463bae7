#!/bin/sh
# bench/test_gameloop_frames.sh GAMELOOP_LULL — ctest bench_gameloop_frames:
# the game loop tells the frames its pauses made long from the others.
# With LULL_GC_DEBUG=verify every major verifies the whole heap inside its
# pause (tens of ms for the 100,000 entities of --scale 0.1), so the frames
# that hold a major run over 16.6 ms because of it; taken out, those pauses
# leave few frames over (13 over and 2 beside their pauses when this was
# written). A count that did not take the pauses out would equal
# frames_over_16ms, and fail here.
set -u
exe=$1
out=$(LULL_GC_DEBUG=verify LULL_GC_PARAMS= "$exe" --scale 0.1) || { echo "test_gameloop_frames: gameloop failed"; exit 1; }
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
if [ "$over" -lt 3 ]; then
    echo "test_gameloop_frames: only $over frames over 16.6 ms with verify; the test needs pauses that make frames long"
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
