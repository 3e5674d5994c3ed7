#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_layers.sh - keeps the layers of the library sealed.  Fails (exit 1)
# naming every offending line when
#   1. a file of src/, tools/ or examples/ outside the list layer touches
#      a private field of struct bl_list, of its chunks (struct
#      bl__chunk_hdr) or of its segment cursor (struct bl_list_seg_iter),
#      or names the chunk types at all: only list*.c, list_priv.h and
#      list_int.h may (list_int.h is the list's private API for the rest);
#   2. a file other than iter.c and iter_int.h touches a private field of
#      struct bl_iter;
#   3. a file includes the private header of a higher layer, or another
#      layer's *_priv.h (what a layer's own files share), or tools/ or
#      examples/ includes any private header of the library.
# The private fields are read from the public headers (the members whose
# names start with '_'), so the check follows the structs as they change.
#
# Layers, lowest first, with their files (a file not named here fails the
# check, so that the table stays true):
#   base        base_int.h endian_int.h
#   pool        pool_int.h pool.c
#   raw         raw_int.h raw.c
#   ptr         ptr.c
#   list        list_int.h list_priv.h list.c list_*.c
#   iter/codec  iter_int.h iter.c api_inline.c codec.c codec_*.c
#   crc         crc32c_int.h crc32c.c crc32c_*.c
#   io          io_int.h io.c
#   uring       uring_int.h uring_priv.h uring.c uring_*.c bufring.c regbuf.c
#   lz4         lz4_int.h lz4_*.c
#   msgr        msgr_int.h msgr.c msgr_*.c
#   ceph        ceph_int.h ceph.cc
#
# Environment: top_srcdir (set by `make check`; default: .).

top_srcdir=${top_srcdir:-.}
src=$top_srcdir/src
inc=$top_srcdir/include/bufferlist

# Exceptions, one "path rule" per line (rule: list, iter or include); the
# check passes with none, and should stay that way.
ALLOW=''

status=0

# rank FILE: the layer of a file of src/ (by its name), or nothing.
rank()
{
	case $1 in
	base_int.h | endian_int.h) echo 0 ;;
	pool_int.h | pool.c) echo 1 ;;
	raw_int.h | raw.c) echo 2 ;;
	ptr.c) echo 3 ;;
	list_int.h | list_priv.h | list.c | list_*.c) echo 4 ;;
	iter_int.h | iter.c | api_inline.c | codec.c | codec_*.c) echo 5 ;;
	crc32c_int.h | crc32c.c | crc32c_*.c) echo 6 ;;
	io_int.h | io.c) echo 7 ;;
	uring_int.h | uring_priv.h | uring.c | uring_*.c | bufring.c | regbuf.c)
		echo 8 ;;
	lz4_int.h | lz4_*.c) echo 9 ;;
	msgr_int.h | msgr.c | msgr_*.c) echo 10 ;;
	ceph_int.h | ceph.cc) echo 11 ;;
	esac
}

allowed()	# PATH RULE
{
	printf '%s\n' "$ALLOW" | grep -qx "$1 $2"
}

complain()	# PATH RULE MESSAGE
{
	if allowed "$1" "$2"; then
		return
	fi
	printf '%s\n' "$3" >&2
	status=1
}

# The members of `struct NAME {` in FILE whose names start with '_'.
private_fields()	# FILE NAME
{
	awk -v head="struct $2 {" '
	index($0, head) == 1 { on = 1; next }
	!on { next }
	/^};/ { exit }
	{
		line = $0
		# comments, including those that span lines
		out = ""
		while (line != "") {
			if (inc) {
				e = index(line, "*/")
				if (!e) { line = ""; break }
				line = substr(line, e + 2); inc = 0
			} else {
				b = index(line, "/*")
				if (!b) { out = out line; line = ""; break }
				out = out substr(line, 1, b - 1)
				line = substr(line, b + 2); inc = 1
			}
		}
		if (match(out, /[A-Za-z_][A-Za-z0-9_]*[ \t]*(\[[^]]*\])?[ \t]*;/)) {
			d = substr(out, RSTART, RLENGTH)
			sub(/[ \t\[;].*/, "", d)
			if (d ~ /^_/)
				print d
		}
	}' "$1"
}

alt()	# the words on stdin as one ERE alternation
{
	tr '\n' '|' | sed 's/|$//'
}

list_fields=$( { private_fields "$inc/list.h" bl_list;
		 private_fields "$inc/list.h" bl__chunk_hdr;
		 private_fields "$inc/list.h" bl_list_seg_iter; } | alt)
iter_fields=$(private_fields "$inc/iter.h" bl_iter | alt)
if [ -z "$list_fields" ] || [ -z "$iter_fields" ]; then
	echo "check_layers: no private field found in list.h or iter.h" >&2
	exit 1
fi
list_re="(->|\\.)[[:space:]]*($list_fields)([^A-Za-z0-9_]|\$)|bl__chunk"
iter_re="(->|\\.)[[:space:]]*($iter_fields)([^A-Za-z0-9_]|\$)"

files=$(cd "$top_srcdir" && ls src/*/*.c src/*/*.h src/*/*.cc tools/*.c tools/*.h \
	examples/*.c 2>/dev/null)

for f in $files; do
	b=${f##*/}
	case $f in
	tools/* | examples/*) r=tools ;;
	*)
		r=$(rank "$b")
		if [ -z "$r" ]; then
			complain "$f" include \
				"$f: not in the layer table of test/check_layers.sh"
			continue
		fi ;;
	esac

	# 1, 2: private fields
	case $b in
	list.c | list_*.c | list_int.h | list_priv.h) ;;
	*)
		hits=$(grep -nE "$list_re" "$top_srcdir/$f")
		if [ -n "$hits" ] && ! allowed "$f" list; then
			printf '%s\n' "$hits" | sed "s|^|$f: list internals: |" >&2
			status=1
		fi ;;
	esac
	case $b in
	iter.c | iter_int.h) ;;
	*)
		hits=$(grep -nE "$iter_re" "$top_srcdir/$f")
		if [ -n "$hits" ] && ! allowed "$f" iter; then
			printf '%s\n' "$hits" | sed "s|^|$f: cursor fields: |" >&2
			status=1
		fi ;;
	esac

	# 3: includes
	for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
			"$top_srcdir/$f"); do
		ls "$src"/*/"$h" >/dev/null 2>&1 || continue	# config.h, tools' own headers
		hr=$(rank "$h")
		if [ "$r" = tools ]; then
			complain "$f" include "$f: includes the library's private $h"
			continue
		fi
		if [ -z "$hr" ]; then
			complain "$f" include \
				"$f: includes $h, which is not in the layer table"
		elif [ "$hr" -gt "$r" ]; then
			complain "$f" include \
				"$f: includes $h, the private header of a higher layer"
		else
			case $h in
			*_priv.h)
				[ "$hr" -eq "$r" ] || complain "$f" include \
					"$f: includes $h, another layer's own header" ;;
			esac
		fi
	done
done
exit $status
