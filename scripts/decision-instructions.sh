#!/usr/bin/env bash
# decision-instructions.sh — instructions per engine decision and per view build, counted by
# callgrind (exact and repeatable, unlike wall-clock time on a noisy machine), for one or more
# `nvl72` builds on the same scenarios: `nvl72 bench` at RACKS racks, ROUNDS rounds, with
# collection on inside `nvl72_sim::studies::bench::measure` only (not while the scenarios are built).
#
#   bash scripts/decision-instructions.sh /tmp/nvl72-before target/release/nvl72
#
# Per build it prints instructions per decision (everything `measure` does but build views:
# `placement::plan` and `Plan::placement` as the plugin calls them, and the two clock reads
# around each; 19 requests x ROUNDS x 3 occupancies) and per view build
# (`bench::build_view`, its first, allocating build included; builds from before issue 33
# timed `ClusterView::count_racks` instead, which is what their bench called the per-call
# count); "as before": the view built as the plugin built it before issue 33
# (`bench::fresh_view`), in the builds that time it.
# Env: RACKS [2800], ROUNDS [5].
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 NVL72 [NVL72 ...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
RACKS=${RACKS:-2800}
ROUNDS=${ROUNDS:-5}
for v in RACKS ROUNDS; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a positive number" >&2; exit 2; }; done
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
decisions=$((19 * ROUNDS * 3))
printf '%-40s %14s %16s %16s\n' build "Ir/decision" "Ir/view build" "as before"
for exe in "$@"; do
    exe=$(realpath "$exe")
    out="$OUT/callgrind.$(basename "$exe").$RANDOM"
    valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='nvl72_sim::studies::bench::measure' \
        "$exe" bench --racks "$RACKS" --rounds "$ROUNDS" >/dev/null 2>"$out.log" ||
        { cat "$out.log" >&2; exit 1; }
    # Everything collected (measure, by its toggle), and a function's instructions with
    # what it calls: callgrind_annotate gives one line per source file of a function (code
    # inlined into it from other files), the function's own total being the largest.
    ann=$(callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$out" 2>/dev/null)
    total=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }' <<<"$ann")
    incl() {
        awk -v f="$1" '{ fn = substr($3, index($3, ":") + 1) }
            fn == f { gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 } END { print m + 0 }' <<<"$ann"
    }
    # build_view runs once more per scenario, untimed, to allocate the memory the plugin
    # keeps between calls: that first build is in its count.
    build=$(incl nvl72_sim::studies::bench::build_view) builds=$(((ROUNDS + 1) * 3))
    fresh=$(incl nvl72_sim::studies::bench::fresh_view)
    if [ "$build" = 0 ]; then
        build=$(incl nvl72_engine::model::ClusterView::count_racks) builds=$((ROUNDS * 3))
    fi
    printf '%-40s %14d %16d %16s\n' "$exe" $(((total - build - fresh) / decisions)) $((build / builds)) \
        "$([ "$fresh" = 0 ] && echo - || echo $((fresh / (ROUNDS * 3))))"
done
echo "($RACKS racks, $ROUNDS rounds x 19 requests x 3 occupancies = $decisions decisions per build)"
