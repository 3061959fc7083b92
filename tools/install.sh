#!/usr/bin/env bash
# make install / make uninstall (see the Makefile):
#
#   tools/install.sh install DEST     DEST = $(DESTDIR)$(PREFIX)
#   tools/install.sh uninstall DEST
#
# install writes
#   DEST/lib/spindle/...        every library source under lib/ (spindle.sls,
#                               spindle/, srfi/:18.sls, util/), the places'
#                               template program, and a compiled object (.so)
#                               beside each library, made by this machine's
#                               scheme after the sources are in place (Chez
#                               loads an object only when it is not older than
#                               its source)
#   DEST/bin/spindle            the command line; it finds DEST/lib/spindle
#                               from its own location, so nothing here names DEST
#   DEST/share/doc/spindle/     README.md, doc/*.md, examples/
#   DEST/lib/spindle/install-manifest
#                               what install wrote: "f PATH" per file, "d PATH"
#                               per directory it created (DEST itself: "d ."),
#                               PATH relative to DEST
# uninstall removes the files of the manifest, then the directories it lists
# once they are empty (deepest first), so files others put there stay.
# Installing over an earlier install uninstalls that one first.
set -eo pipefail
src=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cmd=${1:-}; dest=${2:-}
[ -n "$dest" ] && [ "$cmd" = install -o "$cmd" = uninstall ] ||
  { echo "usage: $0 install|uninstall DEST" >&2; exit 2; }
case "$dest" in /*) ;; *) dest=$(pwd)/$dest ;; esac
dest=${dest%/}
libdir=lib/spindle
manifest=$libdir/install-manifest

uninstall() {
  local m="$dest/$manifest" list kind path
  [ -f "$m" ] || { echo "spindle: nothing to uninstall: no $m" >&2; return 1; }
  list=$(cat "$m")
  while read -r kind path; do
    if [ "$kind" = f ]; then rm -f "$dest/$path"; fi
  done <<< "$list"
  rm -f "$m"
  # directories were listed parents first: remove them children first,
  # and only when empty (rmdir), so what others put there stays
  tac <<< "$list" | while read -r kind path; do
    if [ "$kind" = d ]; then rmdir "$dest/${path#.}" 2>/dev/null || true; fi
  done
  echo "spindle: uninstalled from $dest"
}

[ "$cmd" = install ] || { uninstall; exit; }

command -v scheme >/dev/null || { echo "spindle: scheme (Chez Scheme) is not on the PATH" >&2; exit 1; }
[ ! -f "$dest/$manifest" ] || uninstall >/dev/null

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
files=$tmp/files dirs=$tmp/dirs
: > "$files"; : > "$dirs"

# Creates DEST/dir and its missing parents, noting each one it created.
make_dir() {
  [ -d "$dest/$1" ] && return
  make_dir "$(dirname "$1")"
  mkdir "$dest/$1"
  echo "d $1" >> "$dirs"
}
# put MODE FROM TO: copies FROM (under the checkout) to DEST/TO.
put() {
  make_dir "$(dirname "$3")"
  install -m "$1" "$src/$2" "$dest/$3"
  echo "f $3" >> "$files"
}

if [ ! -d "$dest" ]; then mkdir -p "$dest"; echo "d ." >> "$dirs"; fi
(cd "$src/lib" && find . \( -name '*.sls' -o -name '*.ss' -o -name '*.html' \) -printf '%P\n' | LC_ALL=C sort) > "$tmp/sources"
while read -r f; do put 644 "lib/$f" "$libdir/$f"; done < "$tmp/sources"
put 755 bin/spindle bin/spindle
put 644 README.md share/doc/spindle/README.md
for f in "$src"/doc/*.md; do put 644 "doc/${f##*/}" "share/doc/spindle/${f##*/}"; done
for f in "$src"/examples/*; do put 644 "examples/${f##*/}" "share/doc/spindle/examples/${f##*/}"; done

# Compile every library in place: a program importing each of them.
grep '\.sls$' "$tmp/sources" | sed -e 's|\.sls$||' -e 's|/| |g' -e 's|.*|(only (&))|' |
  { echo '(import'; cat; echo ')'; } > "$tmp/all.ss"
scheme --libdirs "$dest/$libdir" --optimize-level 3 --compile-imported-libraries --program "$tmp/all.ss" >/dev/null
# the places' template program too (place.sls runs its object)
zygote=spindle/private/places/place-zygote
echo "(compile-program \"$dest/$libdir/$zygote.ss\" \"$dest/$libdir/$zygote.so\")" |
  scheme -q --libdirs "$dest/$libdir" --optimize-level 3 >/dev/null
echo "f $libdir/$zygote.so" >> "$files"
while read -r f; do
  case "$f" in *.sls)
    obj=$libdir/${f%.sls}.so
    [ -f "$dest/$obj" ] || { echo "spindle: no compiled object $dest/$obj" >&2; exit 1; }
    echo "f $obj" >> "$files" ;;
  esac
done < "$tmp/sources"

cat "$dirs" "$files" > "$dest/$manifest"
echo "spindle: installed in $dest ($(wc -l < "$files") files); uninstall with make uninstall PREFIX=..."
