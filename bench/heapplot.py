#!/usr/bin/env python3
"""heapplot.py — the heap over a whole run, with its goal and the marks.

    bench/heapplot.py TRACE.json OUT.svg [--title TEXT] [--width PX]

Reads a lull trace file (trace-file=PATH; Chrome trace events) and draws,
time left to right in seconds since the first event:
  - the heap the collector held after every pause (the "heap" counter,
    heap_bytes; blue line) and the live size the last major found (grey);
  - the heap goal in force after every pause (the "heap goal" counter,
    goal_bytes; orange dashes) and the soft memory limit if one is set (red);
  - each concurrent mark, from its initial to its final pause, as a light
    band, and each synchronous major as a dark red tick at the top.
Prints one line: marks, synchronous majors, the largest heap, and the
largest heap over the goal in force at that time.
"""
import argparse
import json
import sys


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def load(path):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return [e for e in ev if "ts" in e]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--title", default="")
    ap.add_argument("--width", type=int, default=1000)
    a = ap.parse_args()
    ev = load(a.trace)
    if not ev:
        sys.exit("heapplot: no events in " + a.trace)
    t0 = min(e["ts"] for e in ev)
    heap, live, goal, limit, marks, syncs = [], [], [], [], [], []
    begin = None
    for e in sorted(ev, key=lambda e: e["ts"]):
        t = (e["ts"] - t0) / 1e6
        name, args = e.get("name"), e.get("args", {})
        if name == "heap":
            heap.append((t, args.get("heap_bytes", 0) / 2**20))
            live.append((t, args.get("live_bytes", 0) / 2**20))
        elif name == "heap goal":
            goal.append((t, args.get("goal_bytes", 0) / 2**20))
            if args.get("limit_bytes"):
                limit.append((t, args["limit_bytes"] / 2**20))
        elif name == "major: initial pause":
            begin = t
        elif name == "major: final pause" and begin is not None:
            marks.append((begin, t + e.get("dur", 0) / 1e6))
            begin = None
        elif name == "major collection (synchronous)":
            syncs.append(t)
    if begin is not None:
        marks.append((begin, None))
    if not heap:
        sys.exit("heapplot: no heap counter in " + a.trace)
    tmax = max(t for t, _ in heap) or 1.0
    ymax = max([v for _, v in heap] + [v for _, v in goal] + [v for _, v in limit] + [1.0]) * 1.08
    W, H, L, R, T, B = a.width, 360, 60, 20, 30, 40
    X = lambda t: L + (W - L - R) * t / tmax
    Y = lambda v: T + (H - T - B) * (1 - v / ymax)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="16" font-size="13">{esc(a.title)}</text>']
    for s, e in marks:
        e = tmax if e is None else e
        out.append(f'<rect x="{X(s):.1f}" y="{T}" width="{max(X(e) - X(s), 1):.1f}" height="{H - T - B}" '
                   f'fill="#a8dadc" opacity="0.5"/>')
    for s in syncs:
        out.append(f'<rect x="{X(s):.1f}" y="{T}" width="2" height="8" fill="#8d0801"/>')

    def line(pts, color, dash=""):
        if not pts:
            return
        d = " ".join(f"{X(t):.1f},{Y(v):.1f}" for t, v in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5" {dash}/>')

    def steps(pts):
        s = []
        for i, (t, v) in enumerate(pts):
            if i:
                s.append((t, pts[i - 1][1]))
            s.append((t, v))
        return s

    line(steps(live), "#6c757d")
    line(steps(goal), "#f77f00", 'stroke-dasharray="5,3"')
    line(steps(limit), "#d62828", 'stroke-dasharray="2,2"')
    line(heap, "#1d4ed8")
    for i in range(6):
        v = ymax / 1.08 * i / 5
        out.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{L - 4}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    for i in range(6):
        t = tmax * i / 5
        out.append(f'<text x="{X(t):.1f}" y="{H - B + 16}" text-anchor="middle">{t:.1f} s</text>')
    out.append(f'<text x="12" y="{T + (H - T - B) / 2}" transform="rotate(-90 12 {T + (H - T - B) / 2})" '
               f'text-anchor="middle">MiB</text>')
    legend = [("#1d4ed8", "heap"), ("#6c757d", "live at the last major"), ("#f77f00", "heap goal"),
              ("#d62828", "memory limit"), ("#a8dadc", "concurrent mark"), ("#8d0801", "synchronous major")]
    x = L
    for color, text in legend:
        out.append(f'<rect x="{x}" y="{H - 14}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14}" y="{H - 5}">{esc(text)}</text>')
        x += 24 + 7 * len(text)
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    over = 0.0
    gi = 0
    for t, v in heap:
        while gi + 1 < len(goal) and goal[gi + 1][0] <= t:
            gi += 1
        if goal and goal[gi][0] <= t:
            over = max(over, v - goal[gi][1])
    print(f"heapplot: {a.out}: {len(marks)} marks, {len(syncs)} synchronous majors, heap up to "
          f"{max(v for _, v in heap):.0f} MiB, at most {over:.0f} MiB over the goal in force")


if __name__ == "__main__":
    main()
