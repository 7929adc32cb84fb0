#!/usr/bin/env python3
"""chaos-summary.py: one row of docs/notebook/soak.md's chaos Runs table from the summary files
scripts/chaos.sh writes (target/chaos/summary-<series>-<start>.txt), so the published figures
are what the storms printed, not typed.

  python3 scripts/chaos-summary.py target/chaos/summary-24.11-20261206-145430.txt

Prints the seeds that passed (seed x steps), the operations, the controller faults, Slurm's
state windows and the jobs lost in them, the storms' time, and each violation line.
"""
import datetime
import os
import re
import sys


def parse(line):
    """The fields of one `chaos: Summary { ... }` line."""
    number = lambda key: int(re.search(rf"\b{key}: (\d+)", line).group(1))
    ops = {name: int(count) for name, count in re.findall(r'"([^"]+)": \((\d+), \d+\)', line)}
    return {
        "seed": number("seed"),
        "steps": number("steps"),
        "seconds": number("seconds"),
        "windows": number("slurm_state_windows"),
        "lost": number("lost_by_slurm"),
        "ops": ops,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    storms, violations, spans = [], [], []
    for path in sys.argv[1:]:
        # The run's span: from the start in the file's name to its last write.
        started = re.search(r"(\d{8}-\d{6})\.txt$", path)
        if started:
            start = datetime.datetime.strptime(started.group(1), "%Y%m%d-%H%M%S").replace(
                tzinfo=datetime.timezone.utc)
            end = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
            spans.append(f"{start:%H:%M}-{end:%H:%M} UTC ({(end - start).total_seconds() / 60:.0f} min)")
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.startswith("chaos: Summary"):
                    try:
                        storms.append(parse(line))
                    except AttributeError:
                        sys.exit(f"{path}:{n}: not a storm summary: {line.strip()[:120]}")
                elif "VIOLATION" in line:
                    violations.append(line.strip())
    ops = sum(s["steps"] for s in storms)
    kills = sum(s["ops"].get("kill -9 primary", 0) for s in storms)
    takeovers = sum(s["ops"].get("takeover", 0) for s in storms)
    minutes = sum(s["seconds"] for s in storms) / 60
    seeds = ", ".join(f"{s['seed']}×{s['steps']}" for s in storms)
    print(f"runs: {'; '.join(spans)}")
    print(f"storms passed: {seeds}")
    print(f"operations: {ops:,} in {minutes:.0f} min of storms")
    print(f"controller faults: {kills} kill -9 of the primary, {takeovers} takeovers")
    print(f"Slurm's state windows: {sum(s['windows'] for s in storms)}, "
          f"jobs lost in them: {sum(s['lost'] for s in storms)}")
    print(f"violations: {len(violations)}")
    for v in violations:
        print(f"  {v}")


if __name__ == "__main__":
    main()
