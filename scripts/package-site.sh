#!/bin/bash
# package-site.sh — the packages for a site's own Slurm build, from its source tree (called by
# scripts/package.sh when SLURM_SRC is set). Sites that build Slurm themselves install it from
# SchedMD's Debian packaging (slurm-smd*, debuild from the release tree) or from slurm.spec
# (rpmbuild), or with make install into a prefix; one build of the plugin and nvl72 against
# the tree becomes all three:
#   target/site-<release>/topology-nvl72_<version>+slurm<release>-1_amd64.deb
#       PluginDir /usr/lib/x86_64-linux-gnu/slurm; Depends: slurm-smd of that release, any
#       packaging revision (>= <release>, << the next micro); Conflicts: Debian's
#       slurm-wlm-basic-plugins. Built by cargo-deb.
#   target/site-<release>/topology-nvl72-<version>-1.slurm<release>.x86_64.rpm
#       PluginDir /usr/lib64/slurm; Requires: slurm = <release>. Built by rpmbuild (Debian's
#       `rpm` package, installed when missing).
#   target/site-<release>/topology-nvl72-<version>-slurm-<release>.tar.gz
#       lib/slurm/topology_nvl72.so for the prefix's PluginDir, bin/nvl72, the example, docs.
# All three hold the same stripped files (tests/e2e/tests/e2e_packages.rs compares them) and the
# files of the Debian package (Cargo.toml's [package.metadata.deb] lists them). The three
# paths are the last three lines of the output.
#   SLURM_SRC=/path/to/slurm-26.05.3 [SLURM_PREFIX=/opt/slurm-26.05.3] bash scripts/package.sh
# SLURM_PREFIX makes a tree of another release than the installation a build error (build.rs).
# SITE_TARGET_DIR [target/slurm-<major>.<minor>]: cargo's target dir for the build.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
die() { echo "package-site.sh: $*" >&2; exit 1; }
[ -f "$SLURM_SRC/META" ] || die "SLURM_SRC=$SLURM_SRC is not a Slurm source tree (no META)"
meta() { awk -v k="$1:" '$1 == k { print $2; exit }' "$SLURM_SRC/META"; }
release=$(meta Major).$(meta Minor).$(meta Micro)
target=${SITE_TARGET_DIR:-target/slurm-$(meta Major).$(meta Minor)}
out=target/site-$release
version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)

command -v cargo-deb >/dev/null || {
    echo "package-site.sh: installing cargo-deb (once, about 2 minutes)" >&2
    cargo install cargo-deb --locked --version '^3' >&2
}
command -v rpmbuild >/dev/null || {
    echo "package-site.sh: installing rpmbuild (Debian's rpm package)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rpm >&2 ||
        { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rpm >&2; } ||
        die "could not install rpm (rpmbuild)"
}

cargo build --release -p topology_nvl72 -p nvl72-cli --target-dir "$target" >&2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The stripped build, as cargo-deb's --strip leaves the Debian package's (target/release/ under
# the stage: the names Cargo.toml's assets give them).
mkdir -p "$stage/target/release" "$out"
for f in libtopology_nvl72.so nvl72; do
    strip --strip-unneeded -o "$stage/target/release/$f" "$target/release/$f"
done
rm -f "$out"/topology-nvl72[_-]*

# SchedMD's Debian packaging: cargo-deb from a manifest with the slurm-smd layout and pin.
python3 scripts/site-packages.py deb-manifest --release "$release" --stage "$stage" --out "$stage/deb"
cargo deb --no-build --no-strip --manifest-path "$stage/deb/Cargo.toml" \
    --deb-version "$version+slurm$release-1" --output "$out" >&2
deb=$out/topology-nvl72_$version+slurm$release-1_amd64.deb

# slurm.spec's packaging: rpmbuild from a spec with the slurm layout and Requires.
python3 scripts/site-packages.py rpm-spec --release "$release" --stage "$stage" --out "$stage/topology-nvl72.spec"
rpmbuild -bb --quiet --define "_topdir $stage/rpm" --define "_rpmdir $REPO/$out" \
    --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
    "$stage/topology-nvl72.spec" >&2
rpm=$out/topology-nvl72-$version-1.slurm$release.x86_64.rpm

# A prefix (make install): a tarball of its layout.
root=$stage/tar/topology-nvl72-$version-slurm-$release
install -D -m 0755 "$stage/target/release/libtopology_nvl72.so" "$root/lib/slurm/topology_nvl72.so"
install -D -m 0755 "$stage/target/release/nvl72" "$root/bin/nvl72"
install -D -m 0644 -t "$root/share/doc/topology-nvl72" conf/topology.toml README.md docs/config.md
tarball=$out/topology-nvl72-$version-slurm-$release.tar.gz
tar -C "$stage/tar" -czf "$tarball" "$(basename "$root")"

for f in "$deb" "$rpm" "$tarball"; do [ -f "$f" ] || die "$f was not written"; done
echo "package-site.sh: for Slurm $release: install the .deb next to slurm-smd, the .rpm next to slurm, or the tarball's lib/slurm/topology_nvl72.so into the PluginDir, on every node; then nvl72 check (docs/install.md)" >&2
echo "$deb"
echo "$rpm"
echo "$tarball"
