#!/usr/bin/env python3
"""Every simulator figure that README.md and docs/results.md publish, made by the landed code.

    bash scripts/figures.sh            # run the simulator, rewrite every figure block, stamped
    bash scripts/figures.sh --check    # run it again, fail when a block differs (the test command)

A figure block in a markdown file is the text between `<!-- figures:NAME -->` and
`<!-- /figures:NAME -->`; its last line is the stamp (the command, the commit whose code made
it, the date). The simulator is deterministic (seeded, no clock), so the check compares each
block's body byte for byte with what this commit prints; the stamp is not compared.

Differences are judged against each policy's own measured error (the calibration shipped
with the simulator, EASY backfill as `simulate` runs): two policies are a tie unless they are
further apart than the larger of their two bands. Goodput is not yet calibrated on its own:
the usable-occupancy band stands in for it (docs/results.md, claim 3).
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
NVL72 = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "release" / "nvl72"
OUT = REPO / "target" / "figures"
SEEDS = (1, 2, 3)
LAMBDAS = ("0", "0.05")
MODELS = ("low", "default", "high")
POLICIES = ("nvl72", "block", "naive")
# The documented workloads, in the order the tables list them, with their names there.
ORDER = (
    ("syn", "synthetic NVL72 mix, 278 racks"),
    ("seg", "segmented mix (`--segment` on large jobs)"),
    ("phi", "Philly trace, 8 racks"),
    ("ph4", "Philly ×4 (jobs four times larger), 32 racks"),
    ("llm", "LLM-era sample (Acme/Kalos), 16 racks"),
)
FILES = (REPO / "README.md", REPO / "docs" / "results.md")
# The preemption workloads (issue 52; crates/sim/src/workload/tiers.rs), defined here and not
# in scripts/workloads.sh, which scripts/same-decisions.sh also runs with builds from before
# tiers: the synthetic mix whose whole-rack and multi-rack jobs are the high tier, and the
# Philly trace at load 1.2 whose jobs of 32 GPUs or more are.
PREEMPTION = (
    ("synthetic mix, 32 racks, jobs of 18+ trays high tier",
     ["--workload", "synthetic", "--racks", "32", "--jobs", "2000", "--high-tier-from", "18"]),
    ("Philly trace at load 1.2, 12 racks, jobs of 8+ trays high tier",
     ["--workload", "philly", "--load", "1.2", "--high-tier-from", "8"]),
)
PREEMPTION_POLICIES = ("nvl72", "nvl72-slurm-order", "block", "naive")


def workloads():
    """name -> `nvl72 simulate` arguments, from scripts/workloads.sh (one copy of each)."""
    text = (REPO / "scripts" / "workloads.sh").read_text()
    return {m[1]: m[2].split() for m in re.finditer(r'^\s*\[(\w+)\]="([^"]*)"', text, re.M)}


def simulate(args, path):
    """One `nvl72 simulate` run and its JSON report (kept in target/figures)."""
    subprocess.run([str(NVL72), "simulate", *args, "--no-timing", "--quiet", "--json", str(path)],
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(path.read_text())


def breakeven(args):
    """x* against block and naive from `nvl72 breakeven`: {policy: its words}."""
    out = subprocess.run([str(NVL72), "breakeven", *args], check=True, capture_output=True,
                         text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"- against (\w+): (.*?) \(first-order", line)
        if m:
            words = m[2]
            if words.startswith("none needed"):
                words = "none needed"
            elif words.startswith("x* > "):
                words = "above " + words[len("x* > "):].split(":")[0]
            found[m[1]] = words.replace("x* = ", "")
    return found


def mean(reports, policy, key):
    values = [p[key] for r in reports for p in r["policies"]
              if p["policy"] == policy and p.get(key) is not None]
    return sum(values) / len(values) if values else float("nan")


def bands():
    """Each policy's mean absolute error in points, per (figure, with failures)."""
    cal = json.loads((REPO / "crates" / "sim" / "src" / "studies" / "calibration-easy.json").read_text())
    out = {}
    for figure, prefix in (("occupancy", ""), ("usable", "usable_"), ("goodput", "goodput_")):
        for failures, group in ((False, "without_failures"), (True, "with_failures")):
            g = cal.get(prefix + group)
            if not g or not g["replays"]:
                continue
            out[figure, failures] = {p["policy"]: p["mean_abs"] for p in g["per_plugin"]}
            out[figure, failures]["all"] = g["mean_abs"]
            out[figure, failures]["replays"] = g["replays"]
    return out, cal["date"]


def goodput_band(band, failures):
    """Goodput's own band where replays measured it, else usable occupancy's, and whose."""
    for figure in ("goodput", "usable", "occupancy"):
        if (figure, failures) in band:
            return band[figure, failures], figure
    sys.exit("figures.py: the shipped calibration has no band")


def judge(ours, theirs, band):
    """`lead`, `tie` or `behind`, and the difference in points."""
    d = (ours - theirs) * 100
    return ("tie" if abs(d) <= band else "lead" if d > 0 else "behind"), d


def runs(w):
    """Every simulate run the tables need: (workload, lambda, model, seed) -> report."""
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, _ in ORDER:
            for lam in LAMBDAS:
                for model in MODELS:
                    for seed in SEEDS:
                        args = [*w[name], "--lambda", lam, "--slowdown", model, "--seed", str(seed)]
                        path = OUT / f"{name}-{lam}-{model}-{seed}.json"
                        jobs[name, lam, model, seed] = pool.submit(simulate, args, path)
        return {k: f.result() for k, f in jobs.items()}


def goodput_tables(reports, band):
    """The README's headline table and results.md's table per workload × failures × model."""
    readme = ["| Goodput while jobs wait (default model, checkpoints every 30 min) | trays failed | nvl72 | nvl72 vs no topology plugin | nvl72 vs topology/block |",
              "|---|---|---|---|---|"]
    full = ["| workload | trays failed | model | nvl72 | block | naive | band nvl72 / block / naive (points) | nvl72 vs block | nvl72 vs naive | work lost GPU-h nvl72 / block / naive |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    counts = {"lead": 0, "tie": 0, "behind": 0}
    for name, label in ORDER:
        for lam in LAMBDAS:
            failures = lam != "0"
            b, _ = goodput_band(band, failures)
            for model in MODELS:
                reps = [reports[name, lam, model, s] for s in SEEDS]
                g = {p: mean(reps, p, "goodput_while_waiting") for p in POLICIES}
                lost = {p: sum(q["lost_work"]["failure_gpu_hours"] + q["lost_work"]["limit_gpu_hours"]
                               + q["lost_work"]["preemption_gpu_hours"]
                               for r in reps for q in r["policies"] if q["policy"] == p) / len(reps)
                        for p in POLICIES}
                cells = []
                for other in ("block", "naive"):
                    verdict, d = judge(g["nvl72"], g[other], max(b["nvl72"], b[other]))
                    cells.append(f"{verdict} ({d:+.1f})")
                    if other == "block":
                        counts[verdict] += 1
                full.append(
                    f"| {label} | {'5%' if failures else '0'} | {model} | {g['nvl72'] * 100:.1f}% | "
                    f"{g['block'] * 100:.1f}% | {g['naive'] * 100:.1f}% | "
                    f"±{b['nvl72']:.1f} / ±{b['block']:.1f} / ±{b['naive']:.1f} | {cells[0]} | {cells[1]} | "
                    f"{lost['nvl72']:,.0f} / {lost['block']:,.0f} / {lost['naive']:,.0f} |")
                if model == "default":
                    rel = []
                    for other in ("naive", "block"):
                        verdict, _ = judge(g["nvl72"], g[other], max(b["nvl72"], b[other]))
                        pct = (g["nvl72"] / g[other] - 1) * 100
                        rel.append({"lead": f"**{pct:+.1f}%**", "tie": f"tie ({pct:+.1f}%)",
                                    "behind": f"**{pct:+.1f}%** (behind)"}[verdict])
                    readme.append(f"| {label} | {'5%' if failures else 'none'} | {g['nvl72'] * 100:.1f}% | {rel[0]} | {rel[1]} |")
    total = sum(counts.values())
    full.append("")
    full.append(f"nvl72 against topology/block: lead beyond the band in {counts['lead']} of {total} rows, "
                f"tie in {counts['tie']}, behind in {counts['behind']}.")
    return readme, full


def preemption_table(band):
    """Per preemption workload and policy, means of seeds 1-3: preemptions, jobs preempted,
    GPU-hours lost per preemption (with the seeds' range), high-tier waits, goodput and its
    band (nvl72-slurm-order is the engine: nvl72's band)."""
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for i, (_, args) in enumerate(PREEMPTION):
            for seed in SEEDS:
                path = OUT / f"preemption-{i}-{seed}.json"
                jobs[i, seed] = pool.submit(
                    simulate, [*args, "--policies", ",".join(PREEMPTION_POLICIES), "--seed", str(seed)], path)
    b, _ = goodput_band(band, False)
    rows = ["| workload | policy | preemptions | jobs preempted | GPU-h lost per preemption (seeds' range) | high-tier wait h, mean / p95 | goodput while waiting | band (points) |",
            "|---|---|---|---|---|---|---|---|"]
    for i, (label, _) in enumerate(PREEMPTION):
        reps = [jobs[i, s].result() for s in SEEDS]
        for policy in PREEMPTION_POLICIES:
            pre = [q["preemption"] for r in reps for q in r["policies"] if q["policy"] == policy]
            avg = lambda key: sum(p[key] for p in pre) / len(pre)
            lost = [p["lost_gpu_hours_per_preemption"] for p in pre]
            g = mean(reps, policy, "goodput_while_waiting")
            own = b["nvl72" if policy.startswith("nvl72") else policy]
            rows.append(f"| {label} | {policy} | {avg('preemptions'):.0f} | {avg('jobs_preempted'):.0f} | "
                        f"{avg('lost_gpu_hours_per_preemption'):.1f} ({min(lost):.1f}-{max(lost):.1f}) | "
                        f"{avg('high_tier_wait_mean_h'):.2f} / {avg('high_tier_wait_p95_h'):.2f} | "
                        f"{g * 100:.1f}% | ±{own:.1f} |")
    rows.append("")
    rows.append("The goodput band is the calibration's for placement (usable occupancy's where goodput has "
                "none of its own, no failures): no replay has preempted a job yet, so preemption's losses "
                "and waits are modelled, not calibrated against the lab, and have no band; the seeds' "
                "range is their only measure of spread.")
    return rows


def breakeven_table(w):
    rows = ["| workload | trays failed | x* vs naive: avoidable splits | every split | x* vs block: avoidable splits | every split |",
            "|---|---|---|---|---|---|"]
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name, _ in ORDER:
            for lam in LAMBDAS:
                for splits in ("avoidable", "every"):
                    args = [*w[name], "--lambda", lam, "--seed", "1", "--splits", splits]
                    jobs[name, lam, splits] = pool.submit(breakeven, args)
    for name, label in ORDER:
        for lam in LAMBDAS:
            a, e = jobs[name, lam, "avoidable"].result(), jobs[name, lam, "every"].result()
            rows.append(f"| {label} | {'5%' if lam != '0' else '0'} | {a['naive']} | {e['naive']} | "
                        f"{a['block']} | {e['block']} |")
    return rows


def bands_table(band, date):
    rows = ["| error of the prediction, points (mean absolute), EASY backfill model | failures | replays | nvl72 | block | naive | all |",
            "|---|---|---|---|---|---|---|"]
    for figure, words in (("occupancy", "occupancy while jobs wait"),
                          ("usable", "usable occupancy while jobs wait (jobs sleep their slowed time)"),
                          ("goodput", "goodput while jobs wait (requeued jobs resume from their checkpoints)")):
        for failures in (False, True):
            if (figure, failures) not in band:
                continue
            b = band[figure, failures]
            rows.append(f"| {words} | {'with' if failures else 'without'} | {b['replays']} | "
                        f"±{b['nvl72']:.1f} | ±{b['block']:.1f} | ±{b['naive']:.1f} | ±{b['all']:.1f} |")
    rows.append("")
    stand_ins = [f"{'with' if f else 'without'} failures" for f in (False, True)
                 if goodput_band(band, f)[1] != "goodput"]
    note = f"; goodput has no band of its own {' or '.join(stand_ins)} yet: usable occupancy's stands in" if stand_ins else ""
    rows.append(f"(calibration of {date}{note}.)")
    ranking = []
    for name, model in (("calibration-easy.json", "EASY"), ("calibration.json", "Slurm's own backfill model")):
        cal = json.loads((REPO / "crates" / "sim" / "src" / "studies" / name).read_text())
        ranking.append(f"{cal['ranking_held']} of {cal['ranked']} ({model})")
    rows.append("")
    rows.append("The ranking of the three plugins held in " + " and ".join(ranking)
                + " of the replays where the real runs differ by more than their run-to-run spread.")
    return rows


def recommend_table(w):
    """`nvl72 simulate --recommend` on the workloads where nvl72's defaults lose or tie:
    the candidate settings' goodput and the recommendation, seed 1, no failures."""
    rows = []
    labels = dict(ORDER)
    for name, model in (("ph4", "default"), ("llm", "default"), ("syn", "high"), ("llm", "high")):
        report = OUT / f"recommend-{name}-{model}.json"
        out = subprocess.run([str(NVL72), "simulate", *w[name], "--slowdown", model, "--seed", "1",
                              "--no-timing", "--quiet", "--recommend", "--json", str(report)],
                             check=True, capture_output=True, text=True).stdout
        tried = out.split("[policy] settings tried on this workload", 1)[1].split("\n", 1)[1].strip("\n")
        others = {p["policy"]: p["goodput_while_waiting"] for p in json.loads(report.read_text())["policies"]}
        rows += [f"**{labels[name]}**, no failures, {model} model:", "", tried, "",
                 f"The same jobs under topology/block: {100 * others['block']:.2f}% goodput while waiting; "
                 f"without a topology plugin: {100 * others['naive']:.2f}%.", ""]
    return rows[:-1]


BLOCK = re.compile(r"(<!-- figures:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.S)


def stamp(note):
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"
    return (f"\n<sub>Made by `bash scripts/figures.sh` at commit {head}, "
            f"{datetime.date.today().isoformat()}{note}.</sub>\n")


def without_stamp(body):
    return "\n".join(line for line in body.splitlines() if not line.startswith("<sub>Made by")).strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when a published block differs")
    a = ap.parse_args()
    inputs = ["crates", "data", "scripts/workloads.sh"]
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", *inputs],
                           capture_output=True, text=True).stdout
    if dirty and not a.check:
        sys.exit("figures.py: a stamp names the commit whose code made the figures; commit these first:\n"
                 + dirty)
    OUT.mkdir(parents=True, exist_ok=True)
    w = workloads()
    missing = [n for n, _ in ORDER if n not in w]
    if missing:
        sys.exit(f"figures.py: scripts/workloads.sh defines no {', '.join(missing)}")
    band, date = bands()
    readme, full = goodput_tables(runs(w), band)
    means = f"; seeds {', '.join(map(str, SEEDS))} (means)"
    blocks = {
        "readme-goodput": (readme, means),
        "results-goodput": (full, means),
        "results-breakeven": (breakeven_table(w), "; seed 1"),
        "results-bands": (bands_table(band, date), ""),
        "results-recommend": (recommend_table(w), "; seed 1"),
        "results-preemption": (preemption_table(band), means),
    }
    seen, stale = set(), []
    for path in FILES:
        text = path.read_text()

        def fill(m):
            name = m["name"]
            if name not in blocks:
                sys.exit(f"figures.py: {path.relative_to(REPO)}: no figure named {name}")
            seen.add(name)
            lines, note = blocks[name]
            body = "\n".join(lines) + "\n"
            if without_stamp(m["body"]) == without_stamp(body):
                return m[0]  # unchanged: keeps the stamp of the commit that made it
            stale.append(f"{path.relative_to(REPO)}: {name}")
            return m[1] + body + stamp(note) + m[4]

        new = BLOCK.sub(fill, text)
        if not a.check and new != text:
            path.write_text(new)
    unused = sorted(set(blocks) - seen)
    if unused:
        sys.exit(f"figures.py: no file has a block for {', '.join(unused)}")
    if a.check:
        if stale:
            print("figures differ from what this commit prints (run bash scripts/figures.sh):")
            for s in stale:
                print(f"  {s}")
            sys.exit(1)
        print(f"figures: {len(seen)} blocks match what this commit prints")
    else:
        print(f"figures: {len(seen)} blocks written ({len(stale)} changed)")


if __name__ == "__main__":
    main()
