#!/usr/bin/env python3
"""valgrind-summary.py: summarise valgrind text logs of one storm run, or compare runs.

  valgrind-summary.py run RUN_DIR --ours PREFIX... [--obj NAME] [--explained FILE]
      Reads RUN_DIR/vg.<pid>.log (valgrind --log-file=vg.%p.log, text mode) and RUN_DIR/meta.txt
      (key=value lines written by valgrind-storm.sh), writes RUN_DIR/summary.json and
      RUN_DIR/plugin-reports.txt (every report with a frame of ours, in full), prints a summary.
      memcheck (meta tool=memcheck, or no tool): invalid accesses, uninitialised uses, crashes,
      leaks.  helgrind and drd (tool=helgrind|drd): race and lock reports (possible data races,
      lock order, misuse of the pthread API), each classified as ours or Slurm's; Slurm's go
      to RUN_DIR/slurm-reports.txt in full and are counted by kind and top function.  Ours
      that FILE explains (read_explained) are marked so, and compare does not fail on them.
  valgrind-summary.py compare RUN_DIR...
      Prints one table row per run (from summary.json) and exits 1 when a run has an invalid
      access, uninitialised use or crash with a frame of ours, or when the leaks with a frame
      of ours grow with the number of submissions (memcheck), or when a race or lock report
      has a frame of ours that is not explained (helgrind, drd); 0 otherwise.
  valgrind-summary.py selftest
      Checks the parsing on small memcheck, helgrind and DRD logs.

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

# helgrind and DRD: (category, headline pattern); first match wins.  A helgrind report runs
# from one separator line ("-----...", before which it may announce the locks involved) to the
# next; a DRD report is the block of its headline and any that follow without a headline.
RACE_KINDS = [
    ("race", re.compile(r"^(Possible data race during (read|write) of size"
                        r"|Conflicting (load|store) by thread)")),
    ("lock_order", re.compile(r"^Thread #\d+.*: lock order .* violated")),
    # helgrind's other pthread API errors ("Thread #3 unlocked a not-locked lock", "Thread
    # #1's call to pthread_mutex_destroy failed", "Thread #2: pthread_cond_signal: dubious",
    # "Thread #4: Exiting thread still holds 1 lock", "Thread #1: Bug in libpthread") and DRD's
    ("lock_misuse", re.compile(
        r"^(Thread #\d+(?: [^:']*)?(?:: |'s call to | unlocked )"
        r"|Mutex not locked|The object at address .* is not a|Destroying locked"
        r"|Recursive locking not allowed|Probably a race condition|Reader-writer lock not locked"
        r"|(Mutex|Semaphore|Condition variable|Barrier|Reader-writer lock) reinitialization"
        r"|Attempt to |Invalid (mutex|semaphore|condition|barrier|rwlock))")),
    ("crash", re.compile(r"^Process terminating with default action of signal")),
]
RACE = [k for k, _ in RACE_KINDS]
SEPARATOR = re.compile(r"^-{10,}$|^---Thread-Announcement-*$")
# lines after which valgrind prints no more of a report
TRAILER = re.compile(r"^(ERROR SUMMARY:|For (lists|counts) of detected|Use --history-level|"
                     r"HEAP SUMMARY:|LEAK SUMMARY:)")
RACE_SUMMARY = re.compile(r"^ERROR SUMMARY: ([\d,]+) errors from ([\d,]+) contexts"
                          r"(?: \(suppressed: ([\d,]+) from ([\d,]+)\))?")
# where a report's other stacks begin: the conflicting access, the allocation of the block,
# a lock's first use, the orders of a lock order report
SECTION = [
    ("access", re.compile(r"^\s*Observed \(incorrect\) order|"
                          + "|".join(rx.pattern[1:] for _, rx in RACE_KINDS))),
    ("conflict", re.compile(r"^\s*(This conflicts with|Other segment (start|end))")),
    ("alloc", re.compile(r"^\s*(Block was alloc'd|Address 0x[0-9A-Fa-f]+ is .*"
                         r"(Allocation context|alloc'd|malloc'd))")),
    ("lock", re.compile(r"^\s*(.* was first observed|Acquired at:|followed by a later acquisition|"
                        r"Required order was established)")),
]
# valgrind's own wrappers around the pthread calls: not the caller's code
PRELOAD = re.compile(r"vgpreload_|hg_intercepts\.c|drd_pthread_intercepts\.c|"
                     r"vg_replace_strmem\.c|vg_replace_malloc\.c")


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
    if "topology_nvl72::" in fn or "nvl72_engine::" in fn:
        return True  # a Rust path of the plugin or its engine, whatever the source paths were
    if not loc:
        return False
    if loc.startswith("in "):
        return loc[3:].endswith(obj)
    path = loc.rsplit(":", 1)[0]
    return any(path.startswith(p) for p in prefixes)


def race_reports(blocks):
    """helgrind/DRD reports of one process: (kind, lines), plus the ERROR SUMMARY figures."""
    reports, cur, pre, summary = [], None, [], None
    for b in blocks:
        while len(b) > 1 and THREAD.match(b[0]):
            b = b[1:]  # DRD's "Thread 3:" before a report of another thread
        head = b[0]
        if SEPARATOR.match(head):
            cur, pre = None, []
            continue
        if TRAILER.match(head):
            cur, pre = None, []
            for line in b:
                m = RACE_SUMMARY.match(line)
                if m:
                    summary = [num(g) if g else 0 for g in m.groups()]
            continue
        kind = next((k for k, rx in RACE_KINDS if rx.match(head)), None)
        if kind:
            cur = (kind, pre + b)
            reports.append(cur)
            pre = []
        elif cur:
            cur[1].extend([""] + b)
        else:
            pre.extend(b + [""])  # helgrind's lock announcements, before the headline
    return reports, summary


def frames_of(lines):
    """(section, function, location) of every frame: "access" for the stack of the headline (of
    the observed order, for a lock order report), else the last SECTION line above it."""
    out, section = [], "access"
    for line in lines:
        for name, rx in SECTION:
            if rx.match(line):
                section = name
        m = FRAME.match(line)
        if m:
            out.append((section, m.group(1), m.group(2) or ""))
    return out


def top_function(frames, section="access"):
    """The first frame of a section's stack outside valgrind's wrappers: "fn (object)" or, with
    debug info, "fn (file:line)"."""
    for sec, fn, loc in frames:
        if sec == section and not PRELOAD.search(loc):
            where = loc[3:] if loc.startswith("in ") else loc
            return f"{fn} ({os.path.basename(where)})"
    return "?"


def read_explained(path):
    """Explained reports of ours: lines "name<TAB>access regex<TAB>conflict regex", each regex
    searched in the top function of that stack ("fn (file:line)"); # starts a comment."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].rstrip()
            if line:
                name, access, conflict = line.split("\t")
                out.append((name, re.compile(access), re.compile(conflict)))
    return out


def summarize_races(run_dir, prefixes, obj, meta, explained=()):
    ctld_pids = set(meta.get("ctld_pids", "").split())
    procs, ours, slurms = [], [], []
    logs = sorted(f for f in os.listdir(run_dir) if re.fullmatch(r"vg\.\d+\.log", f))
    for name in logs:
        pid, blocks = parse_log(os.path.join(run_dir, name))
        p = {"pid": pid or name.split(".")[1], "ppid": None, "finished": False,
             "contexts": {k: 0 for k in RACE}, "ours": {k: 0 for k in RACE},
             "explained": {k: 0 for k in RACE}, "errors": 0, "suppressed": 0,
             "plugin_seen": False, "truncated": False}
        for b in blocks:
            for line in b:
                if line.startswith("Parent PID:"):
                    p["ppid"] = line.split(":", 1)[1].strip()
                if "I'm not reporting any more" in line:
                    p["truncated"] = True  # valgrind's error limit: later reports are missing
        reports, summary = race_reports(blocks)
        if summary:
            p["finished"] = True
            p["errors"], p["suppressed"] = summary[0], summary[2]
        for kind, lines in reports:
            frames = frames_of(lines)
            where = sorted({sec for sec, fn, loc in frames if is_ours(fn, loc, prefixes, obj)})
            rec = {"pid": p["pid"], "kind": kind, "headline": next(
                (line for line in lines if any(rx.match(line) for _, rx in RACE_KINDS)), lines[0]),
                "top": top_function(frames), "conflict": top_function(frames, "conflict"),
                "ours_in": where, "lines": lines, "explained": None}
            p["contexts"][kind] += 1
            if where:
                p["ours"][kind] += 1
                p["plugin_seen"] = True
                rec["explained"] = next((n for n, a, c in explained
                                         if a.search(rec["top"]) and c.search(rec["conflict"])),
                                        None)
                if rec["explained"]:
                    p["explained"][kind] += 1
                ours.append(rec)
            else:
                slurms.append(rec)
        procs.append(p)
    name_roles(procs, ctld_pids)
    by_top = {}
    for r in slurms:
        key = f"{r['kind']}\t{r['top']}"
        by_top[key] = by_top.get(key, 0) + 1
    total = {
        "processes": len(procs),
        "unfinished": [p["pid"] for p in procs if not p["finished"]],
        "truncated": [p["pid"] for p in procs if p["truncated"]],
        "contexts": {k: sum(p["contexts"][k] for p in procs) for k in RACE},
        "ours": {k: sum(p["ours"][k] for p in procs) for k in RACE},
        "explained": {k: sum(p["explained"][k] for p in procs) for k in RACE},
        "errors": sum(p["errors"] for p in procs),
        "suppressed": sum(p["suppressed"] for p in procs),
        "slurm_by_top": sorted(([k.split("\t")[0], k.split("\t")[1], n]
                                for k, n in by_top.items()), key=lambda x: (-x[2], x[0], x[1])),
        "ours_reports": [{k: r[k] for k in ("pid", "kind", "headline", "top", "conflict",
                                            "ours_in", "explained")} for r in ours],
    }
    out = {"run_dir": run_dir, "meta": meta, "tool": meta.get("tool"), "total": total,
           "processes": procs}
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump(out, f, indent=1)
    for fname, recs in (("plugin-reports.txt", ours), ("slurm-reports.txt", slurms)):
        with open(os.path.join(run_dir, fname), "w") as f:
            for r in recs:
                f.write(f"== pid {r['pid']} {r['kind']}; top: {r['top']}; conflicting: "
                        f"{r['conflict']}; frames of ours in: {', '.join(r['ours_in']) or '-'}"
                        f"; explained: {r['explained'] or '-'}\n" + "\n".join(r["lines"])
                        + "\n\n")
    print(f"{meta.get('tool')} logs of {len(procs)} processes in {run_dir}")
    print(f"  {'pid':>8} {'role':<13} {'report':<8} {'errors':>6} {'suppr':>6} "
          + " ".join(f"{k + ' ours/all':>20}" for k in RACE))
    for p in procs:
        print(f"  {p['pid']:>8} {p['role']:<13} {'yes' if p['finished'] else 'MISSING':<8} "
              f"{p['errors']:>6} {p['suppressed']:>6} "
              + " ".join(f"{str(p['ours'][k]) + '/' + str(p['contexts'][k]):>20}" for k in RACE))
    if total["slurm_by_top"]:
        print(f"  Slurm's own reports ({len(slurms)}; in full: {run_dir}/slurm-reports.txt), "
              "by kind and top function:")
        for kind, top, n in total["slurm_by_top"][:25]:
            print(f"    {n:>5}  {kind:<12} {top}")
    if ours:
        print(f"  {len(ours)} report(s) with a frame of ours: {run_dir}/plugin-reports.txt")
        for r in ours:
            print(f"    pid {r['pid']} {r['kind']}: {r['headline']}; top {r['top']}; "
                  f"conflicting {r['conflict']}; ours in {', '.join(r['ours_in'])}; explained: "
                  f"{r['explained'] or 'NO'}")
    else:
        print("  no race or lock report has a frame of ours")
    return out


def summarize(run_dir, prefixes, obj, explained=()):
    meta = read_meta(run_dir)
    if meta.get("tool", "memcheck") != "memcheck":
        return summarize_races(run_dir, prefixes, obj, meta, explained)
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
    name_roles(procs, ctld_pids)
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


def compare_races(runs):
    print(f"{'tool':>8} {'submissions':>11} {'accepted':>8} {'refused':>7} {'evals logged':>12} "
          f"{'RPC reads ok/fail':>17} {'reconf':>6} {'drained':>7} {'minutes':>7} "
          + " ".join(f"{k + ' ours/all':>20}" for k in RACE) + f" {'explained':>9} {'suppressed':>10}")
    bad = []
    for r in runs:
        m, t = r["meta"], r["total"]
        print(f"{m.get('tool', '?'):>8} {m.get('submissions', '?'):>11} {m.get('accepted', '?'):>8} "
              f"{m.get('refused', '?'):>7} {m.get('eval_lines', '?'):>12} "
              f"{m.get('reads_ok', '?') + '/' + m.get('reads_fail', '?'):>17} "
              f"{m.get('reconfigured', '?'):>6} {m.get('drained', '?'):>7} {m.get('minutes', '?'):>7} "
              + " ".join(f"{str(t['ours'][k]) + '/' + str(t['contexts'][k]):>20}" for k in RACE)
              + f" {sum(t['explained'].values()):>9} {t.get('suppressed', 0):>10}")
        ours = sum(t["ours"].values()) - sum(t["explained"].values())
        if ours:
            bad.append(f"{m.get('submissions')} submissions: {ours} race or lock report(s) with a "
                       f"frame of ours not explained ({r['run_dir']}/plugin-reports.txt)")
        bad.extend(run_complete(r))
        if t.get("truncated"):
            bad.append(f"{m.get('submissions')} submissions: valgrind stopped reporting (error "
                       f"limit) in pid {' '.join(t['truncated'])}; run with --error-limit=no")
    if bad:
        print("FAIL:")
        for b in bad:
            print("  " + b)
        return 1
    print("PASS: no race or lock report with a frame of ours that is not explained")
    return 0


def name_roles(procs, ctld_pids):
    """Each valgrind process's role: slurmctld itself, its slurmscriptd, or a fork at startup."""
    for p in procs:
        if p["pid"] in ctld_pids:
            p["role"] = "slurmctld"
        elif p["ppid"] in ctld_pids:
            p["role"] = "slurmscriptd"
        else:
            p["role"] = "startup fork"


def run_complete(r):
    """What makes a run incomplete, whatever the tool: the reconfigure not verified, or a
    slurmctld without valgrind's final report."""
    m, bad = r["meta"], []
    if m.get("reconfigured") != "yes":
        bad.append(f"{m.get('submissions')} submissions: the reconfigure was not verified")
    missing = [p["pid"] for p in r["processes"] if p["role"] == "slurmctld"
               and not p["finished"]]
    if missing:
        bad.append(f"{m.get('submissions')} submissions: no final valgrind report for "
                   f"slurmctld pid {' '.join(missing)}")
    return bad


def compare(run_dirs):
    runs = []
    for d in run_dirs:
        with open(os.path.join(d, "summary.json")) as f:
            runs.append(json.load(f))
    runs.sort(key=lambda r: int(r["meta"].get("submissions", "0") or 0))
    if any(r.get("tool") not in (None, "memcheck") for r in runs):
        return compare_races(runs)
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
        bad.extend(run_complete(r))
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


# Small logs in valgrind's own formats (helgrind and DRD 3.19 on a toy program, memcheck), with
# one frame moved into the plugin: what selftest() expects of them.
SELFTEST_OURS = "/src/nvl72/"
SELFTEST_LOGS = {
    "helgrind": """==7== Helgrind, a thread error detector
==7== Command: /usr/sbin/slurmctld
==7== Parent PID: 1
==7== 
==7== ---Thread-Announcement------------------------------------------
==7== 
==7== Thread #2 was created
==7==    at 0x496CB3F: clone (clone.S:76)
==7==    by 0x109259: main (/src/nvl72/src/ops.rs:7)
==7== 
==7== ----------------------------------------------------------------
==7== 
==7== Thread #2: lock order "0x10C080 before 0x10C0C0" violated
==7== 
==7== Observed (incorrect) order is: acquisition of lock at 0x10C0C0
==7==    at 0x484976E: ??? (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x1091B3: lock_slurmctld (in /usr/sbin/slurmctld-wlm)
==7== 
==7==  followed by a later acquisition of lock at 0x10C080
==7==    at 0x484976E: ??? (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x1091C2: slurm_mutex_lock (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==7== 
==7==  Lock at 0x10C080 was first observed
==7==    at 0x484976E: ??? (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x10920F: main (in /usr/sbin/slurmctld-wlm)
==7==  Address 0x10c080 is 0 bytes inside data symbol "a"
==7== 
==7== 
==7== ---Thread-Announcement------------------------------------------
==7== 
==7== Thread #1 is the program's root thread
==7== 
==7== ----------------------------------------------------------------
==7== 
==7==  Lock at 0x10C0C0 was first observed
==7==    at 0x484976E: ??? (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x10921E: topology_nvl72::state::current (/src/nvl72/src/state.rs:6)
==7== 
==7== Possible data race during read of size 4 at 0x10C060 by thread #1
==7== Locks held: 1, at address 0x10C0C0
==7==    at 0x10925A: _slurm_rpc_get_topo (in /usr/sbin/slurmctld-wlm)
==7== 
==7== This conflicts with a previous write of size 4 by thread #2
==7== Locks held: none
==7==    at 0x10918E: list_append (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==7==  Address 0x10c060 is 0 bytes inside data symbol "shared"
==7== 
==7== ----------------------------------------------------------------
==7== 
==7== Possible data race during write of size 4 at 0x4A49044 by thread #1
==7== Locks held: none
==7==    at 0x109274: bit_set (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==7== 
==7== This conflicts with a previous write of size 4 by thread #2
==7== Locks held: none
==7==    at 0x10919F: bit_clear (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==7==  Address 0x4a49044 is 4 bytes inside a block of size 16 alloc'd
==7==    at 0x48437F4: malloc (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x1091F9: topology_nvl72::state::resolve (/src/nvl72/src/state.rs:6)
==7==  Block was alloc'd by thread #1
==7== 
==7== ----------------------------------------------------------------
==7== 
==7== Thread #1 unlocked a not-locked lock at 0x10C080
==7==    at 0x4849C86: ??? (in /usr/libexec/valgrind/vgpreload_helgrind-amd64-linux.so)
==7==    by 0x109299: unlock_slurmctld (in /usr/sbin/slurmctld-wlm)
==7== 
==7== 
==7== Use --history-level=approx or =none to gain increased speed, at
==7== the cost of reduced accuracy of conflicting-access information
==7== For lists of detected and suppressed errors, rerun with: -s
==7== ERROR SUMMARY: 9 errors from 4 contexts (suppressed: 3 from 1)
""",
    "drd": """==8== drd, a thread error detector
==8== Command: /usr/sbin/slurmctld
==8== Parent PID: 1
==8== 
==8== Thread 3:
==8== Conflicting load by thread 3 at 0x0010c060 size 4
==8==    at 0x10925A: nvl72_engine::placement::plan (/src/nvl72/crates/engine/src/placement.rs:7)
==8== Allocation context: BSS section of /usr/sbin/slurmctld-wlm
==8== Other segment start (thread 2)
==8==    at 0x498DB42: clone (clone.S:83)
==8== Other segment end (thread 2)
==8==    at 0x4854677: pthread_mutex_lock@* (in /usr/libexec/valgrind/vgpreload_drd-amd64-linux.so)
==8==    by 0x1091B3: lock_slurmctld (in /usr/sbin/slurmctld-wlm)
==8== 
==8== Conflicting store by thread 1 at 0x04a6a034 size 4
==8==    at 0x109274: bit_set (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==8== Address 0x4a6a034 is at offset 4 from 0x4a6a030. Allocation context:
==8==    at 0x48479D4: malloc (in /usr/libexec/valgrind/vgpreload_drd-amd64-linux.so)
==8==    by 0x1091F9: bit_alloc (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==8== Other segment start (thread 2)
==8==    at 0x498DB42: clone (clone.S:83)
==8== 
==8== Mutex not locked by calling thread: mutex 0x10c080, recursion count 0, owner 2.
==8==    at 0x48582D4: pthread_mutex_unlock@* (in /usr/libexec/valgrind/vgpreload_drd-amd64-linux.so)
==8==    by 0x109299: _agent (in /usr/sbin/slurmctld-wlm)
==8== mutex 0x10c080 was first observed at:
==8==    at 0x48545B4: pthread_mutex_lock@* (in /usr/libexec/valgrind/vgpreload_drd-amd64-linux.so)
==8==    by 0x10920F: main (in /usr/sbin/slurmctld-wlm)
==8== 
==8== 
==8== For lists of detected and suppressed errors, rerun with: -s
==8== ERROR SUMMARY: 4 errors from 3 contexts (suppressed: 6 from 4)
""",
    "memcheck": """==9== Memcheck, a memory error detector
==9== Command: /usr/sbin/slurmctld
==9== Parent PID: 1
==9== 
==9== Thread 4:
==9== Invalid read of size 8
==9==    at 0x10925A: topology_nvl72::eval::place (/src/nvl72/src/eval.rs:7)
==9==  Address 0x0 is not stack'd, malloc'd or (recently) free'd
==9== 
==9== 16 bytes in 1 blocks are definitely lost in loss record 1 of 2
==9==    at 0x48437F4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)
==9==    by 0x1091F9: xmalloc (in /usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so)
==9== 
==9== LEAK SUMMARY:
==9==    definitely lost: 16 bytes in 1 blocks
==9==    indirectly lost: 0 bytes in 0 blocks
==9== 
==9== ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)
""",
}


def selftest():
    import contextlib
    import io
    import tempfile
    got = {}
    for tool, log in SELFTEST_LOGS.items():
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "vg.7.log"), "w") as f:
                f.write(log)
            with open(os.path.join(d, "meta.txt"), "w") as f:
                f.write(f"submissions=2\ntool={tool}\nctld_pids=7 8 9\nreconfigured=yes\n")
            explained = [("bit-alloc", re.compile(r"^bit_set "), re.compile(r"^bit_clear "))]
            with contextlib.redirect_stdout(io.StringIO()):
                out = summarize(d, [SELFTEST_OURS], "topology_nvl72.so", explained)
                rc = compare([d])
            got[tool] = (out["total"], rc, open(os.path.join(d, "plugin-reports.txt")).read())
    t, rc, text = got["helgrind"]
    assert t["contexts"] == {"race": 2, "lock_order": 1, "lock_misuse": 1, "crash": 0}, t
    # the first race is ours by the lock announced before it (taken in our code), the second
    # by the allocation of its block; the lock order and the unlock are Slurm's own
    assert t["ours"] == {"race": 2, "lock_order": 0, "lock_misuse": 0, "crash": 0}, t
    assert [r["ours_in"] for r in t["ours_reports"]] == [["lock"], ["alloc"]], t
    assert [r["explained"] for r in t["ours_reports"]] == [None, "bit-alloc"], t
    assert t["ours_reports"][0]["conflict"] == "list_append (libslurmfull.so)", t
    assert t["ours_reports"][0]["top"] == "_slurm_rpc_get_topo (slurmctld-wlm)", t
    assert t["errors"] == 9 and t["suppressed"] == 3 and not t["unfinished"], t
    assert [x[:2] for x in t["slurm_by_top"]] == [
        ["lock_misuse", "unlock_slurmctld (slurmctld-wlm)"],
        ["lock_order", "lock_slurmctld (slurmctld-wlm)"]], t
    assert rc == 1 and "shared" in text and "Block was alloc'd" in text, text
    t, rc, text = got["drd"]
    assert t["contexts"] == {"race": 2, "lock_order": 0, "lock_misuse": 1, "crash": 0}, t
    assert t["ours"] == {"race": 1, "lock_order": 0, "lock_misuse": 0, "crash": 0}, t
    assert t["ours_reports"][0]["ours_in"] == ["access"], t
    assert t["ours_reports"][0]["top"] == "nvl72_engine::placement::plan (placement.rs:7)", t
    assert t["ours_reports"][0]["conflict"] == "clone (clone.S:83)", t
    assert ["lock_misuse", "_agent (slurmctld-wlm)", 1] in t["slurm_by_top"], t
    assert rc == 1 and "Other segment end" in text, text
    t, rc, text = got["memcheck"]
    assert t["contexts"]["invalid_read"] == 1 and t["ours"]["invalid_read"] == 1, t
    assert t["definite"] == [16, 1] and t["definite_ours"] == [0, 0], t
    assert rc == 1 and "Invalid read" in text, text
    print("valgrind-summary.py selftest: ok (memcheck, helgrind, drd)")
    return 0


def main(argv):
    if argv == ["selftest"]:
        return selftest()
    if len(argv) >= 2 and argv[0] == "run":
        run_dir, prefixes, obj, rest = argv[1], [], "topology_nvl72.so", argv[2:]
        explained = []
        while rest:
            opt = rest.pop(0)
            if opt == "--ours" and rest:
                prefixes.append(rest.pop(0))
            elif opt == "--explained" and rest:
                explained = read_explained(rest.pop(0))
            elif opt == "--obj" and rest:
                obj = rest.pop(0)
            else:
                sys.exit(f"valgrind-summary.py: unknown argument {opt}")
        summarize(run_dir, prefixes, obj, explained)
        return 0
    if len(argv) >= 2 and argv[0] == "compare":
        return compare(argv[1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
