#!/bin/bash
# fetch-slurm-binary.sh — fetch the Debian BINARY packages of a pinned Slurm release
# (slurm-headers/pins/$SLURM_PIN, SLURM_KIND=debian-binary) and lay out what building
# topology/nvl72 needs from them; print the result's path on the last line.
#
# For releases whose source cannot be downloaded (Debian sid's 26.05.5: the orig tarball
# answers 404), the build reads instead:
#   include/slurm/*.h                  public headers of libslurm-dev (slurm.h, slurm_errno.h,
#                                      slurm_version.h, ...)
#   lib/libslurm_topology_common.a     ONLY Slurm's topology helper objects (common_topo.o,
#                                      eval_nodes.o, gres_filter.o, gres_sched.o), taken out of
#                                      topology_block.a in slurm-wlm-basic-plugins-dev; they
#                                      are position-independent
#   verify/*.o                         a few objects of libslurmfull.a (SLURM_VERIFY_OBJECTS),
#                                      never linked: gen-abi-header.py --verify-objects
#                                      checks the ABI header's layouts against them
# under slurm-headers/src/$SLURM_TREE (git-ignored), plus the committed ABI header named by
# SLURM_ABI_HEADER for the internal declarations (scripts/gen-abi-header.py).
#
# How: curl $MIRROR/$SLURM_POOL/<deb> into slurm-headers/cache/, verify the sha256 of the
# pin, unpack with dpkg-deb -x (or ar + tar), ar x the helper objects and ar rcs them into a
# new archive. Everything is built in a temporary folder and renamed into place; the marker
# file src/$SLURM_TREE/.complete (the two .deb sha256s and the pin's) is written last.
# Idempotent: once the marker matches the pin, it does nothing.
#
# Env: SLURM_PIN=26.05.5                   pin file under slurm-headers/pins/
#      MIRROR [this machine's apt sources] Debian archive (the pool path comes from the pin)
# Needs: curl, sha256sum, ar, tar (+ xz/zstd for the data member) or dpkg-deb.
# Root is not required.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HDR=$(dirname "$HERE")/slurm-headers
SLURM_PIN=${SLURM_PIN:-26.05.5}
PIN=$HDR/pins/$SLURM_PIN

say() { echo "[fetch-slurm-binary] $*" >&2; }
die() { echo "[fetch-slurm-binary] ERROR: $*" >&2; exit 1; }

[ -f "$PIN" ] || die "no pin file $PIN (SLURM_PIN=$SLURM_PIN; available: $(ls "$HDR/pins" 2>/dev/null | paste -sd' '))"
# shellcheck source=../slurm-headers/pins/26.05.5
. "$PIN"
[ "${SLURM_KIND:-}" = debian-binary ] ||
    die "$PIN has SLURM_KIND=${SLURM_KIND:-unset}; this script handles SLURM_KIND=debian-binary only"
for v in SLURM_VERSION SLURM_POOL SLURM_DEV_DEB SLURM_DEV_SHA256 SLURM_PLUGINS_DEV_DEB \
         SLURM_PLUGINS_DEV_SHA256 SLURM_HELPER_ARCHIVE SLURM_HELPER_OBJECTS SLURM_TREE; do
    [ -n "${!v:-}" ] || die "$PIN lacks $v="
done
. "$(dirname "${BASH_SOURCE[0]}")/apt-mirrors.sh"
MIRROR=$(apt_mirror)
CACHE=$HDR/cache
SRC=$HDR/src
OUT=$SRC/$SLURM_TREE
MARK=$OUT/.complete                  # build.rs looks for it; written last
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
# the marker holds the two .deb sums and the pin's own sum: editing the pin redoes the layout
STAMP="$SLURM_DEV_SHA256 $SLURM_PLUGINS_DEV_SHA256 $(sha_of "$PIN")"

if [ -d "$OUT" ] && [ "$(cat "$MARK" 2>/dev/null)" = "$STAMP" ]; then
    say "already there: Slurm $SLURM_VERSION ($SLURM_DEBIAN_VERSION, binary packages)"
    echo "$OUT"
    exit 0
fi

for c in curl sha256sum ar tar; do command -v $c >/dev/null || die "$c not found"; done
mkdir -p "$CACHE" "$SRC"

# fetch DEB SHA256: make sure $CACHE/DEB is there with that sha256
fetch() {
    local deb=$1 want=$2 url=$MIRROR/$SLURM_POOL/$1
    if [ -f "$CACHE/$deb" ] && [ "$(sha_of "$CACHE/$deb")" = "$want" ]; then
        say "using cached $CACHE/$deb"
        return
    fi
    say "downloading $url"
    curl -fsSL --retry 3 --connect-timeout 20 -o "$CACHE/$deb.part" "$url" ||
        die "download of $url failed (Debian drops old versions from the pool: check
    $MIRROR/$SLURM_POOL/ and move the pin $PIN)"
    local got
    got=$(sha_of "$CACHE/$deb.part")
    if [ "$got" != "$want" ]; then
        rm -f "$CACHE/$deb.part"
        die "sha256 mismatch for $deb from $url:
    got      $got
    expected $want ($PIN)"
    fi
    mv -f "$CACHE/$deb.part" "$CACHE/$deb"
    say "sha256 ok: $deb"
}

# unpack DEB DIR: the data part of a .deb
unpack() {
    local deb=$1 dir=$2
    mkdir -p "$dir"
    if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$dir"
        return
    fi
    local t member
    t=$(mktemp -d "$tmp/ar.XXXXXX")
    (cd "$t" && ar x "$deb")
    member=$(cd "$t" && ls data.tar.* 2>/dev/null | head -1)
    [ -n "$member" ] || die "$deb has no data.tar.* member"
    tar -xf "$t/$member" -C "$dir" || die "cannot unpack $member of $deb (xz or zstd missing?)"
}

fetch "$SLURM_DEV_DEB" "$SLURM_DEV_SHA256"
fetch "$SLURM_PLUGINS_DEV_DEB" "$SLURM_PLUGINS_DEV_SHA256"

tmp=$(mktemp -d "$SRC/.unpack.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unpack "$CACHE/$SLURM_DEV_DEB" "$tmp/dev"
unpack "$CACHE/$SLURM_PLUGINS_DEV_DEB" "$tmp/plugins-dev"

# ---- include/slurm: the public headers
stage=$tmp/$SLURM_TREE
mkdir -p "$stage/include/slurm" "$stage/lib"
[ -f "$tmp/dev/usr/include/slurm/slurm.h" ] || die "$SLURM_DEV_DEB has no usr/include/slurm/slurm.h"
cp -p "$tmp/dev/usr/include/slurm/"*.h "$stage/include/slurm/"
# the headers must be the pinned release
IFS=. read -r maj min mic <<<"$SLURM_VERSION"
want_num=$(printf '0x%02x%02x%02x' "$((10#$maj))" "$((10#$min))" "$((10#$mic))")
got_num=$(awk '$1 == "#define" && $2 == "SLURM_VERSION_NUMBER" { print $3 }' \
    "$stage/include/slurm/slurm_version.h")
[ "$got_num" = "$want_num" ] ||
    die "slurm_version.h of $SLURM_DEV_DEB says SLURM_VERSION_NUMBER $got_num, the pin $SLURM_VERSION ($want_num)"

# ---- lib/libslurm_topology_common.a: only the helper objects
archive=$tmp/plugins-dev/$SLURM_HELPER_ARCHIVE
[ -f "$archive" ] || die "$SLURM_PLUGINS_DEV_DEB has no $SLURM_HELPER_ARCHIVE"
members=$(ar t "$archive")
objs=$tmp/objs
mkdir -p "$objs"
read -r -a wanted <<<"$SLURM_HELPER_OBJECTS"
for o in "${wanted[@]}"; do
    n=$(grep -cxF "$o" <<<"$members" || true)
    [ "$n" = 1 ] || die "$SLURM_HELPER_ARCHIVE has $n members named $o (expected 1); members: $(paste -sd' ' <<<"$members")"
done
(cd "$objs" && ar x "$archive" "${wanted[@]}")
(cd "$objs" && ar rcsD "$stage/lib/libslurm_topology_common.a" "${wanted[@]}")
[ "$(ar t "$stage/lib/libslurm_topology_common.a" | paste -sd' ')" = "${wanted[*]}" ] ||
    die "libslurm_topology_common.a does not hold exactly: ${wanted[*]}"

# ---- verify/: a few objects of libslurmfull.a, only for checking the ABI header's layouts
# (scripts/gen-abi-header.py --verify-objects); nothing links them
if [ -n "${SLURM_VERIFY_ARCHIVE:-}" ]; then
    varchive=$tmp/plugins-dev/$SLURM_VERIFY_ARCHIVE
    [ -f "$varchive" ] || die "$SLURM_PLUGINS_DEV_DEB has no $SLURM_VERIFY_ARCHIVE"
    read -r -a vwanted <<<"${SLURM_VERIFY_OBJECTS:-}"
    mkdir -p "$stage/verify"
    (cd "$stage/verify" && ar x "$varchive" "${vwanted[@]}") ||
        die "cannot extract ${vwanted[*]} from $SLURM_VERIFY_ARCHIVE"
fi

# ---- into place; the marker last
rm -rf "$OUT"
mv "$stage" "$OUT"
echo "$STAMP" > "$MARK.part"
mv -f "$MARK.part" "$MARK"
say "Slurm $SLURM_VERSION ($SLURM_DEBIAN_VERSION) binary inputs ready: include/slurm ($(ls "$OUT/include/slurm" | paste -sd' ')), lib/libslurm_topology_common.a (${wanted[*]}), verify/ (${SLURM_VERIFY_OBJECTS:-none})"
echo "$OUT"
