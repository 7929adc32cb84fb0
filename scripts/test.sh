#!/bin/bash
# test.sh — the project's test command (README, .ci/run): installs what it needs, and for each
# Slurm series with a Debian lab (24.11.5 from trixie, 26.05.5 from sid) builds the plugin and
# its Debian package for that release, brings up the real Slurm lab with the package installed
# and topology/nvl72 loaded, and runs every test against it: unit and property tests of the
# core, and the end-to-end tests that submit real jobs to the real slurmctld. The two series'
# labs and tests run at once (output lines start with [24.11] or [26.05]). Then build and
# linkage checks for 25.05, 25.11 and 26.11 where a source tree is given (SLURM_SRC_25_05,
# SLURM_SRC_25_11, SLURM_SRC_26_11; Debian ships no binaries of those); where an installation
# of that release is given too (SLURM_PREFIX_25_05, SLURM_PREFIX_25_11, SLURM_PREFIX_26_11:
# the prefix of its make install), the whole suite instead, against a lab of that
# installation (lab-up.sh's SLURM_PREFIX mode). And where a folder of SchedMD's own Debian
# packages of a release is given with that release's source tree (SLURM_DEBS_26_05=<folder of
# slurm-smd*.deb> SLURM_SRC_26_05_SMD=<SchedMD's tree of it>; any supported series), the whole
# suite against a lab of those packages (lab-up.sh's SLURM_DEBS mode).
# Ends with "N passed, N failed". Stops the labs it started (KEEP_LAB=1 keeps them). Every
# phase's line starts with the time since the start ("== [12m04s] ..."), so a log shows where
# the time goes; cargo test adds each test binary's own time.
#   TEST_SERIES="24.11 26.05"   the lab series to test (default both; empty: only the build checks)
# Optional, an upgrade between SchedMD's packages with jobs running
# (tests/e2e/tests/e2e_upgrade_smd.rs, docs/upgrades.md): NVL72_UPGRADE_FROM_DEBS and
# NVL72_UPGRADE_TO_DEBS (folders of slurm-smd*.deb of two releases, e.g. 26.05.3 and 26.11.0)
# with NVL72_UPGRADE_FROM_SRC and NVL72_UPGRADE_TO_SRC (the release trees they were built
# from: the plugin's package for each is built from it). Skipped with a message without them.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
[ "$(id -u)" = 0 ] || { echo "test.sh: the lab needs root" >&2; exit 1; }
unset LAB   # each series has its own lab (lab-lib.sh's default for SLURM_SERIES)
# The Debian labs run Debian's Slurm; an installation is named per series (SLURM_PREFIX_25_xx,
# SLURM_PREFIX_26_11).
unset SLURM_PREFIX SLURM_DEBS
# The SchedMD upgrade's inputs, kept for its own step at the end: its test is built only
# when they are set (tests/e2e/build.rs), and only that step may run it.
up_from_debs=${NVL72_UPGRADE_FROM_DEBS:-} up_to_debs=${NVL72_UPGRADE_TO_DEBS:-}
up_from_src=${NVL72_UPGRADE_FROM_SRC:-} up_to_src=${NVL72_UPGRADE_TO_SRC:-}
unset NVL72_UPGRADE_FROM_DEBS NVL72_UPGRADE_TO_DEBS NVL72_UPGRADE_FROM_SRC NVL72_UPGRADE_TO_SRC \
    NVL72_UPGRADE_FROM_PACKAGE NVL72_UPGRADE_TO_PACKAGE

# say TEXT: a phase's heading, with the minutes and seconds since the start (subshells and
# background jobs share the count).
say() { printf '== [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
say "install what the tests need"
LINT=1 bash scripts/install-deps.sh
log=$(mktemp)
started=()
stop_labs() {   # entries: "<series>" (Debian's Slurm), "<series>|<SLURM_PREFIX>" or "<series>||<SLURM_DEBS>"
    local e s p d
    for e in "${started[@]}"; do
        IFS='|' read -r s p d <<<"$e"
        SLURM_SERIES=$s SLURM_PREFIX=$p SLURM_DEBS=$d bash scripts/lab-down.sh >"/tmp/nvl72-lab-down-$s.log" 2>&1 || true
    done
}
# lint NAME CMD...: a lint counts as one test in the closing line ("lint NAME: 1 passed,
# 0 failed" in the log), and a failing one fails the run.
lint() {
    local name=$1; shift
    if "$@"; then
        echo "lint $name: 1 passed, 0 failed" | tee -a "$log"
    else
        echo "lint $name: 0 passed, 1 failed" | tee -a "$log"
        rc=1
    fi
}
rc=0
say "cargo fmt --all --check"
lint fmt cargo fmt --all --check
say "shellcheck (warnings) on the shell scripts; the Python helpers parse"
lint shellcheck shellcheck -x -P SCRIPTDIR -S warning .ci/run scripts/*.sh scripts/sl tests/fixtures/*/make-fixtures.sh
lint "module map" python3 scripts/module-map.py
lint python python3 -c 'import ast, sys; [ast.parse(open(f).read(), f) for f in sys.argv[1:]]' scripts/*.py
# Set before any lab-up so that a half-started lab is stopped too.
[ "${KEEP_LAB:-0}" = 1 ] || trap stop_labs EXIT

# series_build SERIES: sets pin, profile and so (where the plugin lands) for a Debian series.
series_build() {
    case $1 in
        24.11) pin=24.11.5 profile=release so=target/release/libtopology_nvl72.so ;;
        26.05) pin=26.05.5 profile=slurm-26-05 so=target/slurm-26-05/libtopology_nvl72.so ;;
        *) echo "test.sh: no lab for Slurm $1 (24.11, 26.05)" >&2; exit 1 ;;
    esac
}
# Every series' plugin and package first: each lab also checks the other series' plugin
# (`nvl72 check --plugin`, tests/e2e/tests/e2e_admin.rs), and the 26.05 suite upgrades from the 24.11
# package (tests/e2e/tests/e2e_upgrade.rs). Each package is copied to target/packages/, as cargo-deb
# empties target/debian when it builds another variant.
# The test-only fault-injection build (tests/e2e/tests/e2e_faults.rs) comes first, in the
# series' own target dir, and is copied aside: package.sh's plain build is then the last build
# of the plugin in that profile, and `cargo test` finds it and nvl72 up to date instead of
# compiling the plugin again.
mkdir -p target/packages
for series in ${TEST_SERIES-24.11 26.05}; do
    series_build "$series"
    if [ "$series" = 24.11 ]; then
        # A site's own build: the packages SchedMD's Debian packaging, slurm.spec and a prefix
        # expect, from the pin's source tree (tests/e2e/tests/e2e_packages.rs reads them). First,
        # in the same target dir: the plain build below is then the last one again.
        say "Slurm 24.11: the site packages from the pin's source tree (SchedMD's .deb, .rpm, tarball)"
        site_tree=$(SLURM_PIN=$pin bash scripts/fetch-slurm-source.sh | tail -1)
        SLURM_SRC=$site_tree SITE_TARGET_DIR=target bash scripts/package.sh >/dev/null
        export NVL72_SITE_SLURM_SRC=$site_tree NVL72_SITE_PACKAGES=$REPO/target/site-$pin
    fi
    say "Slurm $series: build with the test-only fault-injection switch (tests/e2e/tests/e2e_faults.rs)"
    SLURM_PIN=$pin SLURM_SERIES=$series cargo build --profile "$profile" -p topology_nvl72 --features fault-injection
    mkdir -p "target/fault-injection/$profile"
    cp "$so" "target/fault-injection/$profile/libtopology_nvl72.so"
    say "Slurm $series: build for $pin (and the Debian package the lab installs)"
    deb=$(SLURM_PIN=$pin SLURM_SERIES=$series bash scripts/package.sh | tail -1)
    cp "$deb" "target/packages/topology-nvl72-$pin.deb"
done
# The simulator's published figures (README.md, docs/results.md) are what this commit prints:
# scripts/figures.sh runs every table again (about 3 minutes; the release nvl72 is built).
say "figures: README.md and docs/results.md against this commit's simulator (scripts/figures.sh --check)"
lint figures bash scripts/figures.sh --check
export NVL72_PACKAGE_24_11=$REPO/target/packages/topology-nvl72-24.11.5.deb
if [[ " ${TEST_SERIES-24.11 26.05} " != *" 24.11 "* ]] && [[ " ${TEST_SERIES-24.11 26.05} " = *" 26.05 "* ]]; then
    say "Slurm 24.11: the 24.11.5 package too, for the 26.05 upgrade test"
    cp "$(SLURM_PIN=24.11.5 SLURM_SERIES=24.11 bash scripts/package.sh | tail -1)" "$NVL72_PACKAGE_24_11"
fi
# select_members SERIES: the workspace members whose lints, builds and tests run for that series. The
# plugin and the end-to-end suite differ by series; the engine, admin tools, simulator and
# nvl72 (the quick loop, `cargo test`) do not, so they run once, with the first series.
# Sets the array `members`.
select_members() {
    if [ "$1" = "$(first_series)" ]; then members=(--workspace); else members=(-p topology_nvl72 -p nvl72-e2e); fi
}
# shellcheck disable=SC2086 # TEST_SERIES is a list
first_series() { set -- ${TEST_SERIES-24.11 26.05}; echo "${1:-}"; }
# other_series SERIES: the Debian series whose plugin SERIES' lab checks (nvl72 check --plugin).
other_series() { case $1 in 24.11) echo 26.05 ;; *) echo 24.11 ;; esac; }
# series_env SERIES: the environment of that series' lint, build and tests.
series_env() {
    series_build "$(other_series "$1")"
    export NVL72_OTHER_PLUGIN="$REPO/$so"
    series_build "$1"
    export SLURM_PIN=$pin SLURM_SERIES=$1
    export PACKAGE="$REPO/target/packages/topology-nvl72-$pin.deb"
    export NVL72_FAULT_PLUGIN="$REPO/target/fault-injection/$profile/libtopology_nvl72.so"
}
# Lints and test builds first, one series after the other (they use both cores).
for series in ${TEST_SERIES-24.11 26.05}; do
    other=$(other_series "$series")
    series_build "$other"
    if [ ! -f "$so" ]; then
        say "Slurm $other: build the plugin (for the $series lab's nvl72 check --plugin)"
        SLURM_PIN=$pin SLURM_SERIES=$other cargo build --profile "$profile" -p topology_nvl72
    fi
    (
        series_env "$series"
        say "Slurm $series: clippy, warnings denied"
        select_members "$series"
        lint "clippy $series" cargo clippy --profile "$profile" "${members[@]}" --all-targets -- -D warnings
        if [ "$series" = 24.11 ]; then
            say "cargo doc, warnings denied (broken links, private items)"
            lint doc env RUSTDOCFLAGS="-D warnings" cargo doc --profile "$profile" --no-deps --workspace
        fi
        say "Slurm $series: build the tests"
        cargo test --profile "$profile" "${members[@]}" --all-targets --no-run || rc=1
        exit "$rc"
    ) || rc=1
done
# lab_up SERIES: the series' lab, fresh logs.
lab_up() {
    say "Slurm $1: lab (fresh logs)"
    # Accounting (slurmdbd + MariaDB) is on only in tests/e2e/tests/e2e_accounting.rs, which restarts
    # the lab with ACCOUNTING=1: 26.05's slurmctld will not restart after a kill -9 in its
    # first 5 minutes with accounting (no assoc_usage saved yet; docs/lab.md), and the
    # kill -9 tests start from a clean state.
    (series_env "$1" && CLEAN=1 TOPO=nvl72 bash scripts/lab-up.sh)
}
# series_tests SERIES: every test against the series' lab; cargo test's status.
series_tests() {
    series_env "$1"
    say "Slurm $1: tests"
    select_members "$1"
    cargo test --profile "$profile" "${members[@]}" --all-targets --no-fail-fast
}
# The series' labs run at once (their own chroots, ports and folders: docs/lab.md), and so
# do their tests, which mostly wait on Slurm; each line of their output starts with the
# series. The first lab comes up alone: a new machine's first lab-up installs debootstrap.
status=$(mktemp -d)
pids=()
first=1
for series in ${TEST_SERIES-24.11 26.05}; do
    started+=("$series")
    lab=todo   # todo: the background job brings it up; up / failed: done here
    if [ "$first" = 1 ]; then
        lab=up
        lab_up "$series" 2>&1 | sed -u "s/^/[$series] /" || lab=failed
        first=0
    fi
    (
        set +e
        r=1
        [ "$lab" != todo ] || { lab_up "$series" && lab=up; }
        [ "$lab" != up ] || { series_tests "$series"; r=$?; }
        [ "${KEEP_LAB:-0}" = 1 ] || SLURM_SERIES=$series bash scripts/lab-down.sh >/dev/null 2>&1 || true
        echo "$r" > "$status/$series"
    ) 2>&1 | sed -u "s/^/[$series] /" | tee -a "$log" &
    pids+=($!)
done
wait "${pids[@]}"
for series in ${TEST_SERIES-24.11 26.05}; do
    [ "$(cat "$status/$series" 2>/dev/null)" = 0 ] || rc=1
done
rm -rf "$status"
unset SLURM_PIN SLURM_SERIES PACKAGE NVL72_FAULT_PLUGIN NVL72_OTHER_PLUGIN NVL72_PACKAGE_24_11

# Series without Debian packages: the export layer must build against the tree and link
# lazily (tests/linkage.rs), and the core's tests pass with that series' cfgs. With an
# installation of the release as well, the whole suite runs against a lab of it.
for series in 25.05 25.11 26.11; do
    var=SLURM_SRC_${series/./_}
    tree=${!var:-}
    pvar=SLURM_PREFIX_${series/./_}
    prefix=${!pvar:-}
    if [ -z "$tree" ]; then
        say "Slurm $series: build and linkage check skipped: no source tree ($var=/path/to/slurm-$series.x)"
        [ -z "$prefix" ] || say "Slurm $series: the lab on $prefix skipped too: it needs $var (the source tree of that release)"
        continue
    fi
    say "Slurm $series: clippy against $tree, warnings denied"
    lint "clippy $series" env SLURM_SRC="$tree" SLURM_SERIES="$series" \
        cargo clippy --release -p topology_nvl72 -p nvl72-e2e --all-targets --target-dir "target/slurm-$series" -- -D warnings
    if [ -z "$prefix" ]; then
        say "Slurm $series: build and linkage check against $tree (no lab: $pvar names no installation)"
        set +e
        (
            export SLURM_SRC=$tree
            cargo build --release -p topology_nvl72 --target-dir "target/slurm-$series" &&
                cargo test --release -p topology_nvl72 --lib --test linkage --target-dir "target/slurm-$series"
        ) 2>&1 | tee -a "$log"
        [ "${PIPESTATUS[0]}" = 0 ] || rc=1
        set -e
        continue
    fi
    say "Slurm $series: build against $tree (the plugin and nvl72) for the installation $prefix"
    set +e
    (
        set -e
        export SLURM_SRC=$tree SLURM_PREFIX=$prefix SLURM_SERIES=$series
        cargo build --release -p topology_nvl72 -p nvl72-cli --target-dir "target/slurm-$series"
        say "Slurm $series: build with the test-only fault-injection switch (tests/e2e/tests/e2e_faults.rs)"
        cargo build --release -p topology_nvl72 --features fault-injection --target-dir "target/fault-injection-$series"
    )
    brc=$?
    set -e
    if [ "$brc" != 0 ]; then rc=1; continue; fi
    say "Slurm $series: lab on $prefix (fresh logs)"
    started+=("$series|$prefix")
    if ! SLURM_PREFIX=$prefix SLURM_SERIES=$series CLEAN=1 TOPO=nvl72 bash scripts/lab-up.sh; then
        rc=1; continue
    fi
    say "Slurm $series: tests"
    set +e
    SLURM_SRC=$tree SLURM_PREFIX=$prefix SLURM_SERIES=$series \
        NVL72_FAULT_PLUGIN="$REPO/target/fault-injection-$series/release/libtopology_nvl72.so" \
        cargo test --release --target-dir "target/slurm-$series" -p topology_nvl72 -p nvl72-e2e --all-targets --no-fail-fast 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    set -e
    [ "${KEEP_LAB:-0}" = 1 ] || SLURM_PREFIX=$prefix SLURM_SERIES=$series bash scripts/lab-down.sh >/dev/null 2>&1 || true
done

# SchedMD's own Debian packages of a release (slurm-smd*, built with debuild from SchedMD's
# release tree; docs/install.md): with the folder and the tree, the whole suite against a lab
# that installs them (lab-up.sh's SLURM_DEBS mode) and the project's package for slurm-smd
# (scripts/package.sh with SLURM_SRC, built against the tree in target/slurm-<release>).
smd_given=0
for series in 24.11 25.05 25.11 26.05 26.11; do
    dvar=SLURM_DEBS_${series/./_}
    debs=${!dvar:-}
    tvar=SLURM_SRC_${series/./_}_SMD
    tree=${!tvar:-}
    [ -n "$debs$tree" ] || continue
    smd_given=1
    if [ -z "$debs" ] || [ -z "$tree" ]; then
        say "Slurm $series, SchedMD's packages: skipped: it needs both $dvar (the folder of slurm-smd*.deb) and $tvar (SchedMD's source tree of that release)"
        continue
    fi
    smd_deb=$(compgen -G "$debs/slurm-smd_*.deb" | head -n 1 || true)
    release=${smd_deb##*/slurm-smd_}; release=${release%%-*}
    if [ -z "$smd_deb" ] || [ "${release%.*}" != "$series" ]; then
        say "Slurm $series, SchedMD's packages: $dvar=$debs holds no slurm-smd_$series.*.deb"
        rc=1; continue
    fi
    say "Slurm $release, SchedMD's packages: clippy against $tree, warnings denied"
    lint "clippy $release smd" env SLURM_SRC="$tree" SLURM_SERIES="$series" SLURM_DEBS="$debs" \
        cargo clippy --release -p topology_nvl72 -p nvl72-e2e --all-targets --target-dir "target/slurm-$release" -- -D warnings
    say "Slurm $release, SchedMD's packages: the package for slurm-smd, built against $tree"
    set +e
    (
        set -e
        export SLURM_SRC=$tree SLURM_DEBS=$debs SLURM_SERIES=$series
        say "Slurm $release, SchedMD's packages: build with the test-only fault-injection switch (tests/e2e/tests/e2e_faults.rs)"
        cargo build --release -p topology_nvl72 --features fault-injection --target-dir "target/fault-injection-$release"
        SITE_TARGET_DIR=target/slurm-$release bash scripts/package.sh >/dev/null
    )
    brc=$?
    set -e
    smd_pkg=$(compgen -G "target/site-$release/topology-nvl72_*+slurm${release}-*_amd64.deb" | head -n 1 || true)
    if [ "$brc" != 0 ] || [ -z "$smd_pkg" ]; then rc=1; continue; fi
    smd_pkg=$REPO/$smd_pkg
    say "Slurm $release, SchedMD's packages: lab on $debs with $(basename "$smd_pkg") (fresh logs)"
    started+=("$series||$debs")
    if ! SLURM_DEBS=$debs SLURM_SERIES=$series PACKAGE=$smd_pkg CLEAN=1 TOPO=nvl72 bash scripts/lab-up.sh; then
        rc=1; continue
    fi
    say "Slurm $release, SchedMD's packages: tests"
    set +e
    SLURM_SRC=$tree SLURM_DEBS=$debs SLURM_SERIES=$series PACKAGE=$smd_pkg \
        NVL72_FAULT_PLUGIN="$REPO/target/fault-injection-$release/release/libtopology_nvl72.so" \
        cargo test --release --target-dir "target/slurm-$release" -p topology_nvl72 -p nvl72-e2e --all-targets --no-fail-fast 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    set -e
    [ "${KEEP_LAB:-0}" = 1 ] || SLURM_DEBS=$debs SLURM_SERIES=$series bash scripts/lab-down.sh >/dev/null 2>&1 || true
done
[ "$smd_given" = 1 ] || say "SchedMD's packages: lab run skipped: no SLURM_DEBS_<series>=<folder of slurm-smd*.deb> with SLURM_SRC_<series>_SMD=<its source tree> (e.g. SLURM_DEBS_26_05, SLURM_SRC_26_05_SMD)"

# Slurm upgraded between SchedMD's packages with jobs running, slurmctld first, the plugin's
# package swapped with Slurm's (its own lab, /var/tmp/nvl72-upgrade-smd, on its own ports).
if [ -z "$up_from_debs" ] || [ -z "$up_to_debs" ] || [ -z "$up_from_src" ] || [ -z "$up_to_src" ]; then
    say "SchedMD upgrade skipped: it needs NVL72_UPGRADE_FROM_DEBS, NVL72_UPGRADE_TO_DEBS (folders of slurm-smd*.deb) and NVL72_UPGRADE_FROM_SRC, NVL72_UPGRADE_TO_SRC (their release trees)"
else
    set +e
    (
        set -e
        say "SchedMD upgrade: the plugin's packages for $up_from_src and $up_to_src"
        from_pkg=$(SLURM_SRC=$up_from_src bash scripts/package.sh | sed -n 1p)
        to_pkg=$(SLURM_SRC=$up_to_src bash scripts/package.sh | sed -n 1p)
        say "SchedMD upgrade: $up_from_debs to $up_to_debs with jobs running"
        NVL72_UPGRADE_FROM_DEBS=$up_from_debs NVL72_UPGRADE_TO_DEBS=$up_to_debs \
            NVL72_UPGRADE_FROM_PACKAGE=$REPO/$from_pkg NVL72_UPGRADE_TO_PACKAGE=$REPO/$to_pkg \
            cargo test --release -p nvl72-e2e --test e2e_upgrade_smd
    ) 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    set -e
fi

passed=$(grep -o '[0-9]* passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -o '[0-9]* failed' "$log" | awk '{s+=$1} END {print s+0}')
rm -f "$log"
[ "$rc" = 0 ] || [ "$failed" -gt 0 ] || failed=1   # a build error counts as a failure
echo "$passed passed, $failed failed"
exit "$rc"
