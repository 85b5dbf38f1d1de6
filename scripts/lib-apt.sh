# shellcheck shell=sh disable=SC2154
# (SC2154: SUITE, arch and apt_dir are the caller's)
# lib-apt.sh: a private apt configuration, for the scripts that fetch Debian packages without
# installing them (scripts/debian-root, scripts/prometheus-tools): its own sources list
# naming SUITE main on the mirror the host uses, its own package lists and cache,
# Dir::State::status=/dev/null (nothing installed on the host counts as present), signed by
# the debian-archive-keyring. The host's apt is never changed.
#
# The caller defines say and die, sets SUITE, arch (Debian's name) and apt_dir, then calls
# apt_source (sets mirror and keyring, or dies), private_apt (the lists), and passes
# $(apt_opts) to every apt-get and apt-cache.

# The mirror the host's own apt uses for Debian (deb822 or one-line sources), so the
# private configuration reaches Debian wherever this machine does.
host_mirror() {
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do
        [ -f "$f" ] || continue
        sed -n -e 's|^URIs:[[:space:]]*\([^[:space:]]*/debian\)/*$|\1|p' \
            -e 's|^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]*\)\{0,1\}\([^[:space:]]*/debian\)/*[[:space:]].*|\2|p' "$f"
    done | head -n 1
}

# mirror (TLSM_DEBIAN_MIRROR, else the host's, else deb.debian.org) and keyring.
apt_source() {
    mirror=${TLSM_DEBIAN_MIRROR:-$(host_mirror)}
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$keyring" ] || die "no $keyring (package debian-archive-keyring) to check $SUITE's signature"
}

# Every apt call reads only the private configuration for sources, lists, cache and status.
apt_opts() {
    printf '%s\n' -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null" \
        -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" \
        -o "Dir::State::status=/dev/null" -o "APT::Architecture=$arch" \
        -o "APT::Architectures=$arch" -o "APT::Sandbox::User=$(id -un)" \
        -o "Debug::NoLocking=1"
}

private_apt() {
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb [signed-by=$keyring] $mirror $SUITE main" >"$apt_dir/sources.list"
    say "apt-get update ($SUITE $arch from $mirror, private lists in $apt_dir)"
    # shellcheck disable=SC2046
    apt-get -q --error-on=any $(apt_opts) update >"$apt_dir/update.log" 2>&1 ||
        {
            cat "$apt_dir/update.log" >&2
            die "cannot read $SUITE's package lists from $mirror"
        }
}
