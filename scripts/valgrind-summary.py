#!/usr/bin/env python3
"""valgrind-summary.py: summarise memcheck text logs of one storm run, or compare runs.

  valgrind-summary.py run RUN_DIR --ours PREFIX... [--obj NAME]
      Reads RUN_DIR/vg.<pid>.log (valgrind --log-file=vg.%p.log, text mode) and RUN_DIR/meta.txt
      (key=value lines written by valgrind-storm.sh), writes RUN_DIR/summary.json and
      RUN_DIR/plugin-reports.txt (every report with a frame of ours, in full), prints a summary.
  valgrind-summary.py compare RUN_DIR...
      Prints one table row per run (from summary.json) and exits 1 when a run has an invalid
      access, uninitialised use or crash with a frame of ours, or when the leaks with a frame
      of ours grow with the number of submissions; 0 otherwise.

A frame is "ours" when valgrind names the object (`in .../topology_nvl72.so`) or, for frames
with debug info (valgrind then prints `file:line` instead of the object; run it with
--fullpath-after= so the path is complete), when the source path starts with one of the
--ours prefixes: the repository (Rust code and Slurm's topology helper library compiled by
build.rs), /rustc/ (the Rust standard library linked into the plugin) and the cargo registry.
Slurm's Debian binaries carry no debug info, so their frames always name their object.
Stdlib only; runs with the lab chroot's python3.
"""
import json
import os
import re
import sys

LINE = re.compile(r"^==(\d+)== ?(.*)$")
FRAME = re.compile(r"^\s*(?:at|by) 0x[0-9A-Fa-f]+: (.*?)(?: \((.*)\))?$")
LEAK = re.compile(
    r"^([\d,]+)(?: \(([\d,]+) direct, ([\d,]+) indirect\))? bytes in ([\d,]+) blocks are "
    r"(definitely lost|indirectly lost|possibly lost|still reachable)")
SUMMARY_LEAK = re.compile(
    r"^\s*(definitely lost|indirectly lost|possibly lost|still reachable): ([\d,]+) bytes in "
    r"([\d,]+) blocks")
# valgrind's words -> our keys; possibly lost and still reachable records are only printed
# with --show-leak-kinds=all (VG_EXTRA): informational, never a failure
LEAK_KIND = {"definitely lost": "definite", "indirectly lost": "indirect",
             "possibly lost": "possible", "still reachable": "reachable"}
LEAK_KEYS = ["definite", "indirect", "possible", "reachable"]
THREAD = re.compile(r"^Thread \d+( .*)?:$")
ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors from ([\d,]+) contexts")
KINDS = [  # (category, headline pattern); first match wins
    ("invalid_read", re.compile(r"^Invalid read of size")),
    ("invalid_write", re.compile(r"^Invalid write of size")),
    ("invalid_free", re.compile(r"^(Invalid free|Mismatched free|Invalid (de)?alloc|Mismatched)")),
    ("uninit", re.compile(r"^(Conditional jump or move depends on uninitialised|Use of "
                          r"uninitialised value|Syscall param .* uninitialised)")),
    ("overlap", re.compile(r"^Source and destination overlap")),
    ("fishy", re.compile(r"^Argument .* fishy")),
    ("crash", re.compile(r"^Process terminating with default action of signal")),
]
ACCESS = ["invalid_read", "invalid_write", "invalid_free", "uninit", "overlap", "fishy", "crash"]


def num(s):
    return int(s.replace(",", ""))


def read_meta(run_dir):
    meta = {}
    path = os.path.join(run_dir, "meta.txt")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    meta[k] = v
    return meta


def parse_log(path):
    """Blocks (lists of lines, valgrind's own blank lines separate them) of one process."""
    blocks, cur, pid = [], [], None
    with open(path, errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue  # not valgrind's (e.g. a truncated line)
            pid = pid or m.group(1)
            body = m.group(2)
            if body.strip() == "":
                if cur:
                    blocks.append(cur)
                cur = []
            else:
                cur.append(body)
    if cur:
        blocks.append(cur)
    return pid, blocks


def is_ours(fn, loc, prefixes, obj):
    if "topology_nvl72::" in fn:
        return True  # a Rust path of this crate, whatever the build's source paths were
    if not loc:
        return False
    if loc.startswith("in "):
        return loc[3:].endswith(obj)
    path = loc.rsplit(":", 1)[0]
    return any(path.startswith(p) for p in prefixes)


def summarize(run_dir, prefixes, obj):
    meta = read_meta(run_dir)
    ctld_pids = set(meta.get("ctld_pids", "").split())
    procs, reports = [], []
    logs = sorted(f for f in os.listdir(run_dir) if re.fullmatch(r"vg\.\d+\.log", f))
    for name in logs:
        pid, blocks = parse_log(os.path.join(run_dir, name))
        p = {"pid": pid or name.split(".")[1], "ppid": None, "finished": False,
             "contexts": {k: 0 for k in ACCESS}, "ours": {k: 0 for k in ACCESS},
             "errors": 0, "plugin_seen": False}
        for k in LEAK_KEYS:
            p[k], p[k + "_ours"] = [0, 0], [0, 0]
        for b in blocks:
            while len(b) > 1 and THREAD.match(b[0]):
                b = b[1:]  # "Thread 7:" (or "Thread 7 name:") before a report of another thread
            head = b[0]
            frames = [m for m in (FRAME.match(line) for line in b[1:]) if m]
            mine = any(is_ours(m.group(1), m.group(2), prefixes, obj) for m in frames)
            p["plugin_seen"] = p["plugin_seen"] or mine
            for line in b:
                if line.startswith("Parent PID:"):
                    p["ppid"] = line.split(":", 1)[1].strip()
                m = SUMMARY_LEAK.match(line)
                if m:
                    p[LEAK_KIND[m.group(1)]] = [num(m.group(2)), num(m.group(3))]
                m = ERROR_SUMMARY.match(line)
                if m:
                    p["errors"] = num(m.group(1))
                    p["finished"] = True
            m = LEAK.match(head)
            if m:
                kind = LEAK_KIND[m.group(5)]
                direct = num(m.group(2)) if m.group(2) else num(m.group(1))
                if mine:
                    acc = p[kind + "_ours"]
                    acc[0] += direct
                    acc[1] += num(m.group(4))
                    if kind in ("definite", "indirect"):
                        reports.append((p["pid"], b))
                continue
            for cat, rx in KINDS:
                if rx.match(head):
                    p["contexts"][cat] += 1
                    if mine:
                        p["ours"][cat] += 1
                        reports.append((p["pid"], b))
                    break
        procs.append(p)
    for p in procs:
        if p["pid"] in ctld_pids:
            p["role"] = "slurmctld"
        elif p["ppid"] in ctld_pids:
            p["role"] = "slurmscriptd"
        else:
            p["role"] = "startup fork"
    total = {
        "processes": len(procs),
        "unfinished": [p["pid"] for p in procs if not p["finished"]],
        "contexts": {k: sum(p["contexts"][k] for p in procs) for k in ACCESS},
        "ours": {k: sum(p["ours"][k] for p in procs) for k in ACCESS},
    }
    for k in LEAK_KEYS:
        for key in (k, k + "_ours"):
            total[key] = [sum(p[key][i] for p in procs) for i in (0, 1)]
    # the last slurmctld (the one stopped with SIGTERM): what the plugin still holds at exit
    order = meta.get("ctld_pids", "").split()
    last = [p for p in procs if order and p["pid"] == order[-1]]
    total["last_ctld"] = {k: last[0][k] for k in LEAK_KEYS + [k + "_ours" for k in LEAK_KEYS]} \
        if last else {}
    out = {"run_dir": run_dir, "meta": meta, "total": total, "processes": procs}
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(run_dir, "plugin-reports.txt"), "w") as f:
        for pid, b in reports:
            f.write(f"== pid {pid}\n" + "\n".join(b) + "\n\n")
    print(f"valgrind logs of {len(procs)} processes in {run_dir}")
    print(f"  {'pid':>8} {'role':<13} {'report':<8} {'errors':>6} {'inv r/w/free':>12} "
          f"{'uninit':>6} {'definite B/blk':>15} {'indirect B/blk':>15} {'ours: err':>9} "
          f"{'ours: leak B':>12}")
    for p in procs:
        c, o = p["contexts"], p["ours"]
        print(f"  {p['pid']:>8} {p['role']:<13} {'yes' if p['finished'] else 'MISSING':<8} "
              f"{p['errors']:>6} {c['invalid_read']:>4}/{c['invalid_write']}/{c['invalid_free']:<3} "
              f"{c['uninit']:>6} {p['definite'][0]:>9}/{p['definite'][1]:<5} "
              f"{p['indirect'][0]:>9}/{p['indirect'][1]:<5} {sum(o.values()):>9} "
              f"{p['definite_ours'][0] + p['indirect_ours'][0]:>12}")
    if reports:
        print(f"  {len(reports)} report(s) with a frame of ours: {run_dir}/plugin-reports.txt")
        for pid, b in reports[:5]:
            print("  ---- pid " + pid)
            for line in b:
                print("    " + line)
    if not any(p["plugin_seen"] for p in procs):
        print("  no report has a frame of ours")
    return out


def compare(run_dirs):
    runs = []
    for d in run_dirs:
        with open(os.path.join(d, "summary.json")) as f:
            runs.append(json.load(f))
    runs.sort(key=lambda r: int(r["meta"].get("submissions", "0") or 0))
    hdr = (f"{'submissions':>11} {'accepted':>8} {'refused':>7} {'evals logged':>12} "
           f"{'reconf':>6} {'drained':>7} {'minutes':>7} {'errors ours/all':>15} "
           f"{'definite ours':>13} {'definite all B/blk':>18} {'indirect ours':>13} "
           f"{'indirect all B/blk':>18}")
    print(hdr)
    bad = []
    for r in runs:
        m, t = r["meta"], r["total"]
        ours_err = sum(t["ours"].values())
        all_err = sum(t["contexts"].values())
        print(f"{m.get('submissions', '?'):>11} {m.get('accepted', '?'):>8} "
              f"{m.get('refused', '?'):>7} {m.get('eval_lines', '?'):>12} "
              f"{m.get('reconfigured', '?'):>6} {m.get('drained', '?'):>7} "
              f"{m.get('minutes', '?'):>7} {ours_err:>7}/{all_err:<7} "
              f"{t['definite_ours'][0]:>13} {t['definite'][0]:>10}/{t['definite'][1]:<7} "
              f"{t['indirect_ours'][0]:>13} {t['indirect'][0]:>10}/{t['indirect'][1]:<7}")
        if ours_err:
            bad.append(f"{m.get('submissions')} submissions: {ours_err} error context(s) with a "
                       f"frame of ours ({r['run_dir']}/plugin-reports.txt)")
        if m.get("reconfigured") != "yes":
            bad.append(f"{m.get('submissions')} submissions: the reconfigure was not verified")
        missing = [p["pid"] for p in r["processes"] if p["role"] == "slurmctld"
                   and not p["finished"]]
        if missing:
            bad.append(f"{m.get('submissions')} submissions: no final valgrind report for "
                       f"slurmctld pid {' '.join(missing)}")
    for a, b in zip(runs, runs[1:]):
        la = a["total"]["definite_ours"][0] + a["total"]["indirect_ours"][0]
        lb = b["total"]["definite_ours"][0] + b["total"]["indirect_ours"][0]
        if lb > la:
            bad.append(f"leaks with a frame of ours grow: {la} B at "
                       f"{a['meta'].get('submissions')} submissions, {lb} B at "
                       f"{b['meta'].get('submissions')}")
        for k in ("possible", "reachable"):
            xa = a["total"]["last_ctld"].get(k + "_ours", [0, 0])
            xb = b["total"]["last_ctld"].get(k + "_ours", [0, 0])
            ya = a["total"]["last_ctld"].get(k, [0, 0])
            yb = b["total"]["last_ctld"].get(k, [0, 0])
            if xa[0] or xb[0]:
                print(f"{k} blocks in the last slurmctld at exit, {a['meta'].get('submissions')}"
                      f" -> {b['meta'].get('submissions')} submissions: with a frame of ours "
                      f"{xa[0]} B/{xa[1]} -> {xb[0]} B/{xb[1]}, all {ya[0]} B/{ya[1]} -> "
                      f"{yb[0]} B/{yb[1]}; job records in memory at stop "
                      f"{a['meta'].get('job_records_at_stop', '?')} -> "
                      f"{b['meta'].get('job_records_at_stop', '?')} (informational)")
        ta, tb = a["total"]["definite"][0], b["total"]["definite"][0]
        print(f"all definite leaks, {a['meta'].get('submissions')} -> "
              f"{b['meta'].get('submissions')} submissions: {ta} -> {tb} B (all processes; "
              f"informational)")
    if bad:
        print("FAIL:")
        for b in bad:
            print("  " + b)
        return 1
    print("PASS: no invalid access, uninitialised use or crash with a frame of ours, and no "
          "leak with a frame of ours that grows with the submissions")
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "run":
        run_dir, prefixes, obj, rest = argv[1], [], "topology_nvl72.so", argv[2:]
        while rest:
            opt = rest.pop(0)
            if opt == "--ours" and rest:
                prefixes.append(rest.pop(0))
            elif opt == "--obj" and rest:
                obj = rest.pop(0)
            else:
                sys.exit(f"valgrind-summary.py: unknown argument {opt}")
        summarize(run_dir, prefixes, obj)
        return 0
    if len(argv) >= 2 and argv[0] == "compare":
        return compare(argv[1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
