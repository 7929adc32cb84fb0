#!/bin/bash
# package.sh — builds the Debian package topology-nvl72 with cargo-deb and prints its path on
# the last line. The package holds the plugin (into Debian's Slurm PluginDir), `nvl72`, the
# annotated example topology.toml and the docs; it Depends on exactly the Slurm release the
# plugin is built for (slurm-headers/PIN), because Slurm refuses any other micro version.
#   bash scripts/package.sh            # -> target/debian/topology-nvl72_<version>_amd64.deb
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
# shellcheck source=../slurm-headers/PIN
. slurm-headers/PIN
pin="slurm-wlm-basic-plugins (= $SLURM_DEBIAN_VERSION)"
grep -qF "depends = \"$pin" Cargo.toml || {
    echo "package.sh: Cargo.toml's [package.metadata.deb] depends must pin $pin (slurm-headers/PIN)" >&2
    exit 1
}
command -v cargo-deb >/dev/null || {
    echo "package.sh: installing cargo-deb (once, about 2 minutes)" >&2
    cargo install cargo-deb --locked --version '^3' >&2
}
cargo build --release --lib --bin nvl72 >&2
deb=$(cargo deb --no-build --strip --output target/debian 2>&1 | tail -1)
[ -f "$deb" ] || { echo "package.sh: cargo deb did not produce a package: $deb" >&2; exit 1; }
echo "$deb"
