#!/bin/bash
# shellcheck disable=SC2015  # 'A && B || die' is intended: die exits
# lab-up.sh — bring up a one-machine Slurm lab cluster (a Debian chroot running Debian's own
# slurmctld/slurmd, one slurmd per fake 4-GPU tray) to test topology/nvl72.  Two Slurm series:
# SLURM_SERIES=24.11 (default: Debian trixie, Slurm 24.11.5-4+deb13u1) and SLURM_SERIES=26.05
# (Debian sid, Slurm 26.05.5-1), each in its own LAB with its own ports, so both can run at once.
# Or a site's own Slurm build: SLURM_PREFIX=/opt/slurm-25.11.7 (an installation made with make
# install; its series is read from it) runs that installation instead, in a trixie chroot
# without Debian's Slurm that holds a copy of it, in a LAB and on ports of its own.  Or SchedMD's
# own Debian packages: SLURM_DEBS=/var/tmp/smd-debs/26.05.3 (slurm-smd*.deb, built with debuild
# from SchedMD's release tree) installed with apt in a trixie chroot, in a LAB and on ports of
# their own.
#
# Idempotent.  In order it:
#   1. builds the rootfs if missing (debootstrap trixie/sid minbase into rootfs.tmp, pinned
#      Slurm, then renamed to rootfs — an interrupted build is thrown away and redone next time);
#   2. mounts proc, sys, dev and $LAB/var into the chroot; SLURM_PREFIX: copies the installation
#      into the chroot at the same path (again when it changed) and checks with ldd that its
#      binaries and plugins find their libraries there;
#   3. writes slurm.conf, gres.conf, cgroup.conf, topology.conf (+ topology.toml and the
#      plugin for TOPO=nvl72); if anything changed while daemons run, it restarts them;
#   4. starts munged, (ACCOUNTING=1: mariadbd and slurmdbd,) slurmctld and one slurmd per node
#      (by PID file);
#   5. waits until every node is idle.
#
# Env knobs (defaults in brackets; where two, the second is for SLURM_SERIES=26.05):
#   SLURM_SERIES [24.11]      24.11: Debian trixie's Slurm 24.11.5; 26.05: Debian sid's Slurm
#                             26.05.5 (sid's Release file may be expired: apt runs with
#                             Acquire::Check-Valid-Until=false there).  Pass the same value to
#                             lab-down.sh and sl (it picks LAB's default).  PLUGIN/PACKAGE must be
#                             built for that exact Slurm release.  25.05 and 25.11 need
#                             SLURM_PREFIX.
#   SLURM_PREFIX []           a Slurm installation (sbin/slurmctld, sbin/slurmd, bin/sbatch ...,
#                             lib/slurm/, include/slurm/slurm_version.h) to run instead of
#                             Debian's: series 25.05, 25.11 (or 24.11, 26.05).  It is copied into
#                             the chroot at the same path ($LAB/rootfs$SLURM_PREFIX) and never
#                             written to; PluginDir is $SLURM_PREFIX/lib/slurm (the copy), and
#                             the daemons and clients run with SLURM_CONF=/etc/slurm/slurm.conf.
#                             The installation needs multiple-slurmd support (one slurmd per tray)
#                             and the plugins auth/munge, cred/munge, select/cons_tres, gres/gpu,
#                             proctrack/linuxproc, sched/backfill (checked).  Pass it to
#                             lab-down.sh and sl too.
#   SLURM_DEBS []             a folder with SchedMD's Debian packages of one release: slurm-smd,
#                             slurm-smd-client, slurm-smd-slurmctld, slurm-smd-slurmd (and
#                             slurm-smd-slurmdbd for ACCOUNTING=1), _<version>_amd64.deb, built
#                             from SchedMD's release tree with debuild and multiple-slurmd support
#                             (docs/install.md, "SchedMD's Debian packages").  Installed with apt
#                             from the folder (apt takes their dependencies from the mirror) into a
#                             trixie chroot instead of Debian's slurm-wlm; the series is read from
#                             slurm-smd's version.  PluginDir is SchedMD's
#                             /usr/lib/x86_64-linux-gnu/slurm; the configuration /etc/slurm.
#                             PLUGIN (with NVL72_BIN) or PACKAGE (the project's .deb for SchedMD's
#                             packages: its Depends on slurm-smd is checked by dpkg).  Pass it to
#                             lab-down.sh and sl too.
#   LAB [/var/tmp/nvl72-lab | /var/tmp/nvl72-lab-26.05; SLURM_PREFIX: /var/tmp/nvl72-lab-25.05,
#        /var/tmp/nvl72-lab-25.11, /var/tmp/nvl72-lab-prefix-24.11 | -26.05;
#        SLURM_DEBS: /var/tmp/nvl72-lab-smd-<series>]
#                             lab folder: rootfs/ (chroot) and var/
#                             (state, spool, log, run, jobs, fakedev).  Must be on a filesystem
#                             without nodev.  A rootfs holds one series; another one is refused.
#   LAB_ROOTFS [$LAB/rootfs]  the chroot.  Another one (another series) over the same LAB var/
#                             is a Slurm upgrade with the state in place: stop the daemons with
#                             lab-down.sh --keep-steps, start with the new LAB_ROOTFS; every
#                             chroot of a LAB shares the munge key $LAB/munge.key.  Pass it to
#                             lab-down.sh and sl too.
#   RACKS [4], NPR [18]       racks x trays: nodes gb001..gb<RACKS*NPR>, 144 cores, 4 GPUs each
#                             (4-digit names gb0001.. when RACKS*NPR > 999, 5 digits above
#                             9999; at most 99999)
#   CLOUD [0]                 1 = the gb nodes are Slurm power-saving cloud nodes (State=CLOUD)
#                             without a slurmd: they start powered down (idle~), ResumeProgram and
#                             SuspendProgram are a no-op (/bin/true), ResumeTimeout is 10 h, so a job
#                             placed on them stays CONFIGURING (nodes alloc#) and never runs or
#                             ends.  slurmctld schedules thousands of trays with no slurmd memory
#                             (scripts/sched-cost.sh, docs/notebook/real-slurm-cost.md).  The wait
#                             step waits for idle~ gb nodes; cpu nodes still get a slurmd.
#   CPU_NODES [2]             extra nodes cpu01.. (no GRES, in no rack), partition "cpu"
#   ROOTFS_FROM []            another lab folder: a new LAB copies its finished rootfs when it
#                             holds the same Slurm (seconds instead of a debootstrap); ignored
#                             when it does not, or when LAB has a rootfs already
#   TOPO [nvl72]              nvl72 | block | tree | none (topology/default)
#   PLUGIN [<repo>/target/release/libtopology_nvl72.so; 26.05: target/slurm-26-05/...;
#           SLURM_PREFIX: target/slurm-<series>/release/...; SLURM_DEBS:
#           target/slurm-<release>/release/..., e.g. target/slurm-26.05.3]   installed as topology_nvl72.so
#   NVL72_BIN [next to PLUGIN]  SLURM_PREFIX, and SLURM_DEBS without PACKAGE: the nvl72 tool,
#                             installed as /usr/local/bin/nvl72
#   PACKAGE []                the topology-nvl72 .deb (scripts/package.sh) to install with dpkg in
#                             the chroot instead of copying PLUGIN (plugin + /usr/bin/nvl72);
#                             not with SLURM_PREFIX; with SLURM_DEBS the package built for
#                             SchedMD's packages (Depends: slurm-smd of that release)
#   WAIT_NODES [1]            0 = return once every daemon runs, without waiting for the nodes to
#                             be up (the chaos storm restarts daemons while it keeps trays down)
#   SLURMD [1]                0 = start munged and slurmctld only: the slurmd that run (of another
#                             LAB_ROOTFS: an older release, after lab-down.sh --slurmctld-only)
#                             keep running, and the nodes are waited for as they answer this
#                             slurmctld.  Slurm's upgrade order: slurmctld first, then the slurmd
#   TOPOLOGY_TOML []          copy this file as /etc/slurm/topology.toml instead of generating it;
#                             "none": no topology.toml (nvl72 then reads topology.conf's BlockName=)
#   EXTRA_CONF []             text appended to slurm.conf
#   POLICY []                 lines for the generated topology.toml's [policy] section
#   GROUP_SIZE [0]            >0: racks get group = "rowN", GROUP_SIZE racks per row
#   NODE_ORDER [rack]         reverse: slurm.conf lists the racks last to first
#   SCHED_PARAMS [bf_interval=5]  slurm.conf SchedulerParameters
#   CLEAN [0]                 1 = wipe slurmctld state, slurmd spool and logs before starting
#                             (and the accounting database $LAB/var/mysql: an empty job history)
#   ACCOUNTING [0]            1 = real Slurm accounting: MariaDB (mariadbd, data in $LAB/var/mysql,
#                             socket at the chroot libmariadb's default: /run/mysqld/ (trixie),
#                             /run/mariadbd/ (sid); skip-networking) and
#                             slurmdbd (/etc/slurm/slurmdbd.conf, DbdPort DBD_PORT) run in the chroot,
#                             started before slurmctld; slurm.conf gets AccountingStorageType=
#                             accounting_storage/slurmdbd and AccountingStorageTRES=gres/gpu (no
#                             AccountingStorageEnforce); sacct works.  Installs mariadb-server and
#                             slurmdbd + slurm-wlm-mysql-plugin (= the lab's Slurm) in the chroot
#                             when missing; SLURM_PREFIX: its sbin/slurmdbd and
#                             lib/slurm/accounting_storage_mysql.so (checked); SLURM_DEBS:
#                             slurm-smd-slurmdbd from the folder.  Switching back to 0
#                             restarts the lab without them (lab-down.sh stops them).  See
#                             docs/lab.md, "Accounting (ACCOUNTING=1)".
#   DBD_PORT [CTLD_PORT+2: 6819 | 6829; SLURM_PREFIX 6889, 6899, 6909, 6929; SLURM_DEBS 6999]
#                             slurmdbd's port
#   DBD_WAIT [60]             seconds to wait for mariadbd, then slurmdbd, to answer
#   WAIT [120]                seconds to wait for all nodes to be idle
#   CTLD_WRAP []              command prefix for slurmctld, split at whitespace (no quoting), e.g.
#                             "valgrind --tool=memcheck --trace-children=yes --log-file=/x/vg.%p";
#                             its program must exist in the chroot (CHROOT_PACKAGES). A change
#                             restarts the daemons.  See docs/notebook/valgrind.md
#   CTLD_WAIT [30]            seconds to wait for slurmctld to answer after starting it
#   BACKUP_CTLD [0]           1 = two controllers over one StateSaveLocation, as a site runs
#                             them for failover: SlurmctldHost=ctl1(127.0.0.1) and
#                             ctl2(127.0.0.2), CommunicationParameters=NoCtldInAddrAny, each
#                             slurmctld in a UTS namespace of its own (its hostname is its
#                             SlurmctldHost name).  ctl2 also has a mount namespace in which
#                             $VAR/ctl2/run and $VAR/ctl2/log stand for $VAR/run and $VAR/log,
#                             so its pid file and log are its own.  Starts whichever is not
#                             running (the primary returning after a kill is just lab-up.sh).
#   CTLD_TIMEOUT [120; BACKUP_CTLD=1: 6]  SlurmctldTimeout: how soon the backup takes over
#   CHROOT_PACKAGES []        extra Debian packages to install in the chroot, e.g. valgrind, or
#                             the libraries a SLURM_PREFIX installation links against
#   MIRROR []                 Debian archive URL; default: from the host's apt sources
#   SECURITY_MIRROR [from the host's apt sources]  (24.11 only; sid has none)
#   CTLD_PORT [6817 | 6827], PORT0 [17000 | 18000] (gbNNN listens on PORT0+NNN),
#   CPU_PORT0 [17900 | 18900]; SLURM_PREFIX: 25.05 6887, 19000, 19900; 25.11 6897, 28000,
#   28900; 24.11 6907, 16000, 16900; 26.05 6927, 29000, 29900; 26.11 6937, 26600, 26900;
#   SLURM_DEBS (any series): 6997, 11000, 11900
#
# Clients: scripts/sl sinfo | sbatch ... | squeue ...      Stop: scripts/lab-down.sh
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lab-lib.sh"     # validates SLURM_SERIES, sets LAB
. "$(dirname "${BASH_SOURCE[0]}")/apt-mirrors.sh"

# The chroot's Slurm, per series.  The plugin is built against exactly this upstream version
# (Slurm refuses plugins whose micro version differs); keep in sync with
# slurm-headers/pins/<version>, checked below.
# With SLURM_PREFIX (an installation of the site's own Slurm build) the chroot is a trixie
# minbase without Debian's Slurm, and holds a copy of the installation at the same path.
# With SLURM_DEBS (SchedMD's packages) it is a trixie minbase with those packages.
if [ -n "$SLURM_DEBS" ]; then
    SLURM_DEBIAN_VERSION=""; SUITE=trixie
    SLURM_VERSION=${SMD_VERSION%%-*}                # upstream version, e.g. 26.05.3
    # Clear of every port above and of the labs the tests start for these packages
    # (failover 6981/10000, chaos 6983/10400; tests/e2e/src/env.rs), in 10000-11999, which no
    # other lab uses.
    DEF_CTLD_PORT=6997; DEF_PORT0=11000; DEF_CPU_PORT0=11900
elif [ -n "$SLURM_PREFIX" ]; then
    SLURM_DEBIAN_VERSION=""; SUITE=trixie
    SLURM_VERSION=$PREFIX_VERSION
    # Ports clear of the Debian labs (6817/17000/17900, 6827/18000/18900), scripts/sched-cost.sh
    # (6837, 6847; 30000+, 31000+), nvl72 replay (6857-6878; 20000-25999), valgrind-storm.sh
    # (6917, 27000, 27900), the chaos storms (6947/15000, 6957/14000; long runs 6991/13000, 6993/12000), and below the ephemeral
    # range (32768).
    case $SLURM_SERIES in
        25.05) DEF_CTLD_PORT=6887; DEF_PORT0=19000; DEF_CPU_PORT0=19900 ;;
        25.11) DEF_CTLD_PORT=6897; DEF_PORT0=28000; DEF_CPU_PORT0=28900 ;;
        24.11) DEF_CTLD_PORT=6907; DEF_PORT0=16000; DEF_CPU_PORT0=16900 ;;
        26.05) DEF_CTLD_PORT=6927; DEF_PORT0=29000; DEF_CPU_PORT0=29900 ;;
        26.11) DEF_CTLD_PORT=6937; DEF_PORT0=26600; DEF_CPU_PORT0=26900 ;;
    esac
else
case $SLURM_SERIES in
    24.11) SLURM_DEBIAN_VERSION=24.11.5-4+deb13u1; SUITE=trixie
           DEF_CTLD_PORT=6817; DEF_PORT0=17000; DEF_CPU_PORT0=17900 ;;
    26.05) SLURM_DEBIAN_VERSION=26.05.5-1; SUITE=sid
           DEF_CTLD_PORT=6827; DEF_PORT0=18000; DEF_CPU_PORT0=18900 ;;
esac
SLURM_VERSION=${SLURM_DEBIAN_VERSION%%-*}          # upstream version, e.g. 24.11.5
fi

RACKS=${RACKS:-4}
NPR=${NPR:-18}
CPU_NODES=${CPU_NODES:-2}
TOPO=${TOPO:-nvl72}
# The build for this series: cargo's release profile (24.11) or the series' own profile.
# SLURM_PREFIX: the build against that release's source tree, in its own target dir
# (SLURM_SRC=<tree> cargo build --release -p topology_nvl72 -p nvl72-cli --target-dir target/slurm-25.11).
# SLURM_DEBS: the same against SchedMD's release tree, in a target dir named by the release
# (--target-dir target/slurm-26.05.3).
if [ -n "$SLURM_DEBS" ]; then
    PLUGIN=${PLUGIN:-$LAB_REPO/target/slurm-$SLURM_VERSION/release/libtopology_nvl72.so}
elif [ -n "$SLURM_PREFIX" ]; then
    PLUGIN=${PLUGIN:-$LAB_REPO/target/slurm-$SLURM_SERIES/release/libtopology_nvl72.so}
else
case $SLURM_SERIES in
    24.11) PLUGIN=${PLUGIN:-$LAB_REPO/target/release/libtopology_nvl72.so} ;;
    *) PLUGIN=${PLUGIN:-$LAB_REPO/target/slurm-${SLURM_SERIES/./-}/libtopology_nvl72.so} ;;
esac
fi
# SLURM_PREFIX and SLURM_DEBS: the nvl72 tool, installed as /usr/local/bin/nvl72 in the chroot
# when it exists (with SLURM_DEBS only without PACKAGE, whose /usr/bin/nvl72 it would hide)
NVL72_BIN=${NVL72_BIN:-$(dirname "$PLUGIN")/nvl72}
PACKAGE=${PACKAGE:-}
TOPOLOGY_TOML=${TOPOLOGY_TOML:-}
EXTRA_CONF=${EXTRA_CONF:-}
POLICY=${POLICY:-}
GROUP_SIZE=${GROUP_SIZE:-0}
NODE_ORDER=${NODE_ORDER:-rack}
SCHED_PARAMS=${SCHED_PARAMS:-bf_interval=5}
CLEAN=${CLEAN:-0}
ACCOUNTING=${ACCOUNTING:-0}
DBD_WAIT=${DBD_WAIT:-60}
CLOUD=${CLOUD:-0}
ROOTFS_FROM=${ROOTFS_FROM:-}
WAIT=${WAIT:-120}
WAIT_NODES=${WAIT_NODES:-1}
SLURMD=${SLURMD:-1}
CTLD_WRAP=${CTLD_WRAP:-}
CTLD_WAIT=${CTLD_WAIT:-30}
BACKUP_CTLD=${BACKUP_CTLD:-0}
CTLD_TIMEOUT=${CTLD_TIMEOUT:-$([ "$BACKUP_CTLD" = 1 ] && echo 6 || echo 120)}
CHROOT_PACKAGES=${CHROOT_PACKAGES:-}
MIRROR=${MIRROR:-}
SECURITY_MIRROR=${SECURITY_MIRROR:-}
CTLD_PORT=${CTLD_PORT:-$DEF_CTLD_PORT}
PORT0=${PORT0:-$DEF_PORT0}
CPU_PORT0=${CPU_PORT0:-$DEF_CPU_PORT0}
# slurmdbd: CTLD_PORT+2 (6819, 6829; prefix labs 6889, 6899, 6909, 6929), clear of every port above
DBD_PORT=${DBD_PORT:-$(( ${CTLD_PORT//[^0-9]/} + 2 ))}

PKGS=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins)   # all pinned to SLURM_DEBIAN_VERSION
PLUGDIR=/usr/lib/x86_64-linux-gnu/slurm-wlm                     # Debian's PluginDir
SBIN=/usr/sbin                                                   # where slurmctld is
if [ -n "$SLURM_PREFIX" ]; then
    PKGS=()
    PLUGDIR=$SLURM_PREFIX/lib/slurm     # slurm.conf's PluginDir (the copy inside the chroot)
    SBIN=$SLURM_PREFIX/sbin
elif [ -n "$SLURM_DEBS" ]; then
    # SchedMD's packages, all of SMD_VERSION, installed from the folder SLURM_DEBS; their
    # compiled-in PluginDir (slurm.conf names none, as with Debian's)
    PKGS=(slurm-smd slurm-smd-client slurm-smd-slurmctld slurm-smd-slurmd)
    PLUGDIR=/usr/lib/x86_64-linux-gnu/slurm
fi
MARKER=.nvl72-lab-rootfs                                         # written last into a finished rootfs
TMPROOT=$ROOT.tmp
T0=$(now_us)
trap 'exit 130' INT; trap 'exit 143' TERM     # so that EXIT traps (cleanup) run on a signal too

log() { local e=$(( ($(now_us) - T0) / 100000 )); printf '[lab-up %4d.%ds] %s\n' $((e / 10)) $((e % 10)) "$*"; }
die() { echo "[lab-up] ERROR: $*" >&2; exit 1; }
in_root() { chroot "$ROOT" "${LAB_ENV[@]}" "$@"; }     # LAB_ENV: lab-lib.sh (PATH for SLURM_PREFIX)
# as_host NAME CMD...: in_root in a UTS namespace whose hostname is NAME (BACKUP_CTLD=1)
as_host() { unshare --uts -- sh -c 'hostname "$1" && shift && exec "$@"' sh "$1" chroot "$ROOT" "${LAB_ENV[@]}" "${@:2}"; }
# as_backup_host CMD...: as_host ctl2, in a mount namespace where $VAR/ctl2/{run,log} are its
# $VAR/{run,log} (its own pid file and log; state, spool and jobs are shared)
as_backup_host() {
    unshare --uts --mount -- sh -c 'hostname ctl2 && mount --bind "$1/ctl2/run" "$2$1/run" &&
        mount --bind "$1/ctl2/log" "$2$1/log" && shift 2 && exec chroot "$@"' \
        sh "$VAR" "$ROOT" "$ROOT" "${LAB_ENV[@]}" "$@"
}
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
gb() { printf "gb%0${GBW}d" "$1"; }
cpun() { printf 'cpu%02d' "$1"; }
# range PREFIX FMT A B -> hostlist expression, e.g. gb[001-018] (or gb001 when A = B)
range() {
    if [ "$3" = "$4" ]; then printf "%s$2" "$1" "$3"; else printf "%s[$2-$2]" "$1" "$3" "$4"; fi
}

# ------------------------------------------------------------------------------ 0. checks
[ "$(id -u)" = 0 ] || die "must run as root"
for v in RACKS NPR CPU_NODES WAIT CTLD_WAIT CTLD_PORT PORT0 CPU_PORT0 GROUP_SIZE DBD_PORT DBD_WAIT; do
    is_uint "${!v}" || die "$v must be a non-negative integer (got '${!v}')"
done
[ "$RACKS" -ge 1 ] && [ "$NPR" -ge 1 ] || die "RACKS and NPR must be >= 1"
NNODES=$((RACKS * NPR))
[ "$NNODES" -le 99999 ] || die "at most 99999 gb nodes (RACKS*NPR=$NNODES)"
GBW=3                                       # name width: gb001.., gb0001.. or gb00001..
[ "$NNODES" -le 999 ] || GBW=4
[ "$NNODES" -le 9999 ] || GBW=5
case $CLOUD in 0|1) ;; *) die "CLOUD must be 0 or 1 (got '$CLOUD')" ;; esac
case $ACCOUNTING in 0|1) ;; *) die "ACCOUNTING must be 0 or 1 (got '$ACCOUNTING')" ;; esac
case $WAIT_NODES in 0|1) ;; *) die "WAIT_NODES must be 0 or 1 (got '$WAIT_NODES')" ;; esac
case $SLURMD in 0|1) ;; *) die "SLURMD must be 0 or 1 (got '$SLURMD')" ;; esac
[ "$CPU_NODES" -le 99 ] || die "at most 99 cpu nodes"
NTOTAL=$((NNODES + CPU_NODES))
if [ "$CPU_NODES" -gt 0 ] && [ $((CPU_PORT0 + 1)) -le $((PORT0 + NNODES)) ] && [ $((PORT0 + 1)) -le $((CPU_PORT0 + CPU_NODES)) ]; then
    die "slurmd ports overlap: gb nodes use $((PORT0 + 1))-$((PORT0 + NNODES)), cpu nodes $((CPU_PORT0 + 1))-$((CPU_PORT0 + CPU_NODES)); change PORT0 or CPU_PORT0"
fi
# Every gb node has a Port= in slurm.conf, with or without a slurmd (CLOUD=1 nodes listen on
# nothing, but slurmctld still reads their ports): they must be valid port numbers.
[ $((PORT0 + NNODES)) -le 65535 ] || die "gb node ports $((PORT0 + 1))-$((PORT0 + NNODES)) run past 65535; lower PORT0"
if [ "$ACCOUNTING" = 1 ]; then
    { [ "$DBD_PORT" != "$CTLD_PORT" ] &&
      { [ "$DBD_PORT" -le "$PORT0" ] || [ "$DBD_PORT" -gt $((PORT0 + NNODES)) ]; } &&
      { [ "$CPU_NODES" = 0 ] || [ "$DBD_PORT" -le "$CPU_PORT0" ] || [ "$DBD_PORT" -gt $((CPU_PORT0 + CPU_NODES)) ]; }; } ||
        die "DBD_PORT=$DBD_PORT collides with slurmctld ($CTLD_PORT) or a slurmd port ($((PORT0 + 1))-$((PORT0 + NNODES)), $((CPU_PORT0 + 1))-$((CPU_PORT0 + CPU_NODES)))"
fi
case $TOPO in nvl72|block|tree|none) ;; *) die "TOPO must be nvl72, block, tree or none (got '$TOPO')" ;; esac
if [ "$TOPO" = nvl72 ]; then
    [ -z "$PACKAGE" ] || [ -f "$PACKAGE" ] || die "PACKAGE=$PACKAGE does not exist — build it with scripts/package.sh"
    if [ -n "$SLURM_PREFIX" ]; then build_hint="SLURM_SRC=<the source tree of Slurm $SLURM_VERSION> cargo build --release -p topology_nvl72 -p nvl72-cli --target-dir target/slurm-$SLURM_SERIES"
    elif [ -n "$SLURM_DEBS" ]; then build_hint="SLURM_SRC=<SchedMD's release tree of Slurm $SLURM_VERSION> SLURM_SERIES=$SLURM_SERIES cargo build --release -p topology_nvl72 -p nvl72-cli --target-dir target/slurm-$SLURM_VERSION"
    else build_hint="cargo build --release -p topology_nvl72"; fi
    [ -n "$PACKAGE" ] || [ -f "$PLUGIN" ] || die "plugin $PLUGIN does not exist — build it first: $build_hint (or set PLUGIN=/path/to/libtopology_nvl72.so, or use TOPO=block)"
    [ -n "$PACKAGE" ] || [ -s "$PLUGIN" ] || die "plugin $PLUGIN is empty"
    if [ -n "$TOPOLOGY_TOML" ] && [ "$TOPOLOGY_TOML" != none ]; then [ -f "$TOPOLOGY_TOML" ] || die "TOPOLOGY_TOML=$TOPOLOGY_TOML does not exist"; fi
fi
if [ -n "$SLURM_PREFIX" ]; then
    [ -n "$SLURM_VERSION" ] || die "cannot read the Slurm release of SLURM_PREFIX=$SLURM_PREFIX: no include/slurm/slurm_version.h (and sbin/slurmctld -V does not run here); is it a Slurm installation (make install)?"
    missing=()
    for f in sbin/slurmctld sbin/slurmd sbin/slurmstepd bin/sbatch bin/squeue bin/scontrol bin/sinfo bin/scancel bin/srun; do
        [ -x "$SLURM_PREFIX/$f" ] || missing+=("$f")
    done
    [ -d "$SLURM_PREFIX/lib/slurm" ] || missing+=("lib/slurm/")
    [ ${#missing[@]} = 0 ] || die "SLURM_PREFIX=$SLURM_PREFIX lacks ${missing[*]} (the lab needs the layout of Slurm's make install)"
    [ -z "$PACKAGE" ] || die "PACKAGE (a .deb for Debian's Slurm) does not apply to SLURM_PREFIX=$SLURM_PREFIX; use PLUGIN=<libtopology_nvl72.so built for Slurm $SLURM_VERSION>"
    if [ "$ACCOUNTING" = 1 ]; then
        # ACCOUNTING=1 runs the installation's own slurmdbd with its MySQL storage plugin
        # (Slurm builds that plugin only when configure finds MariaDB/MySQL's client library).
        missing=()
        for f in sbin/slurmdbd bin/sacct bin/sacctmgr; do [ -x "$SLURM_PREFIX/$f" ] || missing+=("$f"); done
        for p in accounting_storage_mysql accounting_storage_slurmdbd; do
            [ -f "$SLURM_PREFIX/lib/slurm/$p.so" ] || missing+=("lib/slurm/$p.so")
        done
        [ ${#missing[@]} = 0 ] || die "ACCOUNTING=1: the Slurm installation $SLURM_PREFIX lacks ${missing[*]}.$(
            [[ " ${missing[*]} " = *" lib/slurm/accounting_storage_mysql.so "* ]] && printf '%s' "
  Without accounting_storage_mysql.so its slurmdbd cannot store anything: Slurm builds that plugin only when
  configure finds the MariaDB/MySQL client library (mysql_config).  Rebuild with it (Debian: apt-get install
  libmariadb-dev, then configure, make, make install), or run ACCOUNTING=0.")"
    fi
fi
if [ -n "$SLURM_DEBS" ]; then
    # SchedMD's packages: one version, the four the lab runs (and slurmdbd for accounting)
    smd_pkgs=("${PKGS[@]}"); [ "$ACCOUNTING" = 0 ] || smd_pkgs+=(slurm-smd-slurmdbd)
    missing=()
    for p in "${smd_pkgs[@]}"; do
        [ -f "$SLURM_DEBS/${p}_${SMD_VERSION}_amd64.deb" ] || missing+=("${p}_${SMD_VERSION}_amd64.deb")
    done
    [ ${#missing[@]} = 0 ] || die "SLURM_DEBS=$SLURM_DEBS lacks ${missing[*]} (SchedMD's packages of one release, as dpkg-buildpackage writes them; docs/install.md)"
fi
# The pin the plugin is built against: slurm-headers/pins/<version> (checked when present).
pinfile=$LAB_REPO/slurm-headers/pins/$SLURM_VERSION
if [ -z "$SLURM_PREFIX" ] && [ -z "$SLURM_DEBS" ] && [ -r "$pinfile" ]; then
    # shellcheck disable=SC1090
    pin=$(. "$pinfile" && echo "${SLURM_DEBIAN_VERSION:-}")
    [ -z "$pin" ] || [ "$pin" = "$SLURM_DEBIAN_VERSION" ] ||
        die "${pinfile#"$LAB_REPO"/} pins $pin but lab-up.sh installs $SLURM_DEBIAN_VERSION for SLURM_SERIES=$SLURM_SERIES; update it in the case at the top of $0"
fi
for c in chroot mknod mountpoint apt-get; do command -v $c >/dev/null || die "$c not found"; done

lab_lock    # one lab-up/lab-down at a time per LAB

# ------------------------------------------------------------------------------ 1. rootfs
# Archive URIs from the host's apt sources: deb822 "URIs:" lines, then one-line "deb" entries.
# The Debian archives: MIRROR / SECURITY_MIRROR, else this machine's apt sources (apt-mirrors.sh).
archive_url() { apt_mirror || die "set MIRROR=<url>"; }

ensure_debootstrap() {
    command -v debootstrap >/dev/null && return 0
    # Several labs coming up at once on a new machine (nvl72 replay starts three) would race
    # for apt's lock: one installs, the others wait for it and then find debootstrap there.
    exec 8>/var/lock/nvl72-lab-up-debootstrap.lock
    flock 8
    if command -v debootstrap >/dev/null; then exec 8>&-; return 0; fi
    # If the host's apt sources also list a newer release at the same priority, pin the host
    # release's own debootstrap version explicitly.
    local codename v
    codename=$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")
    v=$(apt-cache madison debootstrap 2>/dev/null |
        awk -v c="$codename" 'c != "" && index($0, c "/main") && $0 !~ /backports/ {print $3; exit}')
    log "installing debootstrap${v:+ $v} on the host"
    local wait=(-o DPkg::Lock::Timeout=300)   # another apt on the host (not a lab) may hold it
    apt-get "${wait[@]}" install -y -q --no-install-recommends "debootstrap${v:+=$v}" ||
        { apt-get "${wait[@]}" update -q && apt-get "${wait[@]}" install -y -q --no-install-recommends "debootstrap${v:+=$v}"; } ||
        die "could not install debootstrap"
    exec 8>&-
}

# smd_apt_install DIR PKG...: apt-get install in the chroot DIR, where a PKG of SchedMD's
# (slurm-smd*) is its .deb from SLURM_DEBS (copied into DIR/tmp for the install) and any other
# a package of the mirror.
smd_apt_install() {
    local d=$1 p args=() rc=0
    shift
    rm -rf "$d/tmp/nvl72-smd-debs"; mkdir -p "$d/tmp/nvl72-smd-debs"
    for p in "$@"; do
        case $p in
            slurm-smd*) cp "$SLURM_DEBS/${p}_${SMD_VERSION}_amd64.deb" "$d/tmp/nvl72-smd-debs/" || return 1
                        args+=("/tmp/nvl72-smd-debs/${p}_${SMD_VERSION}_amd64.deb") ;;
            *) args+=("$p") ;;
        esac
    done
    chroot "$d" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        --allow-downgrades "${args[@]}" || rc=$?
    rm -rf "$d/tmp/nvl72-smd-debs"
    return "$rc"
}

# install_slurm DIR: pinned Slurm + munge (+ python3 for tests) into the chroot DIR.
install_slurm() {
    local d=$1 mirror found p v bad=""
    mirror=$(archive_url)
    if [ "$SUITE" = sid ]; then
        # sid has no -updates or -security suites.  Its Release file on a mirror may be past
        # its Valid-Until (an expired sid Release was seen on Debian's main archive), so apt in this
        # chroot does not check it (CHROOT_PACKAGES, PACKAGE's dependencies included).
        echo "deb $mirror $SUITE main" > "$d/etc/apt/sources.list"
        echo 'Acquire::Check-Valid-Until "false";' > "$d/etc/apt/apt.conf.d/99nvl72-lab"
    else
        cat > "$d/etc/apt/sources.list" <<EOF
deb $mirror $SUITE main
deb $mirror $SUITE-updates main
deb $(apt_security_mirror) $SUITE-security main
EOF
    fi
    printf '#!/bin/sh\nexit 101\n' > "$d/usr/sbin/policy-rc.d"; chmod +x "$d/usr/sbin/policy-rc.d"
    log "apt-get update in the chroot ($mirror $SUITE)"
    chroot "$d" apt-get update -q >/dev/null || die "apt-get update failed inside the chroot $d"
    if [ -n "$SLURM_PREFIX" ]; then
        # No Debian Slurm: the installation at SLURM_PREFIX is copied in (sync_prefix).
        log "installing munge, python3 (Slurm is the installation at $SLURM_PREFIX)"
        chroot "$d" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            munge python3 >/dev/null || die "apt-get install munge python3 failed inside the chroot $d"
        chroot "$d" apt-get clean
        return 0
    fi
    if [ -n "$SLURM_DEBS" ]; then
        # SchedMD's packages from the folder: apt installs them as local files and takes their
        # dependencies (libraries, munge) from the mirror.
        log "installing SchedMD's ${PKGS[*]} $SMD_VERSION from $SLURM_DEBS, munge, python3"
        smd_apt_install "$d" "${PKGS[@]}" munge python3 >"$LAB/apt-smd.log" 2>&1 ||
            die "apt-get install of SchedMD's packages $SMD_VERSION failed inside the chroot $d (log: $LAB/apt-smd.log): $(tail -n 5 "$LAB/apt-smd.log")"
        for p in "${PKGS[@]}"; do
            # shellcheck disable=SC2016  # ${Version} is dpkg-query's, not ours
            v=$(chroot "$d" dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
            [ "$v" = "$SMD_VERSION" ] || bad="$bad $p=$v"
        done
        [ -z "$bad" ] || die "wrong Slurm packages installed in $d:$bad (want SchedMD's $SMD_VERSION)"
        chroot "$d" apt-get clean
        return 0
    fi
    found=$(chroot "$d" apt-cache madison slurmctld | awk -F'|' '{gsub(/ /, "", $2); print $2}' | sort -u | paste -sd' ')
    grep -qxF -- "$SLURM_DEBIAN_VERSION" <(tr ' ' '\n' <<<"$found") ||
        die "slurmctld $SLURM_DEBIAN_VERSION is not available in the chroot's apt (found: ${found:-none}).
  The plugin is built for exactly Slurm $SLURM_VERSION; Slurm refuses plugins of another micro version.
  Bump the pin (slurm-headers/pins/) and SLURM_DEBIAN_VERSION in $0 together (and rebuild the plugin).$(
  [ "$SUITE" = sid ] && printf '\n  sid keeps only its newest version: MIRROR=https://snapshot.debian.org/archive/debian/<YYYYMMDDTHHMMSSZ>/ gives an older one.')"
    log "installing ${PKGS[*]} = $SLURM_DEBIAN_VERSION, munge, python3"
    chroot "$d" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        --allow-downgrades "${PKGS[@]/%/=$SLURM_DEBIAN_VERSION}" munge python3 >/dev/null ||
        die "apt-get install of Slurm $SLURM_DEBIAN_VERSION failed inside the chroot $d"
    for p in "${PKGS[@]}"; do
        # shellcheck disable=SC2016  # ${Version} is dpkg-query's, not ours
        v=$(chroot "$d" dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
        [ "$v" = "$SLURM_DEBIAN_VERSION" ] || bad="$bad $p=$v"
    done
    [ -z "$bad" ] || die "wrong Slurm packages installed in $d:$bad (want $SLURM_DEBIAN_VERSION)"
    chroot "$d" apt-get clean
}

cleanup_tmproot() {
    [ -e "$TMPROOT" ] || return 0
    unmount_all "$TMPROOT" || die "cannot unmount everything below $TMPROOT:
$(mounts_under "$TMPROOT")"
    rm -rf --one-file-system "$TMPROOT"
}

# The marker: Debian's Slurm version, the installation (SLURM_PREFIX) the lab copies in, or the
# version of SchedMD's packages (SLURM_DEBS).
if [ -n "$SLURM_PREFIX" ]; then MARKER_TEXT="prefix=$SLURM_PREFIX"
elif [ -n "$SLURM_DEBS" ]; then MARKER_TEXT="smd=$SMD_VERSION"
else MARKER_TEXT="slurm=$SLURM_DEBIAN_VERSION"; fi
rootfs_ok() { [ "$(cat "$ROOT/$MARKER" 2>/dev/null)" = "$MARKER_TEXT" ]; }
# A LAB holds one Slurm series: never turn a trixie/24.11 rootfs into a sid/26.05 one (or back)
# in place.  The marker names the version; a rootfs without one names its suite in sources.list.
# Nor a lab of Debian's Slurm into one of an installation (SLURM_PREFIX) or of SchedMD's
# packages (SLURM_DEBS), or of another one.
other_series() {
    local m p s suite
    p=$(sed -n 's/^prefix=//p' "$ROOT/$MARKER" 2>/dev/null)
    m=$(sed -n 's/^slurm=//p' "$ROOT/$MARKER" 2>/dev/null)
    s=$(sed -n 's/^smd=//p' "$ROOT/$MARKER" 2>/dev/null)
    if [ -n "$SLURM_DEBS" ]; then
        [ -n "$s" ] && { echo "SchedMD's packages $s"; return 0; }      # another version
        [ -n "$p" ] && { echo "the lab of the Slurm installation $p (SLURM_PREFIX)"; return 0; }
        [ -n "$m" ] && { echo "Debian's Slurm $m"; return 0; }
        # no marker: an install in place that was interrupted (slurm-smd known to dpkg) goes on
        [ -e "$ROOT/usr/sbin/slurmctld" ] && [ ! -e "$ROOT/var/lib/dpkg/info/slurm-smd.list" ] &&
            { echo "a Slurm that is not SchedMD's packages in /usr/sbin"; return 0; }
        return 1
    elif [ -n "$s" ]; then
        echo "SchedMD's packages $s (SLURM_DEBS)"; return 0
    fi
    if [ -n "$SLURM_PREFIX" ]; then
        [ -n "$p" ] && [ "$p" != "$SLURM_PREFIX" ] && { echo "the lab of the Slurm installation $p"; return 0; }
        [ -n "$m" ] && { echo "Debian's Slurm $m"; return 0; }
        [ -e "$ROOT/usr/sbin/slurmctld" ] && { echo "Debian's Slurm"; return 0; }
    elif [ -n "$p" ]; then
        echo "the lab of the Slurm installation $p (SLURM_PREFIX)"; return 0
    fi
    if [ -n "$m" ]; then
        [[ $m =~ ^[0-9]+\.[0-9]+ ]] && [ "${BASH_REMATCH[0]}" != "$SLURM_SERIES" ] && { echo "Slurm $m"; return 0; }
        return 1
    fi
    suite=$(awk '$1 == "deb" { print ($2 ~ /^\[/ ? $4 : $3); exit }' "$ROOT/etc/apt/sources.list" 2>/dev/null)
    [ -n "$suite" ] && [ "$suite" != "$SUITE" ] && { echo "Debian $suite"; return 0; }
    return 1
}

if ! rootfs_ok; then
    if [ -d "$ROOT" ] && holds=$(other_series); then
        [ -z "$SLURM_PREFIX" ] || die "$ROOT holds $holds, not the lab of SLURM_PREFIX=$SLURM_PREFIX.  Use another LAB (the default for an installation of $SLURM_SERIES is used when LAB is unset)"
        [ -z "$SLURM_DEBS" ] || die "$ROOT holds $holds, not SchedMD's packages $SMD_VERSION (SLURM_DEBS=$SLURM_DEBS).  Use another LAB (the default for SchedMD's packages of $SLURM_SERIES is used when LAB is unset), or remove this one (lab-down.sh, then rm -rf --one-file-system $ROOT)"
        die "$ROOT holds $holds, not SLURM_SERIES=$SLURM_SERIES ($SUITE).  Use another LAB (the default for $SLURM_SERIES is used when LAB is unset), or the matching SLURM_SERIES"
    fi
    if [ -d "$ROOT" ]; then
        # A rootfs without our marker (built by an older recipe) or with another Slurm version:
        # (re)install the pinned packages in place.
        [ -x "$ROOT/usr/bin/apt-get" ] && [ -x "$ROOT/bin/sh" ] ||
            die "$ROOT exists but is not a usable rootfs; remove it: LAB=$LAB $LAB_SCRIPTS/lab-down.sh && rm -rf $ROOT"
        if [ -n "$SLURM_PREFIX" ]; then log "rootfs $ROOT has no $MARKER for $SLURM_PREFIX: installing munge and python3 in place"
        elif [ -n "$SLURM_DEBS" ]; then log "rootfs $ROOT has no $MARKER for SchedMD's packages $SMD_VERSION: installing them in place"
        else log "rootfs $ROOT has no $MARKER for Slurm $SLURM_DEBIAN_VERSION: installing the pinned packages in place"; fi
        if alive "$VAR/run/slurmctld.pid" || compgen -G "$VAR/run/slurmd-*.pid" >/dev/null; then
            "$LAB_SCRIPTS/lab-down.sh" --keep-mounts
        fi
        mount_chroot "$ROOT" "$VAR"
        install_slurm "$ROOT"
        echo "$MARKER_TEXT" > "$ROOT/$MARKER"
    elif [ -n "$ROOTFS_FROM" ] && [ "$(cat "$ROOTFS_FROM/rootfs/$MARKER" 2>/dev/null)" = "$MARKER_TEXT" ]; then
        # Another lab's finished rootfs of the same Slurm: a copy takes seconds, a debootstrap
        # minutes.  Its mounts (proc, sys, dev, its var) are not copied (-x); the next step
        # mounts this lab's own.
        tb=$(now_us)
        log "copying the rootfs of $ROOTFS_FROM (ROOTFS_FROM) to $TMPROOT"
        cleanup_tmproot
        mkdir -p "$LAB"
        cp -ax "$ROOTFS_FROM/rootfs" "$TMPROOT" || die "cannot copy $ROOTFS_FROM/rootfs to $TMPROOT"
        # -x skips other filesystems only; a bind mount of the same one (the other lab's var,
        # while it runs) was copied as files: empty those folders again.
        src=$(readlink -m "$ROOTFS_FROM/rootfs")
        for m in $(mounts_under "$src"); do
            [ "$m" = "$src" ] || [ ! -d "$TMPROOT${m#"$src"}" ] || find "$TMPROOT${m#"$src"}" -mindepth 1 -delete
        done
        mkdir -p "$TMPROOT/proc" "$TMPROOT/sys" "$TMPROOT/dev"
        mv -T "$TMPROOT" "$ROOT"
        log "rootfs ready: $ROOT, copied ($(( ($(now_us) - tb) / 1000000 )) s)"
    else
        tb=$(now_us)
        log "building rootfs in $TMPROOT (renamed to $ROOT when complete)"
        cleanup_tmproot
        ensure_debootstrap
        mkdir -p "$LAB"
        trap 'unmount_all "$TMPROOT" >/dev/null 2>&1 || true' EXIT
        log "debootstrap --variant=minbase $SUITE from $(archive_url) (about 20-60 s)"
        debootstrap --variant=minbase "$SUITE" "$TMPROOT" "$(archive_url)" > "$LAB/debootstrap.log" 2>&1 ||
            { tail -n 20 "$LAB/debootstrap.log" >&2; die "debootstrap failed; full log: $LAB/debootstrap.log"; }
        mount_chroot "$TMPROOT"
        install_slurm "$TMPROOT"
        unmount_all "$TMPROOT" || die "cannot unmount below $TMPROOT"
        trap - EXIT
        echo "$MARKER_TEXT" > "$TMPROOT/$MARKER"
        mv -T "$TMPROOT" "$ROOT"
        log "rootfs ready: $ROOT ($(( ($(now_us) - tb) / 1000000 )) s, $(du -sh --one-file-system "$ROOT" | cut -f1))"
    fi
fi
[ -e "$TMPROOT" ] && cleanup_tmproot    # leftover from an interrupted build
mount_chroot "$ROOT" "$VAR"

# Extra packages (CHROOT_PACKAGES), e.g. valgrind for CTLD_WRAP; only the missing ones.
missing=()
for p in $CHROOT_PACKAGES; do
    # shellcheck disable=SC2016  # ${Status} is dpkg-query's, not ours
    in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} in the chroot (CHROOT_PACKAGES)"
    in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
        { in_root apt-get update -q >/dev/null &&
          in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } ||
        die "apt-get install ${missing[*]} failed inside the chroot"
    in_root apt-get clean
fi
# ACCOUNTING=1: MariaDB, and Debian's slurmdbd with its MySQL storage plugin (accounting_storage_mysql.so
# is in slurm-wlm-mysql-plugin, a dependency of slurmdbd) pinned to the lab's Slurm; only what is
# missing or of another version.  SLURM_PREFIX: the installation brings slurmdbd (checked above).
# SLURM_DEBS: SchedMD's slurm-smd-slurmdbd from the folder (the MySQL plugin is in slurm-smd).
if [ "$ACCOUNTING" = 1 ]; then
    acct_pkgs=(mariadb-server)
    if [ -n "$SLURM_DEBS" ]; then acct_pkgs+=("slurm-smd-slurmdbd=$SMD_VERSION")
    elif [ -z "$SLURM_PREFIX" ]; then acct_pkgs+=("slurmdbd=$SLURM_DEBIAN_VERSION" "slurm-wlm-mysql-plugin=$SLURM_DEBIAN_VERSION"); fi
    missing=()
    for p in "${acct_pkgs[@]}"; do
        # shellcheck disable=SC2016  # ${Status} ${Version} are dpkg-query's, not ours
        st=$(in_root dpkg-query -W -f='${Status} ${Version}' "${p%%=*}" 2>/dev/null || true)
        case $p in
            *=*) [ "$st" = "install ok installed ${p#*=}" ] || missing+=("$p") ;;
            *) [[ $st = "install ok installed "* ]] || missing+=("$p") ;;
        esac
    done
    if [ ${#missing[@]} -gt 0 ]; then
        log "ACCOUNTING=1: installing ${missing[*]} in the chroot"
        # policy-rc.d (exit 101) keeps the packages' scripts from starting mariadb or slurmdbd
        if [ -n "$SLURM_DEBS" ]; then
            # slurm-smd-slurmdbd=V: its .deb from SLURM_DEBS
            smd_apt_install "$ROOT" "${missing[@]%%=*}" >"$LAB/apt-accounting.log" 2>&1 ||
                { in_root apt-get update -q >/dev/null && smd_apt_install "$ROOT" "${missing[@]%%=*}" >"$LAB/apt-accounting.log" 2>&1; } ||
                die "apt-get install ${missing[*]} failed inside the chroot (log: $LAB/apt-accounting.log): $(tail -n 5 "$LAB/apt-accounting.log")"
        else
        in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends --allow-downgrades "${missing[@]}" >"$LAB/apt-accounting.log" 2>&1 ||
            { in_root apt-get update -q >/dev/null &&
              in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends --allow-downgrades "${missing[@]}" >"$LAB/apt-accounting.log" 2>&1; } ||
            die "apt-get install ${missing[*]} failed inside the chroot (log: $LAB/apt-accounting.log): $(tail -n 5 "$LAB/apt-accounting.log")"
        fi
        in_root apt-get clean
    fi
fi
# SLURM_DEBS: the lab runs one slurmd per tray on one host, which needs a build with
# multiple-slurmd support (SchedMD's debian/rules does not configure it; docs/install.md).
# auth/munge carries this message only in such a build.
if [ -n "$SLURM_DEBS" ] && ! grep -qF 'expected in multiple slurmd mode' "$ROOT$PLUGDIR/auth_munge.so"; then
    die "SchedMD's packages in SLURM_DEBS=$SLURM_DEBS were built without multiple-slurmd support: the lab runs one slurmd per tray on one host.  Rebuild them with --enable-multiple-slurmd added to dh_auto_configure in debian/rules (docs/install.md, \"Building SchedMD's packages by hand\"), then remove the lab's rootfs"
fi
read -r -a ctld_wrap <<<"$CTLD_WRAP"
if [ ${#ctld_wrap[@]} -gt 0 ]; then
    # shellcheck disable=SC2016  # $1 expands in the chroot's sh
    in_root sh -c 'command -v "$1"' sh "${ctld_wrap[0]}" >/dev/null ||
        die "CTLD_WRAP: '${ctld_wrap[0]}' is not in the chroot; add its package to CHROOT_PACKAGES (e.g. CHROOT_PACKAGES=valgrind)"
fi

# SLURM_PREFIX: the installation is copied into the chroot at the same path (its binaries have
# the path compiled in); the site's own folder is only read, so nothing of the lab (the plugin
# under test) ever lands in it.  The copy is redone when the installation changes (a
# fingerprint of its file names, sizes, times and modes; any topology_nvl72.so of the site's
# own is left out and replaced by PLUGIN).  Then every binary, libslurm and the plugins the
# lab's slurm.conf loads must find their libraries in the chroot (ldd).
prefix_changed=0
if [ -n "$SLURM_PREFIX" ]; then
    fingerprint() {
        (cd "$SLURM_PREFIX" && find . -path ./lib/slurm/topology_nvl72.so -prune -o -printf '%p %s %T@ %m %l\n') |
            LC_ALL=C sort | sha256sum | cut -d' ' -f1
    }
    fp=$(fingerprint)
    copy=$ROOT$SLURM_PREFIX
    if [ "$(cat "$ROOT/var/lib/nvl72-prefix.copied" 2>/dev/null)" != "$fp" ] || [ ! -x "$copy/sbin/slurmctld" ]; then
        log "copying the Slurm installation $SLURM_PREFIX ($SLURM_VERSION, $(du -sh "$SLURM_PREFIX" | cut -f1)) into the chroot"
        rm -rf --one-file-system "$copy.lab-new"
        mkdir -p "$copy.lab-new"
        cp -a "$SLURM_PREFIX/." "$copy.lab-new/" || die "cannot copy $SLURM_PREFIX to $copy.lab-new"
        rm -f "$copy.lab-new/lib/slurm/topology_nvl72.so"
        # Daemons still running from the old copy are restarted below (prefix_changed).
        rm -rf --one-file-system "$copy.lab-old"
        [ -e "$copy" ] && mv -T "$copy" "$copy.lab-old"
        mv -T "$copy.lab-new" "$copy"
        rm -rf --one-file-system "$copy.lab-old"
        [ "$(fingerprint)" = "$fp" ] || die "the Slurm installation $SLURM_PREFIX changed while it was copied; run lab-up.sh again"
        echo "$fp" > "$ROOT/var/lib/nvl72-prefix.copied"
        prefix_changed=1
    fi
    # The plugins this lab's slurm.conf names (topology/nvl72 is checked once installed).
    # (task/none and jobacct_gather/none are built into Slurm, no .so)
    need=(auth_munge cred_munge select_cons_tres gres_gpu proctrack_linuxproc sched_backfill)
    case $TOPO in block|tree) need+=("topology_$TOPO") ;; esac
    [ "$ACCOUNTING" = 0 ] || need+=(accounting_storage_slurmdbd accounting_storage_mysql)
    missing=()
    for p in "${need[@]}"; do [ -f "$copy/lib/slurm/$p.so" ] || missing+=("$p.so"); done
    [ ${#missing[@]} = 0 ] || die "the Slurm installation $SLURM_PREFIX has no ${missing[*]} in lib/slurm/; the lab's slurm.conf needs them (auth/munge, cred/munge, select/cons_tres, gres/gpu, proctrack/linuxproc, sched/backfill, and topology/block or tree for TOPO=block|tree)"
    if [ "$(cat "$ROOT/var/lib/nvl72-prefix.checked" 2>/dev/null)" != "$fp $TOPO $ACCOUNTING $CHROOT_PACKAGES" ]; then
        in_root sh -c 'command -v ldd' >/dev/null || die "no ldd in the chroot $ROOT (libc-bin); cannot check the installation's libraries"
        elfs=("$copy"/sbin/* "$copy"/bin/* "$copy"/lib/libslurm*.so*)
        for p in "${need[@]}"; do elfs+=("$copy/lib/slurm/$p.so"); done
        # What the tests load too, when the installation has it: the serializers (`scontrol
        # --json`, which nvl72 status reads; topology.yaml) and, with ACCOUNTING=1, the
        # MariaDB storage of its slurmdbd. A library missing there fails as late as a test.
        optional=(serializer_json serializer_yaml)
        [ "$ACCOUNTING" != 1 ] || optional+=(accounting_storage_mysql)
        for p in "${optional[@]}"; do
            [ ! -f "$copy/lib/slurm/$p.so" ] || elfs+=("$copy/lib/slurm/$p.so")
        done
        # ldd inside the chroot: "libfoo.so.1 => not found"
        unresolved=$(
            for f in "${elfs[@]}"; do
                [ -f "$f" ] && [ ! -L "$f" ] || continue
                m=""; IFS= read -r -N 4 m < "$f" 2>/dev/null || true
                [ "$m" = $'\x7fELF' ] || continue
                in_root ldd "${f#"$ROOT"}" 2>/dev/null | awk -v f="${f#"$copy"/}" '/=> not found/ { print "  " $1 "  (needed by " f ")" }'
            done | sort -u | head -n 30)
        [ -z "$unresolved" ] || die "the Slurm installation $SLURM_PREFIX links against libraries that the lab's chroot ($SUITE minbase + munge) lacks:
$unresolved
  Add the Debian $SUITE packages that hold them: CHROOT_PACKAGES='<package> ...' (e.g. libjson-c5, libyaml-0-2, libmariadb3, libhwloc15)"
        echo "$fp $TOPO $ACCOUNTING $CHROOT_PACKAGES" > "$ROOT/var/lib/nvl72-prefix.checked"
    fi
    mkdir -p "$ROOT/etc/slurm"
fi

# ------------------------------------------------------------------------------ 2. configs
mkdir -p "$VAR"/{state,log,run,spool,jobs,fakedev}
for i in 0 1 2 3; do
    [ -c "$VAR/fakedev/nvidia$i" ] || { rm -f "$VAR/fakedev/nvidia$i"; mknod "$VAR/fakedev/nvidia$i" c 195 $i; }
done
printf '127.0.0.1 localhost %s\n::1 localhost ip6-localhost\n' "$(hostname)" > "$ROOT/etc/hosts"
[ "$BACKUP_CTLD" = 1 ] && printf '127.0.0.1 ctl1\n127.0.0.2 ctl2\n' >> "$ROOT/etc/hosts"

CONF=$(mktemp -d)
trap 'rm -rf "$CONF"' EXIT
GB_ALL=$(range gb "%0${GBW}d" 1 "$NNODES")
CPU_ALL=""; [ "$CPU_NODES" -gt 0 ] && CPU_ALL=$(range cpu %02d 1 "$CPU_NODES")
rack_nodes() { range gb "%0${GBW}d" $(( ($1 - 1) * NPR + 1 )) $(( $1 * NPR )); }
block_sizes() { local s=$NPR bs=""; while [ "$s" -le "$NNODES" ]; do bs="${bs:+$bs,}$s"; s=$((s * 2)); done; echo "$bs"; }

# The one per-series difference in slurm.conf: every job start must be in slurmctld.log with
# its nodes (the e2e tests and anyone debugging a placement read it).  24.11 logs a backfill
# start at info ("sched/backfill: _start_job: Started JobId=N in gpu on gb[..]"); 26.05 logs
# it only under DebugFlags=HetJob at verbose ("... _start_job: HETJOB: Started JobId=N ...").
# The main scheduler's "sched: Allocate JobId=N NodeList=..." is at info in both.
# 25.05 and 25.11 log it at info as 24.11 does; 26.11 as 26.05.
case $SLURM_SERIES in
    24.11|25.05|25.11) CTLD_LOGGING="SlurmctldDebug=info" ;;
    26.05|26.11) CTLD_LOGGING=$'SlurmctldDebug=verbose\n# backfill starts are logged only with this flag in 26.05\nDebugFlags=HetJob' ;;
esac

{
cat <<EOF
# generated by lab-up.sh  LAB=$LAB RACKS=$RACKS NPR=$NPR CPU_NODES=$CPU_NODES TOPO=$TOPO
ClusterName=lab
EOF
if [ "$BACKUP_CTLD" = 1 ]; then
    cat <<EOF
# BACKUP_CTLD=1: two controllers, each binding its own address
SlurmctldHost=ctl1(127.0.0.1)
SlurmctldHost=ctl2(127.0.0.2)
CommunicationParameters=NoCtldInAddrAny
SlurmctldTimeout=$CTLD_TIMEOUT
EOF
else
    echo "SlurmctldHost=$(hostname)(127.0.0.1)"
fi
# SLURM_PREFIX: the installation's plugins (its copy in the chroot; Debian's needs no line)
[ -z "$SLURM_PREFIX" ] || echo "PluginDir=$PLUGDIR"
cat <<EOF
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
StateSaveLocation=$VAR/state
SlurmdSpoolDir=$VAR/spool/slurmd-%n
SlurmctldPidFile=$VAR/run/slurmctld.pid
SlurmdPidFile=$VAR/run/slurmd-%n.pid
SlurmctldLogFile=$VAR/log/slurmctld.log
SlurmdLogFile=$VAR/log/slurmd-%n.log
$CTLD_LOGGING
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
# trust slurm.conf for CPUs/memory instead of the 2-core host
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=300
MessageTimeout=30
SchedulerParameters=$SCHED_PARAMS
EOF
if [ "$ACCOUNTING" = 1 ]; then
    # No AccountingStorageEnforce: jobs run without associations (no users or accounts added)
    cat <<EOF
# ACCOUNTING=1: slurmdbd in the chroot, MariaDB behind it
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStorageTRES=gres/gpu
EOF
fi
if [ "$CLOUD" = 1 ]; then
    # Power saving with no-op programs: cloud nodes start powered down (idle~); a job placed
    # on them "resumes" them (nothing runs) and stays CONFIGURING until ResumeTimeout.
    cat <<EOF
# CLOUD=1: gb nodes are cloud nodes without a slurmd
ResumeProgram=/bin/true
SuspendProgram=/bin/true
ResumeTimeout=36000
SuspendTimeout=30
SuspendTime=36000
ResumeRate=0
SuspendRate=0
PrivateData=cloud
EOF
    [ "$CPU_NODES" -gt 0 ] && echo "SuspendExcNodes=$CPU_ALL"
fi
case $TOPO in
    nvl72) echo "TopologyPlugin=topology/nvl72" ;;
    block) echo "TopologyPlugin=topology/block" ;;
    tree)  echo "TopologyPlugin=topology/tree" ;;
    none)  echo "TopologyPlugin=topology/default" ;;
esac
# NODE_ORDER=reverse lists the racks last to first, so Slurm's node table (and its default
# selection) walks them in the wrong order unless a plugin ranks the nodes.
GB_STATE=UNKNOWN; [ "$CLOUD" = 1 ] && GB_STATE=CLOUD
rack_order() { if [ "$NODE_ORDER" = reverse ]; then seq "$RACKS" -1 1; else seq 1 "$RACKS"; fi; }
for r in $(rack_order); do
    a=$(( (r - 1) * NPR + 1 )); b=$(( r * NPR ))
    echo "NodeName=$(rack_nodes "$r") NodeHostName=$(hostname) NodeAddr=127.0.0.1 Port=$(range '' %d $((PORT0 + a)) $((PORT0 + b))) Sockets=2 CoresPerSocket=72 ThreadsPerCore=1 RealMemory=800000 Gres=gpu:4 State=$GB_STATE"
done
if [ "$CPU_NODES" -gt 0 ]; then
    echo "NodeName=$CPU_ALL NodeHostName=$(hostname) NodeAddr=127.0.0.1 Port=$(range '' %d $((CPU_PORT0 + 1)) $((CPU_PORT0 + CPU_NODES))) Sockets=2 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=256000 State=UNKNOWN"
fi
echo "PartitionName=gpu Nodes=$GB_ALL Default=YES MaxTime=INFINITE State=UP"
[ "$CPU_NODES" -gt 0 ] && echo "PartitionName=cpu Nodes=$CPU_ALL MaxTime=INFINITE State=UP"
if [ -n "$EXTRA_CONF" ]; then echo "# EXTRA_CONF"; printf '%s\n' "$EXTRA_CONF"; fi
} > "$CONF/slurm.conf"

cat > "$CONF/gres.conf" <<EOF
AutoDetect=off
NodeName=$GB_ALL Name=gpu File=$VAR/fakedev/nvidia[0-3]
EOF
echo "CgroupPlugin=disabled" > "$CONF/cgroup.conf"

# ACCOUNTING=1: slurmdbd.conf (mode 600, owned by SlurmUser: slurmdbd refuses it otherwise).
# StorageHost=localhost makes the MariaDB client library use its built-in socket (Slurm passes
# none; 26.05 would also take StorageHost=unix:/path), where mariadbd is started below; user
# root is let in by MariaDB's unix_socket authentication.
if [ "$ACCOUNTING" = 1 ]; then
    {
        echo "# generated by lab-up.sh  LAB=$LAB"
        [ -z "$SLURM_PREFIX" ] || echo "PluginDir=$PLUGDIR"
        cat <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$VAR/log/slurmdbd.log
PidFile=$VAR/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
EOF
    } > "$CONF/slurmdbd.conf"
fi

{
    echo "# generated by lab-up.sh"
    if [ "$TOPO" = tree ]; then
        for r in $(seq 1 "$RACKS"); do echo "SwitchName=rack$r Nodes=$(rack_nodes "$r")"; done
        sw="rack$( [ "$RACKS" = 1 ] && echo 1 || echo "[1-$RACKS]")"
        [ "$CPU_NODES" -gt 0 ] && { echo "SwitchName=cpusw Nodes=$CPU_ALL"; sw="$sw,cpusw"; }
        echo "SwitchName=spine Switches=$sw"
    else
        # topology/block needs it; topology/nvl72 ignores it when topology.toml exists.
        for r in $(seq 1 "$RACKS"); do echo "BlockName=rack$r Nodes=$(rack_nodes "$r")"; done
        echo "BlockSizes=$(block_sizes)"
    fi
} > "$CONF/topology.conf"

if [ "$TOPO" = nvl72 ] && [ "$TOPOLOGY_TOML" != none ]; then
    if [ -n "$TOPOLOGY_TOML" ]; then
        cp "$TOPOLOGY_TOML" "$CONF/topology.toml"
    else
        {
            echo "# generated by lab-up.sh"
            echo "trays_per_rack = $NPR"
            echo "gpus_per_tray = 4"
            if [ -n "$POLICY" ]; then printf '\n[policy]\n%s\n' "$POLICY"; fi
            for r in $(seq 1 "$RACKS"); do
                printf '\n[[rack]]\nname = "rack%d"\nnodes = "%s"\n' "$r" "$(rack_nodes "$r")"
                if [ "$GROUP_SIZE" -gt 0 ]; then printf 'group = "row%d"\n' $(( (r - 1) / GROUP_SIZE + 1 )); fi
            done
        } > "$CONF/topology.toml"
    fi
fi

# install SRC DEST: atomically (copy + rename), so running daemons never see a half-written file
install_file() { cp "$1" "$2.lab-new" && chmod 644 "$2.lab-new" && mv -f "$2.lab-new" "$2"; }
changed=()
files=(slurm.conf gres.conf cgroup.conf topology.conf)
if [ "$TOPO" = nvl72 ] && [ "$TOPOLOGY_TOML" != none ]; then
    files+=(topology.toml)
elif [ -e "$ROOT/etc/slurm/topology.toml" ]; then
    rm -f "$ROOT/etc/slurm/topology.toml"; changed+=("-topology.toml")
fi
for f in "${files[@]}"; do
    cmp -s "$CONF/$f" "$ROOT/etc/slurm/$f" || { install_file "$CONF/$f" "$ROOT/etc/slurm/$f"; changed+=("$f"); }
done
# slurmdbd.conf restarts slurmdbd only (slurm.conf's accounting lines restart the rest)
dbd_changed=0
if [ "$ACCOUNTING" = 1 ]; then
    if ! cmp -s "$CONF/slurmdbd.conf" "$ROOT/etc/slurm/slurmdbd.conf"; then
        install_file "$CONF/slurmdbd.conf" "$ROOT/etc/slurm/slurmdbd.conf"
        chmod 600 "$ROOT/etc/slurm/slurmdbd.conf"; dbd_changed=1; log "installed: slurmdbd.conf"
    fi
    chmod 600 "$ROOT/etc/slurm/slurmdbd.conf"
else
    rm -f "$ROOT/etc/slurm/slurmdbd.conf"
fi
if [ "$TOPO" = nvl72 ] && [ -n "$PACKAGE" ]; then
    # The package as a site installs it: dpkg in the chroot (its Depends pins the Slurm
    # release). Reinstalled only when the .deb changed (its checksum is kept in the chroot).
    sum=$(sha256sum "$PACKAGE" | cut -d' ' -f1)
    if [ "$(cat "$ROOT/var/lib/nvl72-package.sha256" 2>/dev/null)" != "$sum" ]; then
        cp "$PACKAGE" "$ROOT/tmp/topology-nvl72.deb"
        chroot "$ROOT" dpkg -i /tmp/topology-nvl72.deb >"$LAB/dpkg.log" 2>&1 ||
            die "dpkg -i $(basename "$PACKAGE") failed in the chroot: $(tail -5 "$LAB/dpkg.log")"
        rm -f "$ROOT/tmp/topology-nvl72.deb"
        echo "$sum" > "$ROOT/var/lib/nvl72-package.sha256"
        changed+=("$(basename "$PACKAGE")")
    fi
elif [ "$TOPO" = nvl72 ]; then
    if [ -e "$ROOT/var/lib/nvl72-package.sha256" ]; then
        # A plain .so replaces the package's: remove the package first so dpkg stays truthful.
        chroot "$ROOT" dpkg -r topology-nvl72 >"$LAB/dpkg.log" 2>&1 || true
        rm -f "$ROOT/var/lib/nvl72-package.sha256"
    fi
    cmp -s "$PLUGIN" "$ROOT$PLUGDIR/topology_nvl72.so" ||
        { install_file "$PLUGIN" "$ROOT$PLUGDIR/topology_nvl72.so"; changed+=("topology_nvl72.so"); }
fi
[ -z "$SLURM_PREFIX" ] || [ "$prefix_changed" = 0 ] || changed+=("$SLURM_PREFIX")
if [ -n "$SLURM_DEBS" ] && [ -n "$PACKAGE" ]; then
    # the package's /usr/bin/nvl72, not one an earlier run of the lab put first on the path
    rm -f "$ROOT/usr/local/bin/nvl72"
elif [ -n "$SLURM_PREFIX" ] || [ -n "$SLURM_DEBS" ]; then
    # The admin tool (nvl72 check/status/discover), as a package would put it on the path.
    if [ -f "$NVL72_BIN" ]; then
        cmp -s "$NVL72_BIN" "$ROOT/usr/local/bin/nvl72" ||
            { install_file "$NVL72_BIN" "$ROOT/usr/local/bin/nvl72" && chmod 755 "$ROOT/usr/local/bin/nvl72"; }
    elif [ "$TOPO" = nvl72 ]; then
        log "note: no $NVL72_BIN (build it with --bin nvl72): the chroot has no nvl72 command"
    fi
fi
[ ${#changed[@]} -gt 0 ] && log "installed: ${changed[*]}"
# A running slurmctld started with another CTLD_WRAP (recorded next to its pid file) restarts too.
if alive "$VAR/run/slurmctld.pid" && [ "$(cat "$VAR/run/slurmctld.wrap" 2>/dev/null)" != "$CTLD_WRAP" ]; then
    log "slurmctld runs with another CTLD_WRAP"
    changed+=("CTLD_WRAP")
fi

running() { alive "$VAR/run/slurmctld.pid" || compgen -G "$VAR/run/slurmd-*.pid" >/dev/null; }
acct_running() { alive "$VAR/run/slurmdbd.pid" || alive "$VAR/run/mariadb.pid"; }
# A restart keeps mariadbd and slurmdbd running (as it keeps munged) unless slurmdbd.conf changed;
# with ACCOUNTING=0 it stops them (slurm.conf changed too, or they are left from a failed run).
keep_acct=()
if [ "$ACCOUNTING" = 1 ]; then
    [ "$dbd_changed" = 0 ] && keep_acct=(--keep-accounting)
    [ "$dbd_changed" = 1 ] && acct_running && changed+=("slurmdbd.conf")
elif acct_running; then
    changed+=("ACCOUNTING=0")
fi
if [ ${#changed[@]} -gt 0 ] && { running || { [ ${#keep_acct[@]} = 0 ] && acct_running; }; }; then
    log "config/plugin changed -> restarting the daemons"
    "$LAB_SCRIPTS/lab-down.sh" --keep-mounts "${keep_acct[@]}"
fi
if [ "$CLEAN" = 1 ]; then
    { running || acct_running; } && "$LAB_SCRIPTS/lab-down.sh" --keep-mounts
    log "CLEAN=1: wiping state, spool and logs$( [ -d "$VAR/mysql" ] && echo ", and the accounting database")"
    rm -rf "$VAR/state" "$VAR/spool" "$VAR/log" "$VAR/mysql" "$VAR/ctl2"; mkdir -p "$VAR"/{state,spool,log}
fi

# ------------------------------------------------------------------------------ 3. daemons
ctld_log=$VAR/log/slurmctld.log
# what `scontrol ping` says of a controller that is up: 24.11 and 26.05 print
# "Slurmctld(primary) at NAME is UP" for each SlurmctldHost
ctld_up='is UP'; [ "$BACKUP_CTLD" = 1 ] && ctld_up='at ctl1 is UP'
ctld_off=0
ctld_fail() {
    echo "[lab-up] ERROR: $*" >&2
    echo "---- last 20 lines of $ctld_log (this start):" >&2
    tail -c +$((ctld_off + 1)) "$ctld_log" 2>/dev/null | tail -n 20 >&2
    echo "----" >&2
    [ "$TOPO" = nvl72 ] && echo "---- (TopologyPlugin=topology/nvl72 from ${PACKAGE:-$PLUGIN}, which must be built for Slurm $SLURM_VERSION; try TOPO=block to check the lab itself)" >&2
    exit 1
}

if ! alive "$ROOT/run/munge/munged.pid"; then
    in_root sh -c 'mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge'
    # Every chroot of one LAB uses one munge key, kept in $LAB/munge.key: a job step of the
    # chroot it started in still talks to the daemons of the other (LAB_ROOTFS).
    if [ -s "$LAB/munge.key" ]; then
        cmp -s "$LAB/munge.key" "$ROOT/etc/munge/munge.key" || {
            install -m 400 "$LAB/munge.key" "$ROOT/etc/munge/munge.key"
            in_root chown munge:munge /etc/munge/munge.key
        }
    else
        [ -s "$ROOT/etc/munge/munge.key" ] || in_root runuser -u munge -- mungekey --create
        install -m 600 "$ROOT/etc/munge/munge.key" "$LAB/munge.key"
    fi
    chroot --userspec=munge:munge "$ROOT" /usr/sbin/munged 9>&- || die "munged failed to start"
    log "munged pid $(cat "$ROOT/run/munge/munged.pid")"
fi

# ACCOUNTING=1: mariadbd, then slurmdbd, each waited for until it answers, before slurmctld.
if [ "$ACCOUNTING" = 1 ]; then
    mdb_log=$VAR/log/mariadb.log
    dbd_log=$VAR/log/slurmdbd.log
    acct_fail() {   # acct_fail LOG MESSAGE
        echo "[lab-up] ERROR: $2" >&2
        echo "---- last 20 lines of $1:" >&2; tail -n 20 "$1" >&2 2>/dev/null; echo "----" >&2
        exit 1
    }
    # The socket where the chroot's MariaDB client library (slurmdbd's mysql plugin, mariadb-admin)
    # looks for it, as slurmdbd names no socket: its built-in default, which is
    # /run/mysqld/mysqld.sock in trixie but /run/mariadbd/mysqld.sock in sid.
    mdb_sock=$(grep -ao '/run/[[:alnum:]._-]*/mysqld\.sock' "$ROOT/usr/lib/x86_64-linux-gnu/libmariadb.so.3" 2>/dev/null | head -n 1 || true)
    mdb_sock=${mdb_sock:-/run/mysqld/mysqld.sock}
    # mariadbd as root (like every daemon of the lab), data in $VAR/mysql, no TCP port
    # (skip-networking: labs never collide).  innodb_snapshot_isolation (ON by default since
    # MariaDB 11.6) is off: Slurm does not support it (26.05's slurmdbd says so when it fails).
    mdb_opts=(--no-defaults --user=root "--datadir=$VAR/mysql" "--socket=$mdb_sock"
              "--pid-file=$VAR/run/mariadb.pid" --skip-networking "--log-error=$mdb_log"
              --innodb-snapshot-isolation=OFF --innodb-lock-wait-timeout=900)
    if ! alive "$VAR/run/mariadb.pid"; then
        rm -f "$VAR/run/mariadb.pid"
        if [ ! -d "$VAR/mysql/mysql" ]; then
            log "mariadb-install-db: a new accounting database in $VAR/mysql"
            rm -rf "$VAR/mysql"
            in_root mariadb-install-db --no-defaults --user=root "--datadir=$VAR/mysql" \
                --auth-root-authentication-method=socket --skip-test-db >"$LAB/mariadb-install-db.log" 2>&1 9>&- ||
                { rm -rf "$VAR/mysql"; acct_fail "$LAB/mariadb-install-db.log" "mariadb-install-db failed"; }
        fi
        mkdir -p "$ROOT$(dirname "$mdb_sock")"; rm -f "$ROOT$mdb_sock"
        # not a daemon by itself: started in its own session, found again by its pid file
        setsid chroot "$ROOT" /usr/sbin/mariadbd "${mdb_opts[@]}" </dev/null >>"$mdb_log" 2>&1 9>&- &
        mdb_launch=$!
        end=$(( $(date +%s) + DBD_WAIT ))
        until in_root mariadb-admin --no-defaults "--socket=$mdb_sock" ping >/dev/null 2>&1; do
            kill -0 "$mdb_launch" 2>/dev/null || alive "$VAR/run/mariadb.pid" || acct_fail "$mdb_log" "mariadbd died during startup"
            [ "$(date +%s)" -lt "$end" ] || acct_fail "$mdb_log" "mariadbd did not answer within $DBD_WAIT s (DBD_WAIT)"
            sleep 0.1
        done
        alive "$VAR/run/mariadb.pid" || acct_fail "$mdb_log" "mariadbd answers but its pid file $VAR/run/mariadb.pid names no process of this lab"
        log "mariadbd pid $(cat "$VAR/run/mariadb.pid") is up"
    fi
    dbd_ok() { timeout 20 chroot "$ROOT" "${LAB_ENV[@]}" sacctmgr -n -P list cluster format=cluster 2>/dev/null; }
    if ! alive "$VAR/run/slurmdbd.pid"; then
        rm -f "$VAR/run/slurmdbd.pid"
        # The database exists before slurmdbd's first start.  Otherwise slurmdbd creates it after
        # a failed connect and reconnects with the same handle, which libmariadb3 11.8.9 leaves
        # unusable: every query then fails with "5027 Number of columns in result (=1) set
        # execeeds maxmimum allowed number of columns (=0)" and slurmdbd dies (24.11 and 26.05).
        in_root mariadb --no-defaults "--socket=$mdb_sock" -e 'CREATE DATABASE IF NOT EXISTS slurm_acct_db' ||
            acct_fail "$mdb_log" "cannot create the database slurm_acct_db in mariadbd"
        dbd_off=$(stat -c %s "$dbd_log" 2>/dev/null || echo 0)
        in_root slurmdbd 9>&- || acct_fail "$dbd_log" "slurmdbd exited with status $?"
        end=$(( $(date +%s) + DBD_WAIT ))
        # it daemonizes, then creates its tables (first start) and writes its pid file
        until clusters=$(dbd_ok); do
            if [ -s "$VAR/run/slurmdbd.pid" ]; then
                alive "$VAR/run/slurmdbd.pid" || acct_fail "$dbd_log" "slurmdbd (pid $(cat "$VAR/run/slurmdbd.pid")) died during startup"
            elif tail -c +$((dbd_off + 1)) "$dbd_log" 2>/dev/null | grep -q 'fatal'; then
                acct_fail "$dbd_log" "slurmdbd failed to start"
            fi
            [ "$(date +%s)" -lt "$end" ] || acct_fail "$dbd_log" "slurmdbd did not answer within $DBD_WAIT s (DBD_WAIT)"
            sleep 0.2
        done
        log "slurmdbd pid $(cat "$VAR/run/slurmdbd.pid") is up (port $DBD_PORT)"
    else
        clusters=$(dbd_ok) || acct_fail "$dbd_log" "slurmdbd (pid $(cat "$VAR/run/slurmdbd.pid")) runs but sacctmgr cannot reach it on port $DBD_PORT"
    fi
    if ! grep -qx lab <<<"$clusters"; then
        in_root sacctmgr -i add cluster lab >/dev/null || acct_fail "$dbd_log" "sacctmgr add cluster lab failed"
        log "cluster lab added to the accounting database"
        # A state directory kept from a run without accounting (or from before CLEAN=1 wiped
        # the database) names a ClusterID that the new database does not know; slurmctld would
        # refuse to start ("fatal: CLUSTER ID MISMATCH").  The database is new and empty, so
        # the lab's state takes its id: the file holds nothing but the cluster's name and id.
        if [ -e "$VAR/state/clustername" ]; then
            rm -f "$VAR/state/clustername"
            log "new accounting database: slurmctld takes its ClusterID (state/clustername removed)"
        fi
    fi
fi

if ! alive "$VAR/run/slurmctld.pid"; then
    rm -f "$VAR/run/slurmctld.pid"
    ctld_off=$(stat -c %s "$ctld_log" 2>/dev/null || echo 0)
    # With CTLD_WRAP the wrapper runs slurmctld in the same process (valgrind does), so the
    # daemon's own pid file still names the real process.
    printf '%s\n' "$CTLD_WRAP" > "$VAR/run/slurmctld.wrap"
    if [ ${#ctld_wrap[@]} -gt 0 ]; then
        # An absolute argv[0]: otherwise slurmctld takes its path for re-execs (slurmscriptd,
        # reconfigure) from readlink(/proc/self/exe) without NUL-terminating it, and valgrind's
        # emulation of that readlink leaves the tail of its own tool's path in the buffer.
        in_root "${ctld_wrap[@]}" "$SBIN/slurmctld" 9>&- || ctld_fail "slurmctld exited with status $?"
    elif [ "$BACKUP_CTLD" = 1 ]; then
        as_host ctl1 slurmctld 9>&- || ctld_fail "slurmctld (ctl1) exited with status $?"
    else
        in_root slurmctld 9>&- || ctld_fail "slurmctld exited with status $?"
    fi
    [ -z "$CTLD_WRAP" ] || log "slurmctld started under: $CTLD_WRAP"
    end=$(( $(date +%s) + CTLD_WAIT ))
    while :; do     # until the controller answers; it may die after daemonizing (e.g. plugin load)
        if [ -s "$VAR/run/slurmctld.pid" ]; then
            alive "$VAR/run/slurmctld.pid" || ctld_fail "slurmctld (pid $(cat "$VAR/run/slurmctld.pid")) died during startup"
            in_root scontrol ping 2>/dev/null | grep -q "$ctld_up" && break
        fi
        [ "$(date +%s)" -lt "$end" ] || ctld_fail "slurmctld did not come up within $CTLD_WAIT s (CTLD_WAIT)"
        sleep 0.1
    done
    log "slurmctld pid $(cat "$VAR/run/slurmctld.pid") is up"
fi
# BACKUP_CTLD=1: the backup controller, once the primary is up (it then waits in standby)
if [ "$BACKUP_CTLD" = 1 ] && ! alive "$VAR/ctl2/run/slurmctld.pid"; then
    mkdir -p "$VAR/ctl2/run" "$VAR/ctl2/log"
    rm -f "$VAR/ctl2/run/slurmctld.pid"
    as_backup_host slurmctld 9>&- || die "slurmctld (ctl2) exited with status $?"
    end=$(( $(date +%s) + CTLD_WAIT ))
    until in_root scontrol ping 2>/dev/null | grep -q 'at ctl2 is UP'; do
        alive "$VAR/ctl2/run/slurmctld.pid" || [ ! -s "$VAR/ctl2/run/slurmctld.pid" ] ||
            die "the backup slurmctld died; see $VAR/ctl2/log/slurmctld.log"
        [ "$(date +%s)" -lt "$end" ] || die "the backup slurmctld did not answer within $CTLD_WAIT s; see $VAR/ctl2/log/slurmctld.log"
        sleep 0.2
    done
    log "backup slurmctld (ctl2) pid $(cat "$VAR/ctl2/run/slurmctld.pid") is up"
fi

started=0
# CLOUD=1: no slurmd for the gb nodes (slurmctld only powers them up, with a no-op program)
NGB_SLURMD=$NNODES; [ "$CLOUD" = 1 ] && NGB_SLURMD=0
NODES=$(for i in $(seq 1 "$NGB_SLURMD"); do gb "$i"; echo; done; for i in $(seq 1 "$CPU_NODES"); do cpun "$i"; echo; done)
# SLURMD=0: none here (the slurmd of another LAB_ROOTFS answer this slurmctld)
[ "$SLURMD" = 1 ] || NODES=""
for n in $NODES; do
    alive "$VAR/run/slurmd-$n.pid" && continue
    mkdir -p "$VAR/spool/slurmd-$n"
    if ! in_root slurmd -N "$n" 9>&-; then
        echo "---- last 20 lines of $VAR/log/slurmd-$n.log:" >&2; tail -n 20 "$VAR/log/slurmd-$n.log" >&2 2>/dev/null
        [ -z "$SLURM_PREFIX" ] || echo "---- (the lab runs one slurmd per node on one host: the installation must be built with multiple-slurmd support)" >&2
        die "slurmd -N $n failed to start"
    fi
    started=$((started + 1))
done
[ "$started" -gt 0 ] && log "started $started slurmd ($NGB_SLURMD gb + $CPU_NODES cpu nodes)"

# ------------------------------------------------------------------------------ 4. wait for idle
# slurmd_running NODE: its pid file names a live slurmd of this lab, or a slurmd of this lab
# for NODE is still starting. A slurmd writes its pid file only after loading its plugins;
# with 144 or more starting at once on 2 cores that took longer than the first check.
slurmd_running() {
    local p
    alive "$VAR/run/slurmd-$1.pid" && return 0
    for p in $(pgrep -f "^slurmd -N $1\$"); do
        [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$ROOT" ] && return 0
    done
    return 1
}
# dead_slurmd: the first node whose slurmd is not running (it may die after daemonizing,
# e.g. when a plugin fails to load), or nothing
dead_slurmd() {
    local n
    for n in $NODES; do slurmd_running "$n" || { echo "$n"; return 0; }; done
}
end=$(( $(date +%s) + WAIT ))
next_check=$(( $(date +%s) + 3 ))
while [ "$WAIT_NODES" = 1 ]; do
    alive "$VAR/run/slurmctld.pid" || ctld_fail "slurmctld died"
    if [ "$(date +%s)" -ge "$next_check" ]; then
        n=$(dead_slurmd)
        if [ -n "$n" ]; then
            echo "---- last 20 lines of $VAR/log/slurmd-$n.log:" >&2; tail -n 20 "$VAR/log/slurmd-$n.log" >&2 2>/dev/null
            die "slurmd for $n is not running (see its log above)"
        fi
        next_check=$(( $(date +%s) + 3 ))
    fi
    # nodes whose slurmd answers (idle/mixed/allocated, and drained by an admin: a drain kept
    # in the state across a restart; not down/unknown/not responding);
    # CLOUD=1: powered-down cloud nodes (idle~) count too
    # a slurmctld slowed down (valgrind DRD) may answer ping and still refuse sinfo for a
    # while: that is "none up yet", not a failure (pipefail with set -e would end lab-up here)
    up=$(in_root sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | awk -v c="$CLOUD" '$2 ~ /^(idle|mix|alloc|comp|drain|drng)$/ || (c && $2 == "idle~")' | wc -l) || true
    [ "$up" -ge "$NTOTAL" ] && break
    if [ "$(date +%s)" -ge "$end" ]; then
        echo "[lab-up] ERROR: only $up/$NTOTAL nodes up after ${WAIT}s; not up:" >&2
        in_root sinfo -h -N -o '%N %t %E' 2>&1 | sort -u | grep -v -E ' (idle|mix|alloc|comp) ' | head -20 >&2
        n=$(in_root sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | awk '$2 !~ /^(idle|mix|alloc|comp)$/ {print $1; exit}')
        if [ -n "$n" ]; then echo "---- last 10 lines of $VAR/log/slurmd-$n.log:" >&2; tail -n 10 "$VAR/log/slurmd-$n.log" >&2 2>/dev/null; fi
        echo "---- last 10 lines of $ctld_log:" >&2; tail -n 10 "$ctld_log" >&2
        exit 1
    fi
    sleep 0.5
done
if [ "$WAIT_NODES" = 1 ]; then
    log "all $NTOTAL nodes up (TOPO=$TOPO, $RACKS racks x $NPR + $CPU_NODES cpu); clients: $LAB_SCRIPTS/sl sinfo"
    in_root sinfo
else
    log "daemons running (WAIT_NODES=0: nodes not waited for)"
fi
