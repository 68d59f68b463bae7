#!/usr/bin/env python3
"""timeline.py — draw a lull trace-file (Chrome trace-event JSON) as SVG.

    bench/timeline.py TRACE.json OUT.svg [--from MS --to MS] [--width PX]

One row per thread that recorded events (named as the trace names them),
time left to right. On a collecting thread, each pause is a full-height
bar (minor: orange, concurrent major's initial and final pauses: red,
synchronous major: dark red) with its phases (stop, minor, mark, sweep,
restart; pin/copy/weak/rebuild inside the minor) as thinner bars beneath;
on the lull-mark/N rows, the workers' share of each pause (blue), each
worker's concurrent mark runs, and worker 0's preclean passes and
background sweeps (green shades). The bottom row plots the heap-size counter.

Without --from/--to it shows the 600 ms around the concurrent major whose
initial pause starts last but one (or the middle of the trace when it has
none), so that a whole mark, with minors inside it, is in view. Times on
the axis are milliseconds since the trace's first event.
"""
import argparse
import json
import sys

PAUSE_COLORS = {
    "minor collection": "#ff9f1c",
    "major: initial pause": "#e63946",
    "major: final pause": "#e63946",
    "major collection (synchronous)": "#8d0801",
}
PHASE_COLORS = {
    "stop the world": "#adb5bd", "minor": "#ffd166", "pin": "#f4a261", "copy": "#e9c46a",
    "weak references and finalizers": "#cdb4db", "rebuild free space": "#bde0fe",
    "mark": "#ef476f", "sweep": "#06d6a0", "finish the last sweep": "#118ab2", "restart the world": "#6c757d",
}
WORKER_COLORS = {"parallel work": "#1d4ed8", "concurrent mark": "#2a9d8f", "preclean": "#8ac926",
                 "background sweep": "#52b788"}


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--from", dest="t_from", type=float)
    ap.add_argument("--to", dest="t_to", type=float)
    ap.add_argument("--width", type=int, default=1400)
    a = ap.parse_args()

    with open(a.trace) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    xs = [e for e in events if e.get("ph") == "X"]
    counters = [e for e in events if e.get("ph") == "C"]
    if not xs:
        sys.exit("timeline.py: the trace has no events")
    t0 = min(e["ts"] for e in xs)

    if a.t_from is None or a.t_to is None:
        initials = sorted(e["ts"] for e in xs if e["name"] == "major: initial pause")
        if len(initials) >= 2:
            centre = (initials[-2] - t0) / 1000.0 + 250
        else:
            centre = (max(e["ts"] + e["dur"] for e in xs) - t0) / 2000.0
        a.t_from, a.t_to = max(0.0, centre - 300), centre + 300
    lo, hi = t0 + a.t_from * 1000, t0 + a.t_to * 1000

    def visible(e):
        return e["ts"] + e.get("dur", 0) >= lo and e["ts"] <= hi

    shown = [e for e in xs if visible(e)]
    tids = sorted({e["tid"] for e in shown}, key=lambda t: (names.get(t, "").startswith("lull-"), names.get(t, ""), t))
    left, right, top, row_h, gap = 150, 20, 50, 46, 10
    plot_w = a.width - left - right
    height = top + len(tids) * (row_h + gap) + 120

    def X(ts):
        return left + (min(max(ts, lo), hi) - lo) / (hi - lo) * plot_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{a.width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15">lull timeline: {esc(a.trace.split("/")[-1])}, '
           f'{a.t_from:.0f}-{a.t_to:.0f} ms</text>']
    for i, tid in enumerate(tids):
        y = top + i * (row_h + gap)
        out.append(f'<text x="8" y="{y + row_h / 2 + 4}">{esc(names.get(tid, f"thread {tid}"))}</text>')
        out.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="{row_h}" fill="#f8f9fa"/>')
        for e in shown:
            if e["tid"] != tid:
                continue
            x0, x1 = X(e["ts"]), X(e["ts"] + e["dur"])
            w = max(x1 - x0, 0.8)
            n = e["name"]
            if e.get("cat") == "pause":
                yy, hh, c = y, row_h * 0.45, PAUSE_COLORS.get(n, "#999")
            elif e.get("cat") == "phase":
                inner = n in ("pin", "copy", "weak references and finalizers", "rebuild free space")
                yy, hh = y + row_h * (0.75 if inner else 0.5), row_h * 0.22
                c = PHASE_COLORS.get(n, "#ccc")
            else:
                yy, hh, c = y + row_h * 0.15, row_h * 0.7, WORKER_COLORS.get(n, "#555")
            dur_ms = e["dur"] / 1000.0
            out.append(f'<rect x="{x0:.2f}" y="{yy:.1f}" width="{w:.2f}" height="{hh:.1f}" fill="{c}">'
                       f'<title>{esc(n)}: {dur_ms:.3f} ms</title></rect>')
    # heap counter
    y = top + len(tids) * (row_h + gap)
    pts = [(c["ts"], c["args"]["heap_bytes"]) for c in counters
           if lo <= c["ts"] <= hi and "heap_bytes" in c.get("args", {})]   # the heap goal counter has none
    out.append(f'<text x="8" y="{y + 34}">heap</text>')
    out.append(f'<rect x="{left}" y="{y}" width="{plot_w}" height="60" fill="#f8f9fa"/>')
    if pts:
        mn, mx = min(p[1] for p in pts), max(p[1] for p in pts)
        rng = (mx - mn) or 1
        poly = " ".join(f"{X(t):.1f},{y + 56 - (v - mn) / rng * 50:.1f}" for t, v in pts)
        out.append(f'<polyline fill="none" stroke="#264653" stroke-width="1.5" points="{poly}"/>')
        out.append(f'<text x="{left + 4}" y="{y + 12}" fill="#264653">{mn / 1048576:.1f} to {mx / 1048576:.1f} MiB'
                   f'</text>')
    # axis
    ya = y + 75
    out.append(f'<line x1="{left}" y1="{ya}" x2="{left + plot_w}" y2="{ya}" stroke="#333"/>')
    span = a.t_to - a.t_from
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000) if span / s <= 12)
    t = (a.t_from // step + 1) * step
    while t < a.t_to:
        x = X(t0 + t * 1000)
        out.append(f'<line x1="{x:.1f}" y1="{ya}" x2="{x:.1f}" y2="{ya + 5}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{ya + 18}" text-anchor="middle">{t:.0f} ms</text>')
        t += step
    # legend
    yl = ya + 38
    x = left
    for name, c in list(PAUSE_COLORS.items())[:2] + [("synchronous major", "#8d0801")] + \
            [("mark", PHASE_COLORS["mark"]), ("finish the last sweep", PHASE_COLORS["finish the last sweep"]), ("parallel work", WORKER_COLORS["parallel work"]),
             ("concurrent mark", WORKER_COLORS["concurrent mark"]), ("preclean", WORKER_COLORS["preclean"]),
             ("background sweep", WORKER_COLORS["background sweep"])]:
        label = {"major: initial pause": "major initial/final pause"}.get(name, name)
        out.append(f'<rect x="{x}" y="{yl - 10}" width="12" height="12" fill="{c}"/>')
        out.append(f'<text x="{x + 16}" y="{yl}">{esc(label)}</text>')
        x += 22 + 7 * len(label)
    out.append("</svg>")
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
