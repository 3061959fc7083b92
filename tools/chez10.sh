#!/usr/bin/env bash
# Builds Chez Scheme 10.0.0 from Debian 13's (trixie's) source package into
# a cache outside the checkout, once, and prints the path of its `scheme`.
# Everything comes from Debian: trixie's orig tarball (deb-src lines for
# trixie, pinned so that no other package moves to trixie), trixie's `zuo`
# (the build driver the tarball's dfsg cut left out; it installs on Debian
# 12), Debian's nanopass and build dependencies.  About 4-5 minutes on
# 2 cores.  CHEZ10_PREFIX: where to install (default: the cache below).
set -euo pipefail
version=10.0.0
prefix=${CHEZ10_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/spindle/chez-$version}
scheme=$prefix/bin/scheme

if [ -x "$scheme" ] && "$scheme" --version 2>&1 | grep -qx "$version"; then
  echo "$scheme"; exit 0
fi

SUDO=$(command -v sudo >/dev/null 2>&1 && [ "$(id -u)" != 0 ] && echo sudo || true)
say() { echo "chez10: $*" >&2; }

# trixie for two things only: the chezscheme source and the zuo binary
if [ ! -f /etc/apt/sources.list.d/spindle-trixie.sources ]; then
  say "adding Debian 13 (trixie) sources, pinned to zuo and source packages"
  $SUDO tee /etc/apt/sources.list.d/spindle-trixie.sources >/dev/null <<'SRC'
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  $SUDO tee /etc/apt/preferences.d/spindle-trixie >/dev/null <<'PIN'
Package: *
Pin: release n=trixie
Pin-Priority: -1

Package: zuo
Pin: release n=trixie
Pin-Priority: 500
PIN
fi
say "installing the build dependencies with apt-get"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  zuo r6rs-nanopass-dev zlib1g-dev liblz4-dev libncurses-dev uuid-dev libx11-dev \
  build-essential xz-utils >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# The orig tarball is what the build needs (apt checks it against trixie's
# signed Sources index); the .dsc and Debian's patch set are not used and
# may be gone from the mirror, so apt's exit status is not trusted alone.
apt-get source --download-only chezscheme/trixie >/dev/null 2>&1 || true
tarball=$(ls chezscheme_"$version"+dfsg.orig.tar.* 2>/dev/null | head -1)
[ -n "$tarball" ] || { say "could not download chezscheme $version's source from trixie"; exit 1; }
tar xf "$tarball"
cd ChezScheme-"$version"
# The dfsg tarball lacks the zuo, nanopass and stex submodules: the build
# uses Debian's zuo and nanopass, and stex only makes the manuals.
mkdir -p zuo nanopass stex bin
touch -d 2000-01-01 zuo/configure zuo/zuo.c
touch stex/Mf-stex
cp -r /usr/share/r6rs/nanopass.ss /usr/share/r6rs/nanopass nanopass/
ln -sf "$(command -v zuo)" bin/zuo
say "building Chez Scheme $version into $prefix"
./configure --as-is --threads --installprefix="$prefix" ZLIB=-lz LZ4=-llz4 >build.log 2>&1 ||
  { tail -20 build.log >&2; exit 1; }
make -j "$(nproc)" >>build.log 2>&1 || { tail -40 build.log >&2; exit 1; }
make install >>build.log 2>&1 || { tail -20 build.log >&2; exit 1; }
"$scheme" --version 2>&1 | grep -qx "$version" || { say "the built scheme does not run"; exit 1; }
echo "$scheme"
