#!/usr/bin/env python3
"""bench/report.py — turn bench/run's raw lines into the comparison table,
results.json, pauses.svg and frames.svg. Called by bench/run; standard
library only.

Raw lines (one per line, written by bench/run from the benchmarks' stdout):
  RESULT label=L run=I gc=G bench=B time_ms=... checksum=H k=v ...
  PAUSES label=L run=I gc=G bench=B n=N us=d1,d2,...
  SERIES label=L run=I gc=G bench=B name=NAME n=N values=v1,v2,...
  FAIL   label=L gc=G run=I reason=R [detail=D]

Each table row is one run: the one whose time is the median of that
collector's runs (the lower median for an even count), never figures
gathered from different runs. The pause figures are the benchmark's own
(bench/gcshim.h: one pause log, one nearest-rank routine for every
collector); this script only picks and prints them.

Exit status 1 when the runs of a benchmark disagree on the checksum of the
final live data (or a run printed none), when boehm-m1 did not mark on one
thread, or when a run of a lull column failed; the table says which.
"""
import argparse
import json
import math
import os
import statistics
import sys

# Columns (collectors) in table order; bench/run's --lull-variant names go
# after "lull" (set in main).
GC_ORDER = ["lull", "lull-mutex", "boehm", "boehm-m1", "boehm-incr"]
COLORS = {"lull": "#1f77b4", "lull-mutex": "#aec7e8", "boehm": "#ff7f0e", "boehm-m1": "#d62728", "boehm-incr": "#2ca02c"}
VARIANT_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"]
# Benchmark-specific figures: key -> (label, format, lower is better)
EXTRAS = {
    "minor_p50_us": ("minor pauses p50 {:.0f} us", True),
    "minor_p99_us": ("p99 {:.0f} us", True),
    "minor_max_us": ("max {:.0f} us", True),
    "major_pauses": ("{:.0f} major pauses", True),
    "majors_sync": ("{:.0f} synchronous majors", True),
    "major_max_us": ("major max {:.0f} us", True),
    "survival_pct": ("{:.1f}% of allocation promoted", True),
    "aged_mib": ("{:.1f} MiB aged in the nursery", True),
    "heap_to_live": ("heap at exit {:.2f}x live", True),
    "sync_finishes": ("{:.0f} marks finished stopped", True),
    "paced_waits": ("{:.0f} paced waits", True),
    "paced_ms": ("paced {:.0f} ms", True),
    "frame_p50_ms": ("frame p50 {:.2f} ms", True),
    "frame_p99_ms": ("frame p99 {:.2f} ms", True),
    "frame_max_ms": ("frame max {:.1f} ms", True),
    "frames_over_16ms": ("{:.0f} frames > 16.6 ms", True),
    "frames_over_16ms_beside_pauses": ("{:.0f} of them over without their pauses", True),
    "frame_p99_ms_beside_pauses": ("frame p99 without its pauses {:.2f} ms", True),
    "idle_minors": ("{:.0f} minors in idle time", False),
    "idle_majors": ("{:.0f} majors' pauses in idle time", False),
    "idle_overran": ("{:.0f} frames the idle call took past 16.6 ms", True),
    "rps": ("{:.0f} req/s", False),
    "req_p50_us": ("request p50 {:.0f} us", True),
    "req_p99_us": ("request p99 {:.0f} us", True),
    "req_max_us": ("request max {:.0f} us", True),
    "req_p999_us": ("request p99.9 {:.0f} us", True),
    "madvise_per_req": ("{:.3f} madvise/request", True),
    "faults_per_req": ("{:.2f} page faults/request", True),
    "attach_p50_us": ("attach p50 {:.1f} us", True),
    "attach_p99_us": ("attach p99 {:.1f} us", True),
    "attach_max_us": ("attach max {:.0f} us", True),
    "detach_p50_us": ("detach p50 {:.1f} us", True),
    "detach_p99_us": ("detach p99 {:.1f} us", True),
    "detach_max_us": ("detach max {:.0f} us", True),
    "pair_p50_us": ("attach+detach p50 {:.1f} us", True),
    "pair_p99_us": ("attach+detach p99 {:.1f} us", True),
    "pair_max_us": ("attach+detach max {:.0f} us", True),
    "ns_per_alloc": ("{:.1f} ns/alloc", True),
    "ns_per_alloc_atomic": ("{:.1f} ns/alloc (pointer-free)", True),
    "ns_per_malloc_free": ("malloc+free {:.1f} ns", True),
    "small_t1_kps": ("small {:.0f} k/s on 1 thread", False),
    "small_t2_kps": ("{:.0f} k/s on 2", False),
    "small_scaling": ("small 2/1 {:.2f}x", False),
    "medium_t1_kps": ("medium {:.0f} k/s on 1 thread", False),
    "medium_t2_kps": ("{:.0f} k/s on 2", False),
    "medium_scaling": ("medium 2/1 {:.2f}x", False),
    "large_t1_kps": ("large {:.0f} k/s on 1 thread", False),
    "large_t2_kps": ("{:.0f} k/s on 2", False),
    "large_scaling": ("large 2/1 {:.2f}x", False),
    "ns_per_store": ("{:.2f} ns/store", True),
    "ns_per_raw_store": ("raw store {:.2f} ns", True),
    "ns_per_round": ("{:.0f} ns/round", True),
    "weak_cleared": ("{:.0f} weak cleared", False),
}
# Figures shown, never compared: baselines that do not depend on the
# collector, and counts whose ratio means nothing.
BASELINES = {"ns_per_malloc_free", "ns_per_raw_store", "weak_cleared"}


def parse(path):
    results, pauses, series, fails = [], {}, {}, []
    for line in open(path):
        parts = line.split()
        if not parts:
            continue
        kind, fields = parts[0], {}
        for kv in parts[1:]:
            k, _, v = kv.partition("=")
            fields[k] = v
        key = (fields.get("label"), fields.get("gc"), int(fields.get("run", 0)))
        if kind == "RESULT":
            results.append(fields)
        elif kind == "PAUSES":
            vals = fields.get("us", "")
            pauses[key] = [float(x) for x in vals.split(",") if x]
        elif kind == "SERIES":
            vals = fields.get("values", "")
            series[key + (fields.get("name"),)] = [float(x) for x in vals.split(",") if x]
        elif kind == "FAIL":
            fails.append(fields)
    return results, pauses, series, fails


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt_ms(us):
    if us is None:
        return ""
    ms = us / 1000.0
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return ""
    return f"{a / b:.2f}x"


def median_run(rows):
    """The run whose time is the median (lower median for an even count)."""
    rows = sorted(rows, key=lambda r: (float(r["time_ms"]), int(r["run"])))
    return rows[(len(rows) - 1) // 2]


def is_lull(gc):
    return gc in ("lull", "lull-mutex") or gc in VARIANTS


VARIANTS = {}
LULL_PARAMS = ""


def jitter_summary(path):
    """bench/jitter's RESULT as a dict, and the lines that end the table.
    No path: it did not run (None, []). A failed run: (None, a line saying so)."""
    if not path:
        return None, []
    fig = None
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                fig = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    if fig is None:
        return None, ["", "machine (bench/jitter, no collector): FAILED, see bench/run's messages"]
    fig = {k: num(v) if k not in ("gc", "bench", "sink") else v for k, v in fig.items()}
    return fig, [
        "",
        f"machine (bench/jitter, no collector, after the benchmarks): {fig['threads']:.0f} threads repeated one fixed "
        f"unit of work for {fig['seconds']:.0f} s, {fig['units']:.0f} units: p50 {fig['unit_p50_us'] / 1000:.2f} ms, "
        f"p99 {fig['unit_p99_us'] / 1000:.2f} ms, p99.9 {fig['unit_p999_us'] / 1000:.2f} ms, "
        f"max {fig['unit_max_us'] / 1000:.2f} ms; {fig['over_3x_median_pct']:.2f}% over 3x the median "
        f"(on CPU {fig['slow_oncpu_pct']:.0f}% of their time), {fig['over_16ms']:.0f} over 16.6 ms. "
        "This is how far the machine alone spreads the time of a fixed amount of work: read pause percentiles "
        "against it.",
    ]


def main():
    ap = argparse.ArgumentParser()
    for a in ["raw", "out", "command", "runs", "date", "machine", "compiler", "boehm", "commit", "quick"]:
        ap.add_argument("--" + a.replace("_", "-"), dest=a, required=True)
    ap.add_argument("--variant", action="append", default=[], help="NAME=PARAMS, as given to bench/run")
    ap.add_argument("--lull-params", dest="lull_params", default="", help="LULL_GC_PARAMS of the lull column")
    ap.add_argument("--jitter", default="", help="bench/jitter's output (its RESULT line), or FAILED")
    args = ap.parse_args()
    global LULL_PARAMS
    LULL_PARAMS = args.lull_params
    for v in args.variant:
        name, _, params = v.partition("=")
        VARIANTS[name] = params
    for n, name in enumerate(VARIANTS):
        GC_ORDER.insert(1 + n, name)
        COLORS[name] = VARIANT_COLORS[n % len(VARIANT_COLORS)]
    results, pauses, series, fails = parse(args.raw)
    status = 0

    labels = []
    for r in results + fails:
        if r["label"] not in labels:
            labels.append(r["label"])

    # Checksums of the final live data: every run of a benchmark, whatever
    # the collector, must print the same one.
    problems = {}  # (label, gc) -> notes
    for label in labels:
        rows = [r for r in results if r["label"] == label]
        sums = {}
        for r in rows:
            sums.setdefault(r.get("checksum", "none"), []).append(f"{r['gc']} run {r['run']}")
        if len(sums) > 1 or "none" in sums:
            status = 1
            print(f"bench/run: {label}: FAILED: the runs disagree on the checksum of the final live data: "
                  + "; ".join(f"{h}: {', '.join(w)}" for h, w in sums.items()), file=sys.stderr)
            for r in rows:
                problems.setdefault((label, r["gc"]), []).append("CHECKSUM MISMATCH")
        for r in rows:
            want = "lull" if is_lull(r["gc"]) else "boehm-incr" if r["gc"] == "boehm-incr" else "boehm"
            if r.get("impl") != want:
                status = 1
                print(f"bench/run: {label}: FAILED: column {r['gc']} run {r['run']} ran {r.get('impl')}, not {want}",
                      file=sys.stderr)
                problems.setdefault((label, r["gc"]), []).append(f"RAN {r.get('impl')}")
            if r["gc"] == "boehm-m1" and r.get("markers") != "1":
                status = 1
                print(f"bench/run: {label}: FAILED: boehm-m1 run {r['run']} marked with {r.get('markers')} threads "
                      f"(GC_MARKERS=1 not honoured)", file=sys.stderr)
                problems.setdefault((label, "boehm-m1"), []).append("GC_MARKERS=1 NOT HONOURED")
    for f in fails:
        if is_lull(f["gc"]):
            status = 1

    chosen = {}
    for label in labels:
        for gc in GC_ORDER:
            rows = [r for r in results if r["label"] == label and r["gc"] == gc]
            if rows:
                chosen[(label, gc)] = (median_run(rows), len(rows))

    def fig(label, gc, k):
        c = chosen.get((label, gc))
        return num(c[0].get(k)) if c else None

    def fail_note(label, gc):
        fs = [f for f in fails if f["label"] == label and f["gc"] == gc]
        if not fs:
            return ""
        reasons = sorted(set(f["reason"] + (": " + f["detail"].replace("_", " ") if f.get("detail", "none") != "none" else "") for f in fs))
        runs = len(fs) + (chosen[(label, gc)][1] if (label, gc) in chosen else 0)
        return f"FAILED {len(fs)} of {runs} runs: " + "; ".join(reasons)

    head = ["benchmark", "gc", "markers", "run", "time (ms)", "peak RSS (MiB)", "collections", "pauses",
            "total pause (ms)", "max pause (ms)", "p99 pause (ms)", "p50 pause (ms)", "checksum", "other"]
    left = {0, 1, 12, 13}
    table = [head]
    for label in labels:
        for gc in GC_ORDER:
            c = chosen.get((label, gc))
            notes = problems.get((label, gc), [])
            note = fail_note(label, gc)
            if c is None and not note:
                continue
            if c is None:
                table.append([label, gc, "", "", "FAILED"] + [""] * 8 + [note])
                continue
            m = {k: num(v) for k, v in c[0].items()}
            markers = c[0].get("markers", "?")
            other = []
            for k, (fmt, _) in EXTRAS.items():
                if m.get(k) is not None:
                    other.append(fmt.format(m[k]))
            other += notes
            if note:
                other.append(note)
            table.append([label, gc, markers, f"{c[0]['run']} of {c[1]}", f"{m['time_ms']:.0f}",
                          f"{m['peak_rss_kb'] / 1024:.1f}", f"{m['collections']:.0f}", f"{m['pauses']:.0f}",
                          fmt_ms(m.get("pause_total_ms") * 1000 if m.get("pause_total_ms") is not None else None),
                          fmt_ms(m.get("pause_max_us")), fmt_ms(m.get("pause_p99_us")), fmt_ms(m.get("pause_p50_us")),
                          c[0].get("checksum", "none")[:8], ", ".join(other)])
        pairs = [("lull", peer) for peer in ["lull-mutex", "boehm", "boehm-m1", "boehm-incr"]] + [(v, "lull") for v in VARIANTS]
        for a, b in pairs:
            if (label, a) not in chosen or (label, b) not in chosen:
                continue
            other = []
            for k, (fmt, _) in EXTRAS.items():
                r = ratio(fig(label, a, k), fig(label, b, k)) if k not in BASELINES else ""
                if r:
                    other.append(f"{k} {r}")
            table.append([label, f"{a}/{b}", "", "", ratio(fig(label, a, "time_ms"), fig(label, b, "time_ms")),
                          ratio(fig(label, a, "peak_rss_kb"), fig(label, b, "peak_rss_kb")), "", "",
                          ratio(fig(label, a, "pause_total_ms"), fig(label, b, "pause_total_ms")),
                          ratio(fig(label, a, "pause_max_us"), fig(label, b, "pause_max_us")),
                          ratio(fig(label, a, "pause_p99_us"), fig(label, b, "pause_p99_us")),
                          ratio(fig(label, a, "pause_p50_us"), fig(label, b, "pause_p50_us")), "",
                          ", ".join(other)])

    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = []
    for n, r in enumerate(table):
        cells = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    columns = [f"lull: LULL_GC_PARAMS={LULL_PARAMS}" if LULL_PARAMS else "lull: LULL_GC_PARAMS unset"]
    columns += [f"{v}: LULL_GC_PARAMS={p}" for v, p in VARIANTS.items()]
    if any(r["gc"] == "lull-mutex" for r in results + fails):
        columns.append("lull-mutex: lull with every handle call made under one pthread mutex (GCSHIM_HANDLES_MUTEX=1)")
    columns += ["boehm: GC_MARKERS unset (libgc's default)", "boehm-m1: GC_MARKERS=1"]
    if any(r["gc"] == "boehm-incr" for r in results + fails):
        columns.append("boehm-incr: GC_MARKERS unset, GC_enable_incremental, 3 ms time limit")
    markers_note = ("markers: threads that mark, as each run's RESULT line reports: Boehm's GC_get_parallel() + 1, "
                    "lull's stopping thread + its lull-mark/N worker threads")
    preamble = [
        f"$ {args.command}",
        f"{args.date}; {args.machine}",
        f"compiler: {args.compiler}; Release build; Boehm GC {args.boehm}; lull {args.commit}; "
        f"{args.runs} run(s) per collector, collectors alternating" + ("; --quick sizes" if args.quick == "1" else ""),
        "each row is ONE run, the one with the median time (lower median for an even count; 'run' says which); "
        "all its figures come from that run",
        "pauses: every stop-the-world pause (lull: pause hook; Boehm: PRE_STOP_WORLD to POST_START_WORLD), "
        "summarised per run by one routine (bench/gcshim.h, nearest rank); total pause = their sum",
        "checksum: of the final live data, walked by the benchmark; every run of a benchmark must agree",
        "columns: " + "; ".join(columns),
        markers_note,
        "",
    ]
    jitter, jitter_lines = jitter_summary(args.jitter)
    if jitter_lines:
        status = status or (1 if jitter is None else 0)
    text = "\n".join(preamble + lines + jitter_lines) + "\n"
    print()
    print(text, end="")
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(text)

    # JSON: everything, raw.
    doc = {
        "command": args.command, "date": args.date, "machine": args.machine, "compiler": args.compiler,
        "boehm_version": args.boehm, "lull_commit": args.commit, "runs_per_collector": int(args.runs),
        "quick": args.quick == "1", "columns": columns,
        "variants": VARIANTS, "checksums_agree": status == 0, "machine_jitter": jitter,
        "runs": [], "failures": fails,
        "median_runs": [{"benchmark": l, "gc": g, "run": int(c[0]["run"]), "of": c[1]}
                        for (l, g), c in chosen.items()],
    }
    for r in results:
        key = (r["label"], r["gc"], int(r["run"]))
        entry = {"benchmark": r["label"], "gc": r["gc"], "run": int(r["run"]), "checksum": r.get("checksum"),
                 "figures": {k: num(v) for k, v in r.items() if k not in ("label", "gc", "run", "bench", "checksum")},
                 "pauses_us": pauses.get(key, [])}
        for (l, g, i, name), vals in series.items():
            if (l, g, i) == key:
                entry.setdefault("series", {})[name] = vals
        doc["runs"].append(entry)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)

    with open(os.path.join(args.out, "pauses.svg"), "w") as f:
        f.write(pause_svg(labels, pauses, fails, args))
    with open(os.path.join(args.out, "frames.svg"), "w") as f:
        f.write(frames_svg(results, series, fails, args))
    return status


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def pause_svg(labels, pauses, fails, args):
    """One panel per benchmark: the cumulative distribution of pause times
    (all runs pooled) of each collector, log-scaled time axis."""
    pw, ph, ml, mr, mt, mb = 420, 240, 55, 15, 30, 40
    cols = 2
    rows = max(1, math.ceil(len(labels) / cols))
    W, H = cols * pw, rows * ph + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="10" y="18" font-size="14">Pause-time distribution (fraction of pauses at most x), '
           f'{esc(args.date)}, {esc(args.command)}</text>',
           f'<text x="10" y="34" fill="#555">{esc(args.machine)}</text>']
    for n, label in enumerate(labels):
        ox, oy = (n % cols) * pw, 45 + (n // cols) * ph
        x0, y0, x1, y1 = ox + ml, oy + mt, ox + pw - mr, oy + ph - mb
        data = {}
        for gc in GC_ORDER:
            vals = sorted(v for (l, g, _), vs in pauses.items() if l == label and g == gc for v in vs if v > 0)
            if vals:
                data[gc] = vals
        out.append(f'<text x="{ox + ml}" y="{oy + 18}" font-size="12" font-weight="bold">{esc(label)}</text>')
        out.append(f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#999"/>')
        if not data:
            out.append(f'<text x="{x0 + 10}" y="{(y0 + y1) / 2}" fill="#a00">no pauses recorded</text>')
        lo = min((v[0] for v in data.values()), default=10.0)
        hi = max((v[-1] for v in data.values()), default=1e4)
        dlo, dhi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        if dhi <= dlo:
            dhi = dlo + 1

        def X(v):
            return x0 + (math.log10(v) - dlo) / (dhi - dlo) * (x1 - x0)

        def Y(p):
            return y1 - p * (y1 - y0)

        for d in range(dlo, dhi + 1):
            x = X(10 ** d)
            us = 10 ** d
            lab = f"{us:.0f} us" if us < 1000 else (f"{us / 1000:.0f} ms" if us < 1e6 else f"{us / 1e6:.0f} s")
            out.append(f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{y1 + 14}" text-anchor="middle">{lab}</text>')
        for p in (0, 0.5, 0.9, 0.99, 1):
            y = Y(p)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#eee"/>')
            out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{p:g}</text>')
        legend_y = y0 + 14
        for gc, vals in data.items():
            nv = len(vals)
            pts = []
            for i, v in enumerate(vals):
                pts.append(f"{X(v):.1f},{Y(i / nv):.1f}")
                pts.append(f"{X(v):.1f},{Y((i + 1) / nv):.1f}")
            out.append(f'<polyline fill="none" stroke="{COLORS[gc]}" stroke-width="1.5" points="{" ".join(pts)}"/>')
            out.append(f'<text x="{x0 + 8}" y="{legend_y}" fill="{COLORS[gc]}">{gc}: {nv} pauses, '
                       f'max {fmt_ms(vals[-1])} ms</text>')
            legend_y += 13
        for f in fails:
            if f["label"] == label:
                out.append(f'<text x="{x0 + 8}" y="{legend_y}" fill="#a00">{esc(f["gc"])} run {esc(f["run"])} '
                           f'failed: {esc(f["reason"])}</text>')
                legend_y += 13
        out.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 28}" text-anchor="middle" fill="#555">pause</text>')
    out.append("</svg>\n")
    return "\n".join(out)


def frames_svg(results, series, fails, args):
    """The game loop's frame times over the run, one line per collector (the
    run with the median total time), with the 16.6 ms frame budget."""
    W, H, ml, mr, mt, mb = 900, 360, 60, 20, 50, 45
    x0, y0, x1, y1 = ml, mt, W - mr, H - mb
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="10" y="18" font-size="14">gameloop: frame time per frame, {esc(args.date)}, '
           f'{esc(args.command)}</text>',
           f'<text x="10" y="34" fill="#555">{esc(args.machine)}</text>']
    lines = {}
    for gc in GC_ORDER:
        rows = [r for r in results if r["label"] == "gameloop" and r["gc"] == gc]
        if not rows:
            continue
        run = int(median_run(rows)["run"])
        vals = series.get(("gameloop", gc, run, "frame_ms"))
        if vals:
            lines[gc] = vals
    if not lines:
        out.append(f'<text x="{x0 + 10}" y="{(y0 + y1) / 2}" fill="#a00">no frame times recorded</text>')
    nmax = max((len(v) for v in lines.values()), default=1)
    p99s = sorted(statistics.quantiles(v, n=100)[98] if len(v) > 1 else v[0] for v in lines.values())
    top = max([33.3] + [p * 1.5 for p in p99s])
    top = 10 * math.ceil(top / 10)

    def X(i):
        return x0 + i / max(1, nmax - 1) * (x1 - x0)

    def Y(v):
        return y1 - min(v, top) / top * (y1 - y0)

    out.append(f'<rect x="{x0}" y="{y0}" width="{x1 - x0}" height="{y1 - y0}" fill="none" stroke="#999"/>')
    for t in range(0, int(top) + 1, max(5, int(top) // 8 // 5 * 5 or 5)):
        out.append(f'<line x1="{x0}" y1="{Y(t):.1f}" x2="{x1}" y2="{Y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{x0 - 4}" y="{Y(t) + 4:.1f}" text-anchor="end">{t} ms</text>')
    out.append(f'<line x1="{x0}" y1="{Y(16.6):.1f}" x2="{x1}" y2="{Y(16.6):.1f}" stroke="#c00" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{x1 - 4}" y="{Y(16.6) - 4:.1f}" text-anchor="end" fill="#c00">16.6 ms (60 fps)</text>')
    for i in range(0, nmax, max(1, nmax // 10)):
        out.append(f'<text x="{X(i):.1f}" y="{y1 + 14}" text-anchor="middle">{i}</text>')
    out.append(f'<text x="{(x0 + x1) / 2}" y="{y1 + 30}" text-anchor="middle" fill="#555">frame '
               f'(values above {top:.0f} ms drawn at the top)</text>')
    ly = y0 + 14
    for gc, vals in lines.items():
        pts = " ".join(f"{X(i):.1f},{Y(v):.1f}" for i, v in enumerate(vals))
        out.append(f'<polyline fill="none" stroke="{COLORS[gc]}" stroke-width="1" opacity="0.8" points="{pts}"/>')
        over = sum(1 for v in vals if v > 16.6)
        out.append(f'<text x="{x0 + 8}" y="{ly}" fill="{COLORS[gc]}">{gc}: {len(vals)} frames, max {max(vals):.1f} ms, '
                   f'{over} over 16.6 ms</text>')
        ly += 13
    for f in fails:
        if f["label"] == "gameloop":
            out.append(f'<text x="{x0 + 8}" y="{ly}" fill="#a00">{esc(f["gc"])} run {esc(f["run"])} failed: '
                       f'{esc(f["reason"])}</text>')
            ly += 13
    out.append("</svg>\n")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
