#!/usr/bin/env bash
# Packs this machine's PostgreSQL (Debian's /usr/lib/postgresql/15) into one archive for a
# machine that has none and no network (the GPU machines): the server, initdb and pg_ctl,
# the modules initdb loads, the share folder, and the libraries they link (not glibc's),
# laid out as under / so the server finds its share folder relative to its binary.
# ~20 MB; unpack it with pg_carried (lab/exp020/pg.sh).
#
#   lab/exp020/pg-pack.sh [OUT=.carry/pg.tar.xz]
set -euo pipefail
out=${1:-.carry/pg.tar.xz}
[ -e "$out" ] && { echo "pg-pack: $out exists; not overwriting it" >&2; exit 1; }
src=$(ls -d /usr/lib/postgresql/*/ | sort -V | tail -1); ver=$(basename "$src")
root=$(mktemp -d); trap 'rm -rf "$root"' EXIT
mkdir -p "$root/lib" "$root/usr/lib/postgresql/$ver/bin" "$root/usr/share/postgresql"
cp -a "$src/bin/"{postgres,initdb,pg_ctl} "$root/usr/lib/postgresql/$ver/bin/"
# initdb loads plpgsql and the snowball dictionaries; the encoding conversions load on use.
mkdir -p "$root/usr/lib/postgresql/$ver/lib"
cp -a "$src/lib/"{plpgsql.so,dict_snowball.so,*_and_*.so} "$root/usr/lib/postgresql/$ver/lib/"
cp -a "/usr/share/postgresql/$ver" "$root/usr/share/postgresql/"
find "$root/usr/share/postgresql/$ver/extension" -type f ! -name 'plpgsql*' -delete
for b in postgres initdb pg_ctl; do ldd "$src/bin/$b"; done | awk '/=> \//{ print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libresolv|libpthread|libdl|ld-linux[^/]*)\.so' | xargs -I{} cp -L {} "$root/lib/"
mkdir -p "$(dirname "$out")"
tar -C "$root" -cf - . | xz -9e -T2 > "$out.part" && mv -n "$out.part" "$out"
echo "pg-pack: $out ($(du -h "$out" | cut -f1), PostgreSQL $ver)"
