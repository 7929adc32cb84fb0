#!/bin/bash
# apt-mirrors.sh — sourced: the Debian archives this machine's own apt configuration names, so
# that no script carries an archive host of its own.
#   apt_mirror           MIRROR, else a host apt URI ending in /debian, else the first
#                        non-security one
#   apt_security_mirror  SECURITY_MIRROR, else a host apt URI naming security, else the
#                        archive's sibling <mirror>-security
host_apt_uris() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] && awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\).*/\2/p' "$f"
    done
    return 0
}
apt_mirror() {
    if [ -z "${MIRROR:-}" ]; then
        local uris
        uris=$(host_apt_uris | grep -E '^(https?|ftp|file)://' || true)
        MIRROR=$({ grep -E '/debian/?$' <<<"$uris" || true; grep -v security <<<"$uris" || true; } | head -n 1)
        [ -n "$MIRROR" ] || { echo "no Debian archive URI in this machine's apt sources; set MIRROR=<url>" >&2; return 1; }
    fi
    echo "${MIRROR%/}"
}
apt_security_mirror() {
    if [ -z "${SECURITY_MIRROR:-}" ]; then
        SECURITY_MIRROR=$(host_apt_uris | grep -E '^(https?|ftp|file)://' | grep security | head -n 1 || true)
        [ -n "$SECURITY_MIRROR" ] || SECURITY_MIRROR="$(apt_mirror)-security" || return 1
    fi
    echo "${SECURITY_MIRROR%/}"
}
