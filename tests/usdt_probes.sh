#!/bin/sh
# usdt_probes.sh DOC LIBRARY [READELF]
#
# The probe table of DOC (doc/observability.md) and the library's USDT notes (provider lull)
# name the same probes: every probe the table lists is in LIBRARY
# (readelf -n), and every probe in LIBRARY is in the table. Run by ctest
# on the built library (usdt_probes) and by check-package.sh on the
# installed one.
set -eu
readme=$1
lib=$2
readelf=${3:-readelf}

# The table's first column, from its header row to the first line that is
# not a table row; each `name` in it is a probe.
listed=$(awk '/^\| probe \| arguments \| fires \|/ { t = 1; next }
              t && !/^\|/ { exit }
              t { split($0, c, "|"); print c[2] }' "$readme" |
         grep -o '`[a-z_0-9]*`' | tr -d '`' | sort -u)
[ -n "$listed" ] || { echo "usdt_probes: no probe table in $readme" >&2; exit 1; }

notes=$("$readelf" -n "$lib") || exit 1
in_lib=$(echo "$notes" | awk '/Provider: lull$/ { p = 1; next } p && /Name:/ { print $2; p = 0 }' | sort -u)
[ -n "$in_lib" ] || { echo "usdt_probes: $lib has no probe of provider lull" >&2; exit 1; }

missing=$(printf '%s\n' "$listed" | grep -vxF "$in_lib" || true)
unlisted=$(printf '%s\n' "$in_lib" | grep -vxF "$listed" || true)
[ -z "$missing" ] || { echo "usdt_probes: listed in $readme but not in $lib:" $missing >&2; exit 1; }
[ -z "$unlisted" ] || { echo "usdt_probes: in $lib but not listed in $readme:" $unlisted >&2; exit 1; }
echo "usdt_probes: the $(printf '%s\n' "$listed" | wc -l) probes $readme lists are all in $lib, and no other"
