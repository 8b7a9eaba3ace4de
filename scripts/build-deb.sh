#!/usr/bin/env bash
# Builds ambient's Debian package (README, "Run it as a service").
#
#   scripts/build-deb.sh [--fast] [--output DIR] [BINARY]
#
# Without BINARY and with cargo-deb installed, this is `cargo deb`. Otherwise
# the package is assembled here from the same [package.metadata.deb] table of
# Cargo.toml (assets, conf-files, maintainer scripts, depends — a key this
# script does not know is refused, so the two cannot drift apart) and built
# with dpkg-deb. BINARY stands in for target/release/ambient (default: that
# binary, built first with `cargo build --release --locked`). --fast
# compresses with gzip instead of xz, as `cargo deb --fast` does; --output
# puts the package in DIR (default target/debian). Prints the package's path.
# Needs dpkg-deb and jq (Debian: apt-get install jq).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
    echo "build-deb.sh: $*" >&2
    exit 1
}

fast=0
out=""
binary=""
while [ $# -gt 0 ]; do
    case $1 in
    --fast) fast=1 ;;
    --output)
        [ $# -ge 2 ] || die "--output needs a directory"
        out=$2
        shift
        ;;
    -h | --help)
        sed -n '2,14p' "$0"
        exit 0
        ;;
    -*) die "unknown option $1 (valid: --fast, --output DIR, a binary's path)" ;;
    *)
        [ -z "$binary" ] || die "one binary at most, got $binary and $1"
        binary=$1
        ;;
    esac
    shift
done

if [ -z "$binary" ] && cargo deb --version >/dev/null 2>&1; then
    args=()
    [ "$fast" = 1 ] && args+=(--fast)
    [ -n "$out" ] && args+=(--output "$out")
    exec cargo deb "${args[@]}"
fi

command -v dpkg-deb >/dev/null || die "dpkg-deb is not installed (Debian: apt-get install dpkg)"
command -v jq >/dev/null || die "jq is not installed (Debian: apt-get install jq)"

meta=$(cargo metadata --no-deps --format-version 1 --offline)
pkg=$(jq '.packages[] | select(.name == "ambient")' <<<"$meta")
deb=$(jq '.metadata.deb' <<<"$pkg")
known='["maintainer","copyright","extended-description","depends","section","priority","maintainer-scripts","conf-files","assets","revision"]'
unknown=$(jq -r --argjson known "$known" 'keys - $known | join(", ")' <<<"$deb")
[ -z "$unknown" ] || die "Cargo.toml [package.metadata.deb] has keys this script does not package: $unknown (teach it, or use cargo deb)"

field() { jq -r --arg k "$1" '.[$k] // empty' <<<"$deb"; }
name=$(jq -r .name <<<"$pkg")
revision=$(field revision)
version="$(jq -r .version <<<"$pkg")-${revision:-1}"
arch=$(dpkg --print-architecture)
target_dir=$(jq -r .target_directory <<<"$meta")
out=${out:-$target_dir/debian}

if [ -z "$binary" ]; then
    cargo build --release --locked >&2
    binary=$target_dir/release/ambient
fi
[ -f "$binary" ] && [ -x "$binary" ] || die "$binary is not an executable file"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root/DEBIAN"

# The assets: [source (a glob), destination (a directory when it ends in /), mode].
while IFS=$'\t' read -r src dest mode; do
    if [ "$src" = target/release/ambient ]; then
        files=("$binary")
    else
        # shellcheck disable=SC2206 # the source is a glob, expanded here as cargo-deb does
        files=($src)
        [ -e "${files[0]}" ] || die "asset $src matches no file"
    fi
    for f in "${files[@]}"; do
        to=$root/$dest
        [ "${dest%/}" = "$dest" ] || to=$to$(basename "$f")
        install -D -m "$mode" "$f" "$to"
    done
done < <(jq -r '.assets[] | @tsv' <<<"$deb")
# Debian wants a copyright file in every package; cargo-deb writes this one.
license=$(jq -r .license <<<"$pkg")
printf 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: %s\nCopyright: %s\nLicense: %s\n' \
    "$name" "$(field copyright)" "$license" | install -D -m 644 /dev/stdin "$root/usr/share/doc/$name/copyright"
# cargo-deb strips the binaries it packages; debug symbols do not belong on a server.
if command -v strip >/dev/null; then strip --strip-unneeded "$root/usr/bin/ambient"; fi

jq -r '."conf-files"[]?' <<<"$deb" >"$root/DEBIAN/conffiles"
scripts=$(field maintainer-scripts)
for s in preinst postinst prerm postrm; do
    if [ -n "$scripts" ] && [ -f "$scripts/$s" ]; then install -m 755 "$scripts/$s" "$root/DEBIAN/$s"; fi
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

{
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $arch"
    echo "Maintainer: $(field maintainer)"
    echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    echo "Depends: $(field depends)"
    echo "Section: $(field section)"
    echo "Priority: $(field priority)"
    echo "Description: $(jq -r .description <<<"$pkg")"
    # The extended description, folded into the control file's continuation lines.
    field extended-description | fold -s -w 79 | sed 's/ *$//; s/^$/./; s/^/ /'
} >"$root/DEBIAN/control"

mkdir -p "$out"
file=$out/${name}_${version}_${arch}.deb
if [ "$fast" = 1 ]; then compress=(-Zgzip -z1); else compress=(-Zxz); fi
dpkg-deb --root-owner-group "${compress[@]}" --build "$root" "$file" >&2
echo "$file"
