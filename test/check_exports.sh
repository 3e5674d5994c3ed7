#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_exports.sh - the exported ABI has three descriptions that must never
# drift apart:
#   1. the dynamic symbols the built shared library defines (nm -D),
#   2. the names the version script src/libbufferlist.map lists as global,
#   3. the functions the public headers declare with BL_API or define
#      with BL_API_INLINE (inline in the header, exported as well).
# Fails (exit 1) printing the difference when any two differ; exit 77 (SKIP)
# only when the shared library was not built (e.g. --disable-shared).
#
# Environment: top_srcdir and top_builddir (set by `make check`); both
# default to what fits a run from the build directory.
#
# `check_exports.sh --generate` instead prints a version script with one
# node listing every BL_API function of the headers (layer order), the way
# src/libbufferlist.map was first made; once a release is out, new symbols
# go into a new node by hand.

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
NM=${NM:-nm}

so=$top_builddir/src/.libs/libbufferlist.so
map=$top_srcdir/src/libbufferlist.map
hdrdir=$top_srcdir/include/bufferlist

# The BL_API names a header declares: every declaration starting with BL_API
# or BL_API_INLINE (joined with the next lines until a '(' or ';' shows up)
# declares one function (the identifier right before the first parenthesis)
# or, without one, one object (the identifier before ';' or '[').
bl_api_names()
{
	awk '
	/^BL_API(_INLINE)?[ \t]/ {
		s = $0
		while (!index(s, "(") && !index(s, ";") && (getline l) > 0)
			s = s " " l
		if (index(s, "(")) {
			s = substr(s, 1, index(s, "(") - 1)
		} else {
			sub(/[;[].*$/, "", s)
		}
		sub(/[ \t]+$/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/))
			print substr(s, RSTART, RLENGTH)
	}' "$@"
}

if [ "$1" = "--generate" ]; then
	hdrs=
	for l in pool raw ptr list codec crc32c io; do
		[ -f "$hdrdir/$l.h" ] && hdrs="$hdrs $hdrdir/$l.h"
	done
	for h in "$hdrdir"/*.h; do
		[ "${h##*/}" = ceph.h ] && continue	# libbufferlist_ceph's
		case " $hdrs " in *" $h "*) ;; *) hdrs="$hdrs $h" ;; esac
	done
	cat <<-'EOF'
	/* SPDX-License-Identifier: MIT */
	/*
	 * libbufferlist.map - the exported ABI, one version node per release.
	 * Every name here is declared with BL_API in the public headers and
	 * exported by the shared library; test/check_exports.sh fails when the
	 * three disagree.  New symbols go into a new node that inherits the last.
	 */
	LIBBUFFERLIST_0.1 {
	global:
	EOF
	for h in $hdrs; do
		names=$(bl_api_names "$h")
		[ -n "$names" ] || continue
		printf '\t/* %s */\n' "${h##*/}"
		printf '\t%s;\n' $names
	done
	printf 'local:\n\t*;\n};\n'
	exit 0
fi

if [ ! -f "$so" ]; then
	echo "exports: $so not built, skipping"
	exit 77
fi
for f in "$map" "$hdrdir"; do
	if [ ! -e "$f" ]; then
		echo "exports: $f missing" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bl_exports.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# 1. Defined global dynamic symbols: text, data, bss, read-only data (plus
# weak and ifunc, so a resolver-dispatched function is not missed).  The
# version nodes appear as absolute (A) symbols and are dropped; nm may print
# a version suffix (name@@NODE), which is cut.
if ! "$NM" -D --defined-only "$so" >"$tmp/nm.out"; then
	echo "exports: $NM -D failed on $so" >&2
	exit 1
fi
awk 'NF >= 3 && $2 ~ /^[TDBRWVi]$/ { sub(/@.*/, "", $3); print $3 }' \
	"$tmp/nm.out" | LC_ALL=C sort -u >"$tmp/so"

# 2. The version script: comments removed, split into tokens; every name
# inside a version node's braces that is global (after `global:`, or before
# any `local:`) is exported.  Node names and inherited nodes sit outside the
# braces.  A wildcard in a global section cannot be compared name by name
# and is an error.
awk '
	{ sub(/#.*$/, ""); text = text " " $0 }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
		gsub(/[{};:]/, " & ", text)
		n = split(text, t, /[ \t]+/)
		for (i = 1; i <= n; i++) {
			if (t[i] == "{") {
				depth++
				g = 1
			} else if (t[i] == "}") {
				depth--
				g = 0
			} else if (t[i] == ":") {
				continue
			} else if (t[i] == "global" && t[i + 1] == ":") {
				g = 1
			} else if (t[i] == "local" && t[i + 1] == ":") {
				g = 0
			} else if (t[i] != ";" && t[i] != "" &&
				   depth > 0 && g) {
				print t[i]
			}
		}
	}' "$map" | LC_ALL=C sort -u >"$tmp/map"
if grep -q '[][*?]' "$tmp/map"; then
	echo "exports: $map uses wildcards in a global section;" \
		"list every symbol explicitly:" >&2
	grep '[][*?]' "$tmp/map" >&2
	exit 1
fi

# 3. Declarations.  ceph.h belongs to libbufferlist_ceph (its own map).
hdrs=
for h in "$hdrdir"/*.h; do
	[ "${h##*/}" = ceph.h ] || hdrs="$hdrs $h"
done
bl_api_names $hdrs | LC_ALL=C sort -u >"$tmp/hdr"

n_so=$(wc -l <"$tmp/so")
n_map=$(wc -l <"$tmp/map")
n_hdr=$(wc -l <"$tmp/hdr")
status=0

report()
{
	# $1 $2: files; $3 $4: their names
	if ! cmp -s "$1" "$2"; then
		status=1
		echo "exports: $3 and $4 differ:"
		LC_ALL=C comm -23 "$1" "$2" | sed "s/^/  only in $3: /"
		LC_ALL=C comm -13 "$1" "$2" | sed "s/^/  only in $4: /"
	fi
}

# (so = map and headers = map give so = headers)
report "$tmp/so" "$tmp/map" "libbufferlist.so" "libbufferlist.map"
report "$tmp/hdr" "$tmp/map" "headers(BL_API)" "libbufferlist.map"

if [ "$n_so" -eq 0 ]; then
	echo "exports: no symbols found in $so" >&2
	status=1
fi
if [ $status -ne 0 ]; then
	echo "exports: FAIL (so: $n_so, map: $n_map, headers: $n_hdr)"
	exit 1
fi
echo "exports: $n_so symbols match (so, map, headers)"
exit 0
