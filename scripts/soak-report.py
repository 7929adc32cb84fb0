#!/usr/bin/env python3
"""soak-report.py OUT: the figures, the promises and the plot of a scripts/soak.sh run.

Reads OUT/samples.csv, events.csv, sacct.txt, plugin-errors.txt, fatal.txt, replay.json and
driver.log (all written by soak.sh); writes OUT/summary.txt, OUT/figures.json and an SVG;
exits 1 when a promise fails. Standard library only.
"""
import argparse
import csv
import json
import re
import sys
from collections import Counter, defaultdict

FINAL = {"COMPLETED", "CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL", "PREEMPTED",
         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def expand(hostlist):
    """`gb[001-003,010],gb020` -> ['gb001', 'gb002', 'gb003', 'gb010', 'gb020']."""
    out = []
    for m in re.finditer(r"([A-Za-z]+)(?:\[([^\]]+)\]|(\d+))", hostlist):
        prefix, ranges, single = m.groups()
        if single is not None:
            out.append(prefix + single)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            b = b or a
            for n in range(int(a), int(b) + 1):
                out.append(f"{prefix}{n:0{len(a)}d}")
    return out


def rack_counts(nodelist, per_rack):
    c = Counter()
    for name in expand(nodelist):
        c[(int(re.sub(r"\D", "", name)) - 1) // per_rack] += 1
    return c


def find_key(obj, key):
    """All values of `key` anywhere in a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                yield v
            yield from find_key(v, key)
    elif isinstance(obj, list):
        for v in obj:
            yield from find_key(v, key)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def slope(points):
    """Least-squares slope of (x, y) points."""
    if len(points) < 2:
        return float("nan")
    mx, my = mean([p[0] for p in points]), mean([p[1] for p in points])
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


def svg_plot(path, rss, bins, events, duration_min, bin_min):
    """Three panels over elapsed minutes: RSS (MB, per process segment), CPU ms per job
    test, CPU ms per placement; restarts red, reconfigures grey."""
    W, H, L, R, PH, GAP = 900, 660, 70, 20, 160, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W/2}" y="20" text-anchor="middle" font-size="14">scripts/soak.sh: slurmctld with topology/nvl72, {duration_min:.0f} min</text>']
    xmax = max([duration_min, 1] + [t for t, *_ in bins])

    def X(t):
        return L + (W - L - R) * t / xmax

    panels = [
        ("slurmctld RSS, MB", [[(t, v) for t, v in seg] for seg in rss], "#1f77b4"),
        (f"slurmctld CPU ms per job test (sdiag: main + backfill), {bin_min:g}-min bins", [[(t, v) for t, v, _ in bins if v is not None]], "#2ca02c"),
        (f"slurmctld CPU ms per placement decision (the plugin's log lines), {bin_min:g}-min bins", [[(t, v) for t, _, v in bins if v is not None]], "#ff7f0e"),
    ]
    for i, (title, series, colour) in enumerate(panels):
        top = 40 + i * (PH + GAP)
        ys = [v for s in series for _, v in s]
        ymax = max(ys) * 1.1 if ys else 1
        def Y(v):
            return top + PH - PH * v / ymax
        out.append(f'<rect x="{L}" y="{top}" width="{W-L-R}" height="{PH}" fill="none" stroke="#888"/>')
        out.append(f'<text x="{L}" y="{top-6}">{title}</text>')
        for k in range(5):
            v = ymax * k / 4
            out.append(f'<text x="{L-6}" y="{Y(v)+4:.1f}" text-anchor="end">{v:.3g}</text>')
            out.append(f'<line x1="{L}" x2="{W-R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#eee"/>')
        for t, kind in events:
            if kind in ("restart", "reconfigure"):
                c, d = ("#d62728", "") if kind == "restart" else ("#bbb", ' stroke-dasharray="3,3"')
                out.append(f'<line x1="{X(t):.1f}" x2="{X(t):.1f}" y1="{top}" y2="{top+PH}" stroke="{c}"{d}/>')
        for s in series:
            if len(s) >= 2:
                pts = " ".join(f"{X(t):.1f},{Y(v):.1f}" for t, v in s)
                out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
                if i > 0:
                    out += [f'<circle cx="{X(t):.1f}" cy="{Y(v):.1f}" r="2.5" fill="{colour}"/>' for t, v in s]
            elif s:
                t, v = s[0]
                out.append(f'<circle cx="{X(t):.1f}" cy="{Y(v):.1f}" r="2" fill="{colour}"/>')
        for k in range(0, int(xmax) + 1, max(1, int(xmax // 12) or 1)):
            out.append(f'<text x="{X(k):.1f}" y="{top+PH+14}" text-anchor="middle">{k}</text>')
    out.append(f'<text x="{W/2}" y="{H-8}" text-anchor="middle">minutes since the lab was up (red: slurmctld restart, grey dashed: scontrol reconfigure)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--expected", type=int, required=True)
    ap.add_argument("--driver-rc", type=int, default=0)
    ap.add_argument("--trays-per-rack", type=int, default=18)
    ap.add_argument("--rss-growth-max", type=float, default=0.15)
    ap.add_argument("--cpu-growth-max", type=float, default=0.5)
    ap.add_argument("--tck", type=int, default=100)
    ap.add_argument("--svg")
    a = ap.parse_args()
    d = a.out
    fig, fails = {}, []

    # ---------------------------------------------------------------- events
    events = []
    with open(f"{d}/events.csv") as f:
        for row in csv.DictReader(f):
            events.append((float(row["epoch"]), row["kind"], row["detail"]))
    kinds = Counter(k for _, k, _ in events)
    for k in ("restart", "reconfigure", "drain", "resume", "resume-refused", "resume-skipped"):
        fig[k + "s"] = kinds.get(k, 0)
    errs = [e for e in events if e[1].endswith("-error")]
    fig["soak_command_errors"] = len(errs)
    if errs:
        fails.append(f"{len(errs)} soak command(s) failed: {errs[0][1]} {errs[0][2]}")

    # ---------------------------------------------------------------- samples
    rows = []
    with open(f"{d}/samples.csv") as f:
        for r in csv.DictReader(f):
            if r["pid"]:
                rows.append((int(r["epoch"]), int(r["pid"]), int(r["rss_kb"]), int(r["cpu_ticks"]),
                             int(r["tests"]), int(r["placements"]),
                             int(r.get("main_us") or 0) + int(r.get("bf_us") or 0)))
    if not rows:
        print("no samples", file=sys.stderr)
        return 1
    t0 = rows[0][0]
    dur_min = (rows[-1][0] - t0) / 60
    fig["duration_min"] = round(dur_min, 1)
    fig["samples"] = len(rows)
    fig["slurmctld_processes"] = len(dict.fromkeys(r[1] for r in rows))
    # RSS by process segment
    segs = defaultdict(list)
    for e, pid, rss, *_ in rows:
        segs[pid].append(((e - t0) / 60, rss / 1024))
    rss_series = list(segs.values())
    # CPU per interval within one process
    intervals = []
    for p, q in zip(rows, rows[1:]):
        if p[1] == q[1] and q[3] >= p[3] and q[4] >= p[4]:
            intervals.append(((q[0] - t0) / 60, (q[3] - p[3]) * 1000 / a.tck, q[4] - p[4], q[5] - p[5],
                              max(q[6] - p[6], 0)))
    bin_min = 5.0 if dur_min >= 60 else max(round(dur_min / 12, 1), 0.5)
    bins = defaultdict(lambda: [0.0, 0, 0])
    for t, cpu, tests, place, _ in intervals:
        b = bins[int(t // bin_min)]
        b[0] += cpu; b[1] += tests; b[2] += place
    bin_rows = [((k + 0.5) * bin_min, v[0] / v[1] if v[1] else None, v[0] / v[2] if v[2] else None)
                for k, v in sorted(bins.items())]

    # windows: first / last hour for RSS, first / last 30 min for CPU (a third / a quarter of
    # a shorter run)
    rw = 60.0 if dur_min >= 120 else dur_min / 3
    cw = min(30.0, dur_min / 4)
    # CPU per job test is compared inside the submission span: after it the queue empties,
    # the job tests fall tenfold while slurmctld's fixed costs (polling clients, node
    # registrations, state saves) stay, and the ratio rises with no change per test.
    m = re.search(r"--minutes (\S+)", open(f"{d}/run.txt").read())
    sub_end = min(float(m.group(1)), dur_min) if m else dur_min
    fig["submission_span_min"] = round(sub_end, 1)
    rss_all = [(t, v) for s in rss_series for t, v in s]
    first = [v for t, v in rss_all if t <= rw]
    last = [v for t, v in rss_all if t >= dur_min - rw]
    fig["rss_window_min"] = round(rw, 1)
    fig["rss_first_mean_mb"], fig["rss_first_max_mb"] = round(mean(first), 1), round(max(first), 1)
    fig["rss_last_mean_mb"], fig["rss_last_max_mb"] = round(mean(last), 1), round(max(last), 1)
    fig["rss_max_mb"] = round(max(v for _, v in rss_all), 1)
    fig["rss_slope_mb_per_h"] = round(slope(rss_all) * 60, 2)
    # RSS at the end of each process, over time: growth that survives re-execs would show here
    ends = [s[-1] for s in rss_series if len(s) >= 2]
    fig["rss_at_process_end_slope_mb_per_h"] = round(slope(ends) * 60, 2) if len(ends) >= 2 else None

    def cpu_per(window):
        c = sum(i[1] for i in window)
        n = sum(i[2] for i in window)
        pl = sum(i[3] for i in window)
        us = sum(i[4] for i in window)
        return (c / n if n else float("nan"), c / pl if pl else float("nan"), c, n, pl,
                us / n if n else float("nan"))

    f_cpu = cpu_per([i for i in intervals if i[0] <= cw])
    l_cpu = cpu_per([i for i in intervals if sub_end - cw <= i[0] <= sub_end])
    tail_cpu = cpu_per([i for i in intervals if i[0] >= dur_min - cw])
    a_cpu = cpu_per(intervals)
    fig["cpu_ms_per_test_run_end"] = round(tail_cpu[0], 3)
    # cpu = base x seconds + cost x job tests, fitted over the bins of each half of the run
    def fit(lo, hi):
        sel = [i for i in intervals if lo <= i[0] < hi]
        by = defaultdict(lambda: [0.0, 0, 0.0])
        for t, cpu, tests, _, _ in sel:
            x = by[int(t // bin_min)]
            x[0] += cpu; x[1] += tests; x[2] += 1
        pts = list(by.values())
        if len(pts) < 3:
            return (None, None)
        # per bin: seconds ~ samples x SAMPLE_S; normalise by samples to keep it two-variable
        import statistics
        ys = [c / n for c, _, n in pts]; xs = [k / n for _, k, n in pts]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        if not sxx:
            return (None, None)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
        return (round(b, 3), round(my - b * mx, 1))
    fig["fit_ms_per_test_first_half"], fig["fit_base_ms_per_sample_first_half"] = fit(0, dur_min / 2)
    fig["fit_ms_per_test_second_half"], fig["fit_base_ms_per_sample_second_half"] = fit(dur_min / 2, dur_min + 1)
    fig["cpu_window_min"] = round(cw, 1)
    fig["cpu_ms_per_test_first"], fig["cpu_ms_per_test_last"] = round(f_cpu[0], 3), round(l_cpu[0], 3)
    fig["cpu_ms_per_placement_first"], fig["cpu_ms_per_placement_last"] = round(f_cpu[1], 2), round(l_cpu[1], 2)
    fig["cpu_ms_per_test_all"], fig["cpu_ms_per_placement_all"] = round(a_cpu[0], 3), round(a_cpu[1], 2)
    # the scheduler's own time per job test (sdiag's cycle sums, wall-clock microseconds)
    fig["sched_us_per_test_first"], fig["sched_us_per_test_last"] = round(f_cpu[5], 1), round(l_cpu[5], 1)
    fig["sched_us_per_test_all"] = round(a_cpu[5], 1)
    fig["cpu_s_total"], fig["job_tests_total"], fig["placements_total"] = round(a_cpu[2] / 1000, 1), a_cpu[3], a_cpu[4]
    fig["cpu_ms_per_test_slope_per_h"] = round(slope([(t, v) for t, v, _ in bin_rows if v is not None]) * 60, 4)
    fig["cpu_ms_per_placement_slope_per_h"] = round(slope([(t, v) for t, _, v in bin_rows if v is not None]) * 60, 3)
    if fig["rss_last_mean_mb"] > fig["rss_first_mean_mb"] * (1 + a.rss_growth_max):
        fails.append(f"RSS grew: mean {fig['rss_first_mean_mb']} MB in the first {rw:.0f} min, {fig['rss_last_mean_mb']} MB in the last")
    if l_cpu[0] > f_cpu[0] * (1 + a.cpu_growth_max):
        fails.append(f"CPU per job test grew: {f_cpu[0]:.3f} ms in the first {cw:.0f} min, {l_cpu[0]:.3f} ms in the last {cw:.0f} min of submissions")

    # ---------------------------------------------------------------- jobs, from sacct
    records = defaultdict(list)   # name -> [(jobid, state, nnodes, nodelist, submitline)]
    with open(f"{d}/sacct.txt") as f:
        for line in f:
            parts = line.rstrip("\n").split("|", 5)
            if len(parts) < 6 or not parts[1].startswith("replay-"):
                continue
            jobid, name, state, nnodes, nodelist, submit = parts
            records[name].append((jobid, state.split()[0], int(nnodes or 0), nodelist, submit))
    expected = {f"replay-{i}" for i in range(a.expected)}
    final_state = {}
    for name, recs in records.items():
        finals = [r[1] for r in recs if r[1] in FINAL]
        if finals:
            final_state[name] = finals[-1]
    lost = sorted(expected - set(final_state), key=lambda n: int(n.split("-")[1]))
    fig["jobs_submitted"] = a.expected
    fig["jobs_in_sacct"] = len(expected & set(records))
    fig["jobs_with_final_state"] = len(expected & set(final_state))
    fig["jobs_lost"] = len(lost)
    fig["final_states"] = dict(Counter(final_state[n] for n in expected & set(final_state)))
    fig["jobs_unexpected_in_sacct"] = len(set(records) - expected)
    if a.expected == 0:
        fails.append("the driver's job count is unknown (no `replay: N jobs` line)")
    if lost:
        fails.append(f"{len(lost)} job(s) lost (no final state in sacct): {', '.join(lost[:10])}")

    # split: every run (sacct -D lists requeued runs too) on the nodes it got
    runs = split = seg_runs = small_runs = 0
    split_list = []
    for name, recs in records.items():
        for jobid, state, nnodes, nodelist, submit in recs:
            if not nodelist or nodelist.startswith("None"):
                continue
            racks = rack_counts(nodelist, a.trays_per_rack)
            n = sum(racks.values())
            runs += 1
            m = re.search(r"--segment=(\d+)", submit)
            if m:
                s = int(m.group(1))
                seg_runs += 1
                if sum(c // s for c in racks.values()) * s != n:
                    split += 1; split_list.append(f"{jobid} ({name}, --segment={s}) on {nodelist}")
            elif n <= a.trays_per_rack:
                small_runs += 1
                if len(racks) > 1:
                    split += 1; split_list.append(f"{jobid} ({name}, {n} trays) on {nodelist}")
    fig["runs_checked"], fig["segment_runs"], fig["small_runs"], fig["split"] = runs, seg_runs, small_runs, split
    if split:
        fails.append(f"{split} run(s) split across racks: {'; '.join(split_list[:5])}")
    # the driver's own count from slurmctld.log (every start, restarts included)
    try:
        rep = json.load(open(f"{d}/replay.json"))
        for key in ("small_jobs_in_one_rack", "segments_in_one_rack"):
            v = next(find_key(rep, key), None)
            fig["driver_" + key] = v
    except (OSError, ValueError) as e:
        fig["driver_report"] = f"unreadable: {e}"
    drv = open(f"{d}/driver.log", errors="replace").read()
    m = re.search(r"\((\d+) tray changes\)", drv)
    fig["driver_tray_changes"] = int(m.group(1)) if m else None
    m = re.search(r"(\d+) Slurm command\(s\) failed; the first: (.*)", drv)
    fig["driver_command_errors"] = int(m.group(1)) if m else 0
    if m:
        fails.append(f"the driver's Slurm commands failed {m.group(1)} time(s); the first: {m.group(2)[:200]}")
    if a.driver_rc != 0:
        fails.append(f"the driver exited with status {a.driver_rc}")

    # ---------------------------------------------------------------- the plugin's logs
    perr = [l for l in open(f"{d}/plugin-errors.txt", errors="replace") if l.strip()]
    fatal = [l for l in open(f"{d}/fatal.txt", errors="replace") if l.strip()]
    fig["plugin_errors"] = len(perr)
    fig["fatal_lines"] = len(fatal)
    if perr:
        fails.append(f"{len(perr)} error/panic line(s) from the plugin; the first: {perr[0].strip()[:200]}")
    if fatal:
        fails.append(f"{len(fatal)} fatal/crash line(s); the first: {fatal[0].strip()[:200]}")

    # ---------------------------------------------------------------- output
    if a.svg:
        svg_plot(a.svg, rss_series, bin_rows,
                 [((e - t0) / 60, k) for e, k, _ in events], dur_min, bin_min)
    json.dump(fig, open(f"{d}/figures.json", "w"), indent=1)
    lines = [
        f"soak: {fig['duration_min']} min sampled, {fig['samples']} samples, {fig['slurmctld_processes']} slurmctld processes",
        f"disturbances: {fig['restarts']} restarts, {fig['reconfigures']} reconfigures, {fig['drains']} drains / {fig['resumes']} resumes by the soak ({fig['resume-refuseds']} refused yet done, {fig['resume-skippeds']} left to the driver); {fig.get('driver_tray_changes')} tray failures and repairs by the driver (scheduled)",
        f"jobs: {fig['jobs_submitted']} submitted, {fig['jobs_with_final_state']} with a final state in sacct, {fig['jobs_lost']} lost; states {fig['final_states']}",
        f"split: {fig['split']} of {fig['runs_checked']} runs ({fig['small_runs']} of <= {a.trays_per_rack} trays, {fig['segment_runs']} --segment); driver's log count: small {fig.get('driver_small_jobs_in_one_rack')}, segments {fig.get('driver_segments_in_one_rack')}",
        f"plugin errors/panics: {fig['plugin_errors']}; fatal/crash lines: {fig['fatal_lines']}; driver command errors: {fig['driver_command_errors']}; soak command errors: {fig['soak_command_errors']}",
        f"RSS MB: first {rw:.0f} min mean {fig['rss_first_mean_mb']} max {fig['rss_first_max_mb']}; last {rw:.0f} min mean {fig['rss_last_mean_mb']} max {fig['rss_last_max_mb']}; max {fig['rss_max_mb']}; slope {fig['rss_slope_mb_per_h']} MB/h (at process ends {fig['rss_at_process_end_slope_mb_per_h']} MB/h)",
        f"CPU ms per job test: first {cw:.0f} min {fig['cpu_ms_per_test_first']}, last {cw:.0f} min of submissions (to {sub_end:.0f} min) {fig['cpu_ms_per_test_last']}, last {cw:.0f} min of the run (drain) {fig['cpu_ms_per_test_run_end']}, all {fig['cpu_ms_per_test_all']} (slope {fig['cpu_ms_per_test_slope_per_h']} ms/h); per placement: {fig['cpu_ms_per_placement_first']}, {fig['cpu_ms_per_placement_last']}, all {fig['cpu_ms_per_placement_all']} (slope {fig['cpu_ms_per_placement_slope_per_h']} ms/h)",
        f"CPU fit per {bin_min:g}-min bin (ms per sample interval = base + cost x job tests): first half cost {fig['fit_ms_per_test_first_half']} ms/test, base {fig['fit_base_ms_per_sample_first_half']} ms; second half {fig['fit_ms_per_test_second_half']} ms/test, base {fig['fit_base_ms_per_sample_second_half']} ms",
        f"scheduler cycle time per job test (sdiag, wall us): first {fig['sched_us_per_test_first']}, last {fig['sched_us_per_test_last']}, all {fig['sched_us_per_test_all']}",
        f"totals: slurmctld CPU {fig['cpu_s_total']} s, {fig['job_tests_total']} job tests, {fig['placements_total']} placements",
    ]
    lines += [f"FAIL: {x}" for x in fails] or ["PASS: every promise held"]
    open(f"{d}/summary.txt", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
