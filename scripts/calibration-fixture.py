#!/usr/bin/env python3
"""Keeps what `nvl72 calibrate` reads of `nvl72 replay --json` reports, for the calibration
set in tests/fixtures/calibration/ (docs/notebook/benchmarks.md, "The calibration set"): the stream,
the simulator settings and the real runs' occupancy, usable occupancy and goodput; the time series and
the other figures are dropped (a report is 10-50 times larger).

    python3 scripts/calibration-fixture.py target/replay/syn-s1-priced.json ... \\
        --to tests/fixtures/calibration/
"""
import argparse
import json
import os
import sys

TOP = ["workload", "sim", "scale", "real_minutes", "jobs_left_out", "tray_events",
       "policies", "fidelity", "slurm_settings", "stream", "date",
       "prefer_piece_multiple"]  # the labs' plugin setting, which the prediction must use
POLICY = ["policy", "label", "occupancy_while_waiting", "usable_occupancy_while_waiting",
          "goodput_while_waiting"]


def fixture(report, path):
    missing = [k for k in ("sim", "stream", "policies", "tray_events", "scale") if k not in report]
    if missing:
        sys.exit(f"{path}: not a replay report with its stream (no {', '.join(missing)})")
    out = {k: report[k] for k in TOP if k in report}
    out["policies"] = [
        {k: p[k] for k in POLICY if p.get(k) is not None}
        for p in report["policies"] if p.get("label")
    ]
    if not out["policies"]:
        sys.exit(f"{path}: no real run in it (a --dry-run report?)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--to", required=True, help="the folder the fixtures go to")
    a = ap.parse_args()
    for path in a.reports:
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"{path}: {e}")
        dest = os.path.join(a.to, os.path.basename(path))
        with open(dest, "w") as f:
            json.dump(fixture(report, path), f, separators=(",", ":"))
        print(f"{path} -> {dest} ({os.path.getsize(dest)} bytes)")


if __name__ == "__main__":
    main()
