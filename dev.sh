#!/bin/sh
# ambient's two entry points, with all set-up included:
#   ./dev.sh run [ARGS]    build and start the bot (`ambient run`; ARGS go to ambient,
#                          e.g. `./dev.sh run console` for the terminal console)
#   ./dev.sh test          check the formatting, build and run every test, then clippy
#                          (`./dev.sh test NAME` runs just the tests matching NAME)
#   ./dev.sh install       build and install the `ambient` command
#                          (cargo install: into ~/.cargo/bin, which must be on PATH)
# On a fresh Debian/Ubuntu machine it installs what is missing first: a C
# toolchain, pkg-config and libopus (voice), and Rust via rustup; for the
# tests also espeak-ng (synthesised speech) and Chromium (the replay page's and the dashboard's
# browser check), if it can.
set -eu
cd "$(dirname "$0")"
# The caller's PATH, before ensure_rust adds ~/.cargo/bin to this script's own.
caller_path="$PATH"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else echo "dev.sh: need root to run: $*" >&2; exit 1
    fi
}

ensure_system_packages() {
    missing=""
    command -v cc >/dev/null 2>&1 || missing="$missing build-essential"
    command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
    if ! pkg-config --exists opus 2>/dev/null; then missing="$missing libopus-dev"; fi
    command -v curl >/dev/null 2>&1 || command -v cargo >/dev/null 2>&1 || missing="$missing curl ca-certificates"
    [ -z "$missing" ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "dev.sh: please install:$missing (a C compiler, pkg-config, libopus headers)" >&2
        exit 1
    fi
    echo "dev.sh: installing$missing" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# Installs a Debian package that some tests use, where apt and root (or sudo)
# can be had: $1 the package, $2 what it is for, $3 what skips without it.
# NO_RECOMMENDS=1 leaves its recommended packages out. Never fails the run.
install_for_tests() {
    command -v apt-get >/dev/null 2>&1 || return 1
    [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1 || return 1
    echo "dev.sh: installing $1 ($2)" >&2
    recommends=""
    [ "${NO_RECOMMENDS:-0}" = 1 ] && recommends="--no-install-recommends"
    { as_root apt-get update -qq &&
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $recommends "$1" >/dev/null; } && return 0
    echo "dev.sh: could not install $1; $3 will skip" >&2
    return 1
}

# Real synthesised speech for the voice tests.
ensure_espeak() {
    command -v espeak-ng >/dev/null 2>&1 && return 0
    install_for_tests espeak-ng "synthesised speech for the voice tests" "the synthesised-speech test" || true
}

# A headless browser for the replay page's and the dashboard's checks.
ensure_chromium() {
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        return 0
    fi
    install_for_tests chromium "the replay page's and the dashboard's headless browser checks" \
        "the browser checks of the replay page and the dashboard" || true
}

# jq for scripts/build-deb.sh.
ensure_jq() {
    command -v jq >/dev/null 2>&1 && return 0
    install_for_tests jq "scripts/build-deb.sh reads Cargo.toml's package table with it" "the package test" || true
}

# Prometheus, for the test that scrapes the bot with a real one. Debian's
# package also enables a prometheus service listening on every interface;
# the tests start their own on loopback, so that service is stopped and
# disabled again.
ensure_prometheus() {
    command -v prometheus >/dev/null 2>&1 && return 0
    NO_RECOMMENDS=1 install_for_tests prometheus "the metrics test scrapes the bot with it" \
        "the Prometheus scrape test" || return 0
    if command -v systemctl >/dev/null 2>&1; then
        as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
}

# PostgreSQL's server binaries (initdb, pg_ctl) for the shared-database
# tests, which start a throwaway cluster of their own; the packaged cluster
# Debian makes and starts is stopped again.
ensure_postgresql() {
    command -v initdb >/dev/null 2>&1 && return 0
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && return 0
    NO_RECOMMENDS=1 install_for_tests postgresql "the shared-database tests start a cluster with it" \
        "the PostgreSQL tests" || return 0
    if command -v systemctl >/dev/null 2>&1; then
        as_root systemctl disable --now postgresql >/dev/null 2>&1 || true
    fi
}

ensure_rust() {
    if command -v cargo >/dev/null 2>&1; then return 0; fi
    if [ -x "$HOME/.cargo/bin/cargo" ]; then PATH="$HOME/.cargo/bin:$PATH"; export PATH; return 0; fi
    echo "dev.sh: installing Rust with rustup" >&2
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >&2
    PATH="$HOME/.cargo/bin:$PATH"; export PATH
}

# A rustup component (clippy, rustfmt) for the checks beside the tests; a
# minimal rustup profile lacks them. A check that cannot run fails the run:
# skipping it would let unformatted or linted code land unseen.
ensure_component() {
    cargo "$2" --version >/dev/null 2>&1 && return 0
    command -v rustup >/dev/null 2>&1 && rustup component add "$1" >&2 && return 0
    echo "dev.sh: cannot install the Rust component $1, so the $3 check cannot run; install it (rustup component add $1)" >&2
    exit 1
}

# The code's layout is rustfmt's: a difference fails the run before the tests build.
check_format() {
    ensure_component rustfmt fmt format
    cargo fmt --check || { echo "dev.sh: the formatting differs from rustfmt's; run cargo fmt" >&2; exit 1; }
}

# Clippy on every target; a lint is allowed only where it is, with a reason.
check_lints() {
    ensure_component clippy clippy lint
    cargo clippy --all-targets --locked -- -D warnings
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
    run)
        ensure_system_packages
        ensure_rust
        if [ $# -eq 0 ]; then set -- run; fi
        exec cargo run --release --locked --quiet -- "$@"
        ;;
    test)
        ensure_system_packages
        ensure_espeak
        ensure_chromium
        ensure_jq
        ensure_prometheus
        ensure_postgresql
        ensure_rust
        # With arguments, just those tests (e.g. `./dev.sh test layers`).
        [ $# -gt 0 ] && exec cargo test --locked "$@"
        check_format
        cargo test --locked
        check_lints
        ;;
    install)
        ensure_system_packages
        ensure_rust
        cargo install --path . --locked "$@"
        bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
        echo "dev.sh: installed $bin/ambient" >&2
        case ":$caller_path:" in
            *":$bin:"*) ;;
            *) echo "dev.sh: $bin is not on your PATH; add it (e.g. export PATH=\"$bin:\$PATH\" in ~/.profile) to type \`ambient\`" >&2 ;;
        esac
        ;;
    *)
        echo "usage: ./dev.sh run [ARGS]   start the bot (ARGS go to ambient, e.g. console)" >&2
        echo "       ./dev.sh test          run every test" >&2
        echo "       ./dev.sh install       install the \`ambient\` command into ~/.cargo/bin (must be on PATH)" >&2
        exit 2
        ;;
esac
