#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_packaging.sh - the distribution packages describe the library twice
# more, and both descriptions must follow the sources:
#   1. debian/libbufferlist0.symbols and debian/libbufferlist-ceph0.symbols
#      list what the version scripts (src/libbufferlist.map,
#      src/libbufferlist_ceph.map) export, node by node: each global name
#      as NAME@NODE, the minimal version being the node's own (the release
#      that added it: LIBBUFFERLIST_0.2 -> 0.2), and a C++ wildcard of the
#      map as a demangled regex pattern of its node.  dpkg-gensymbols then
#      fails the package build (debian/rules sets check level 4) when the
#      built library and the symbols file differ, and this script when the
#      symbols file and the map do.
#   2. debian/changelog's upstream version and bufferlist.spec.in's
#      placeholder: the version is AC_INIT's in configure.ac, nowhere else.
# Run by `make check` (TESTS).  Exit 1 printing the difference.
#
# `check_packaging.sh --generate MAP SONAME PACKAGE DEV-PACKAGE` prints the
# symbols file of MAP; `check_packaging.sh --update` rewrites both files
# (after a new version node).
#
# Environment: top_srcdir (set by `make check`; default: .).

top_srcdir=${top_srcdir:-.}

# Prints the symbols file (deb-symbols(5)) of version script $1 for the
# library whose SONAME is $2 in package $3 (-dev package $4).
gen_symbols()
{
	printf '%s %s #MINVER#\n' "$2" "$3"
	printf '* Build-Depends-Package: %s\n' "$4"
	awk '
	{ sub(/#.*$/, ""); text = text " " $0 }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
		gsub(/[{};]/, " & ", text)
		gsub(/:/, " : ", text)
		gsub(/ :  : /, "::", text)	# C++ scopes stay whole
		n = split(text, t, /[ \t]+/)
		depth = 0
		for (i = 1; i <= n; i++) {
			if (t[i] == "")
				continue
			if (depth == 0) {
				if (t[i + 1] == "{") {
					node = t[i]
					ver = node
					sub(/^[A-Z_]*_/, "", ver)
					print " " node "@" node " " ver
				}
				if (t[i] == "{") {
					depth = 1
					g = 1
				}
				continue
			}
			if (t[i] == "extern") {
				cxx = 1
				continue
			}
			if (t[i] == "{") {
				depth++
				continue
			}
			if (t[i] == "}") {
				depth--
				cxx = 0
				continue
			}
			if (t[i] == ":" || t[i] == ";" || t[i] ~ /^"/)
				continue
			if (t[i + 1] == ":" && (t[i] == "global" ||
						t[i] == "local")) {
				g = t[i] == "global"
				continue
			}
			if (!g)
				continue
			if (cxx) {
				re = t[i]
				gsub(/[.()+^$|\\[\]]/, "\\\\&", re)
				gsub(/\*/, ".*", re)
				gsub(/\?/, ".", re)
				nre = node
				gsub(/\./, "\\\\.", nre)
				print " (c++|regex)\"^" re "@" nre "$\" " ver
			} else {
				print " " t[i] "@" node " " ver
			}
		}
	}' "$1" | LC_ALL=C sort
}

# The symbols files: "MAP SONAME PACKAGE DEV-PACKAGE FILE", one a line.
symbols_files()
{
	cat <<-EOF
	src/libbufferlist.map libbufferlist.so.0 libbufferlist0 libbufferlist-dev debian/libbufferlist0.symbols
	src/libbufferlist_ceph.map libbufferlist_ceph.so.0 libbufferlist-ceph0 libbufferlist-ceph-dev debian/libbufferlist-ceph0.symbols
	EOF
}

case $1 in
--generate)
	gen_symbols "$2" "$3" "$4" "$5"
	exit 0
	;;
--update)
	symbols_files | while read -r map so pkg dev file; do
		gen_symbols "$top_srcdir/$map" "$so" "$pkg" "$dev" \
			>"$top_srcdir/$file" || exit 1
		echo "packaging: wrote $file"
	done
	exit $?
	;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bl_packaging.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
status=0
nsym=0

while read -r map so pkg dev file; do
	if [ ! -f "$top_srcdir/$file" ] || [ ! -f "$top_srcdir/$map" ]; then
		echo "packaging: $file or $map missing" >&2
		status=1
		continue
	fi
	gen_symbols "$top_srcdir/$map" "$so" "$pkg" "$dev" >"$tmp/want"
	if ! diff -u "$top_srcdir/$file" "$tmp/want" >"$tmp/diff"; then
		echo "packaging: $file does not list what $map exports" \
			"(test/check_packaging.sh --update rewrites it):"
		cat "$tmp/diff"
		status=1
	fi
	nsym=$((nsym + $(grep -c '^ ' "$tmp/want")))
done <<EOF
$(symbols_files)
EOF

# AC_INIT([libbufferlist], [VERSION], ...)
version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' \
	"$top_srcdir/configure.ac")
if [ -z "$version" ]; then
	echo "packaging: no version in configure.ac's AC_INIT" >&2
	exit 1
fi
# libbufferlist (0.1.0-1) UNRELEASED; urgency=medium
deb=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$top_srcdir/debian/changelog")
deb_upstream=${deb%-*}
deb_upstream=${deb_upstream#*:}
if [ "$deb_upstream" != "$version" ]; then
	echo "packaging: debian/changelog is at $deb (upstream $deb_upstream)," \
		"configure.ac at $version: add a debian/changelog entry" \
		"(dch -v $version-1)"
	status=1
fi
if ! grep -q '^Version:[ 	]*@PACKAGE_VERSION@$' \
		"$top_srcdir/bufferlist.spec.in"; then
	echo "packaging: bufferlist.spec.in must take its Version from" \
		"configure (Version: @PACKAGE_VERSION@)"
	status=1
fi

if [ $status -ne 0 ]; then
	echo "packaging: FAIL"
	exit 1
fi
echo "packaging: $nsym symbols of the version scripts in debian/*.symbols;" \
	"debian/changelog and the spec at $version"
exit 0
