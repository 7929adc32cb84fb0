#!/usr/bin/env bash
# Every simulator figure in README.md and docs/results.md from the landed code, stamped with
# the commit that made it (scripts/figures.py says how); --check fails when a published block
# differs from what this commit prints (the test command runs it). About 3 minutes on 2 cores.
#
#   bash scripts/figures.sh            # rewrite the blocks that changed
#   bash scripts/figures.sh --check    # compare only
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin nvl72 >&2
exec python3 scripts/figures.py "$@"
