#!/bin/bash
# fetch-slurm-source.sh — fetch the pinned Slurm source tree (slurm-headers/pins/$SLURM_PIN,
# default 24.11.5) that
# topology/nvl72 is built against, and print its path on the last line.
#
# How: Debian's source package of slurm-wlm, looked up with a PRIVATE apt configuration
# (own sources.list, lists and cache under slurm-headers/cache/apt; the system's apt config
# and state are never touched):
#   apt-get source --print-uris slurm-wlm=$SLURM_DEBIAN_VERSION  -> URI of the orig tarball
#   curl it into slurm-headers/cache/, verify SLURM_ORIG_SHA256, unpack into slurm-headers/src/.
# Only the orig tarball is downloaded (the .dsc and debian.tar.xz are not needed).
# Idempotent: once slurm-headers/src/$SLURM_TREE is complete (marker file), it does nothing.
#
# Env: MIRROR [this machine's apt sources]                      (Debian archive)
#      SECURITY_MIRROR [this machine's apt sources, else MIRROR-security]
#      SLURM_SRC=/path/to/slurm-x.y.z   use this tree instead: nothing is fetched, the path is
#                                       checked and printed
#      SLURM_PIN=24.11.5                 which slurm-headers/pins/ file (a debian-binary pin
#                                       hands over to fetch-slurm-binary.sh)
# Needs: apt-get, curl, sha256sum, tar.  Root is not required.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HDR=$(dirname "$HERE")/slurm-headers
PIN=$HDR/pins/${SLURM_PIN:-24.11.5}
[ -r "$PIN" ] || { echo "[fetch-slurm-source] ERROR: no pin $PIN (pinned: $(ls "$HDR/pins" | tr '\n' ' '))" >&2; exit 1; }
# shellcheck source=../slurm-headers/pins/24.11.5
. "$PIN"
if [ "${SLURM_KIND:-debian-source}" = debian-binary ] && [ -z "${SLURM_SRC:-}" ]; then
    exec bash "$HERE/fetch-slurm-binary.sh"   # a release Debian ships only as binaries
fi
. "$(dirname "${BASH_SOURCE[0]}")/apt-mirrors.sh"
MIRROR=$(apt_mirror)
SECURITY_MIRROR=$(apt_security_mirror)
CACHE=$HDR/cache
SRC=$HDR/src
TREE=$SRC/$SLURM_TREE
MARK=$SRC/.$SLURM_TREE.complete      # written after a successful unpack; holds the sha256
TARBALL=$CACHE/$SLURM_ORIG_TARBALL

say() { echo "[fetch-slurm-source] $*" >&2; }
die() { echo "[fetch-slurm-source] ERROR: $*" >&2; exit 1; }

if [ -n "${SLURM_SRC:-}" ]; then
    [ -f "$SLURM_SRC/META" ] && [ -f "$SLURM_SRC/slurm/slurm.h" ] ||
        die "SLURM_SRC=$SLURM_SRC does not look like a Slurm source tree (no META or slurm/slurm.h)"
    say "SLURM_SRC is set: using $SLURM_SRC (nothing fetched; it must be Slurm $SLURM_VERSION)"
    readlink -f "$SLURM_SRC"
    exit 0
fi

if [ -d "$TREE" ] && [ "$(cat "$MARK" 2>/dev/null)" = "$SLURM_ORIG_SHA256" ]; then
    say "already there: Slurm $SLURM_VERSION"
    echo "$TREE"
    exit 0
fi

for c in apt-get curl sha256sum tar; do command -v $c >/dev/null || die "$c not found"; done
mkdir -p "$CACHE" "$SRC"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SLURM_ORIG_SHA256" ]; }

if sha_ok "$TARBALL"; then
    say "using cached $TARBALL"
else
    # ---- private apt: only Sources indices for $SLURM_SUITE, nothing from /etc/apt/sources*
    A=$CACHE/apt
    mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc/sources.list.d" "$A/etc/preferences.d"
    cat > "$A/etc/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SLURM_SUITE main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SLURM_SUITE-updates main
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $SECURITY_MIRROR $SLURM_SUITE-security main
EOF
    APT=(-o "Dir::Etc::SourceList=$A/etc/sources.list"
         -o "Dir::Etc::SourceParts=$A/etc/sources.list.d"
         -o "Dir::Etc::Preferences=$A/etc/preferences"
         -o "Dir::Etc::PreferencesParts=$A/etc/preferences.d"
         -o "Dir::State::Lists=$A/lists"
         -o "Dir::Cache=$A/cache"
         -o "APT::Sandbox::User=$(id -un)"
         -o "Acquire::Languages=none"
         -o "APT::Get::List-Cleanup=true")
    [ -r /usr/share/keyrings/debian-archive-keyring.gpg ] ||
        die "/usr/share/keyrings/debian-archive-keyring.gpg missing (install debian-archive-keyring)"
    say "apt-get update (private config in $A) for deb-src $SLURM_SUITE"
    apt-get "${APT[@]}" -q update >&2 || die "apt-get update with the private config failed"
    say "apt-get source --print-uris slurm-wlm=$SLURM_DEBIAN_VERSION"
    uris=$(apt-get "${APT[@]}" -q source --print-uris "slurm-wlm=$SLURM_DEBIAN_VERSION" 2>&1) ||
        die "apt-get source --print-uris slurm-wlm=$SLURM_DEBIAN_VERSION failed:
$uris
  (available: $(apt-cache "${APT[@]}" showsrc slurm-wlm 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u | paste -sd' '))"
    # lines look like: 'http://.../slurm-wlm_24.11.5.orig.tar.gz' slurm-wlm_24.11.5.orig.tar.gz SIZE SHA256:...
    uri=$(awk -v f="$SLURM_ORIG_TARBALL" '$2 == f { gsub(/\047/, "", $1); print $1; exit }' <<<"$uris")
    [ -n "$uri" ] || die "no $SLURM_ORIG_TARBALL in the source package's files:
$uris"
    say "downloading $uri"
    curl -fsSL --retry 3 --connect-timeout 20 -o "$TARBALL.part" "$uri" || die "download of $uri failed"
    got=$(sha256sum "$TARBALL.part" | cut -d' ' -f1)
    if [ "$got" != "$SLURM_ORIG_SHA256" ]; then
        rm -f "$TARBALL.part"
        die "sha256 mismatch for $SLURM_ORIG_TARBALL from $uri:
    got      $got
    expected $SLURM_ORIG_SHA256 ($PIN)"
    fi
    mv -f "$TARBALL.part" "$TARBALL"
    say "sha256 ok: $SLURM_ORIG_SHA256"
fi

# ---- unpack into a temporary folder, then rename into place
tmp=$(mktemp -d "$SRC/.unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "unpacking into $SRC"
tar -xzf "$TARBALL" -C "$tmp"
[ -d "$tmp/$SLURM_TREE" ] || die "the tarball's top folder is '$(ls "$tmp" | head -3 | paste -sd' ')', expected SLURM_TREE=$SLURM_TREE"
rm -f "$MARK"
rm -rf "$TREE"
mv "$tmp/$SLURM_TREE" "$TREE"
echo "$SLURM_ORIG_SHA256" > "$MARK"
say "Slurm $SLURM_VERSION source ready"
echo "$TREE"
