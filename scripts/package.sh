#!/bin/bash
# package.sh — builds the Debian package topology-nvl72 with cargo-deb and prints its path on
# the last line. The package holds the plugin (into Debian's Slurm PluginDir), `nvl72`, the
# annotated example topology.toml and the docs; it Depends on exactly the Slurm release the
# plugin is built for (slurm-headers/pins/$SLURM_PIN), because Slurm refuses any other micro
# version.
#   bash scripts/package.sh                   # Slurm 24.11.5 -> target/debian/
#   SLURM_PIN=26.05.5 bash scripts/package.sh # Slurm 26.05.5 -> target/debian-26.05.5/
# A release other than the default builds with the cargo profile and cargo-deb variant named
# slurm-<major>-<minor> (Cargo.toml), in its own target directory.
#
# A site's own Slurm build (any supported release, e.g. 25.11.8 or 26.11.0, from its source
# tree): SLURM_SRC=<its source tree> [SLURM_PREFIX=<its installation>] bash scripts/package.sh
# writes the packages SchedMD's own packaging expects instead, a .deb next to slurm-smd, an
# .rpm next to slurm.spec's slurm and a tarball for a prefix (scripts/package-site.sh).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
if [ -n "${SLURM_SRC:-}" ]; then
    exec bash "$REPO/scripts/package-site.sh"
fi
export SLURM_PIN=${SLURM_PIN:-24.11.5}
# shellcheck source=../slurm-headers/pins/24.11.5
. "slurm-headers/pins/$SLURM_PIN"
pin="slurm-wlm-basic-plugins (= $SLURM_DEBIAN_VERSION)"
grep -qF "depends = \"$pin" Cargo.toml || {
    echo "package.sh: Cargo.toml's [package.metadata.deb] must have a depends pinning $pin (slurm-headers/pins/$SLURM_PIN)" >&2
    exit 1
}
command -v cargo-deb >/dev/null || {
    echo "package.sh: installing cargo-deb (once, about 2 minutes)" >&2
    cargo install cargo-deb --locked --version '^3' >&2
}
if [ "$SLURM_PIN" = 24.11.5 ]; then
    profile=release variant=() out=target/debian
else
    series=${SLURM_VERSION%.*}
    profile=slurm-${series//./-} variant=(--variant "$profile") out=target/debian-$SLURM_VERSION
fi
mkdir -p "$out"
cargo build --profile "$profile" -p topology_nvl72 -p nvl72-cli >&2
deb=$(cargo deb --no-build --strip --profile "$profile" "${variant[@]}" --output "$out" 2>&1 | tail -1)
[ -f "$deb" ] || { echo "package.sh: cargo deb did not produce a package: $deb" >&2; exit 1; }
echo "$deb"
