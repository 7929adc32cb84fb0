#!/bin/bash
# install-deps.sh — host packages the build and the lab need, installed once (idempotent).
#   libclang-dev: bindgen; curl: fetch-slurm-source.sh; debootstrap is installed by lab-up.sh.
#   LINT=1 (test.sh): shellcheck for the lints, and chromium, the headless browser
#   e2e_report opens the HTML report in.
set -euo pipefail
need=()
[ -e /usr/lib/llvm-14/lib/libclang.so ] || ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || need+=(libclang-dev)
command -v curl >/dev/null || need+=(curl ca-certificates)
command -v cc >/dev/null || need+=(gcc libc6-dev)
[ "${LINT:-0}" != 1 ] || command -v shellcheck >/dev/null || need+=(shellcheck)
[ "${LINT:-0}" != 1 ] || command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "install-deps: need root to install ${need[*]}" >&2; exit 1; }
    echo "install-deps: installing ${need[*]}"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "install-deps: cargo not found (install a Rust toolchain)" >&2; exit 1; }
