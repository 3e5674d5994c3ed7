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
#   3. a file outside the raw layer (raw.c, raw_int.h) touches a field of
#      struct bl_raw: the rest of the library goes through raw_int.h's
#      inline functions;
#   4. a file includes the private header of a higher layer (or of another
#      layer of its rank), another layer's *_priv.h (what a layer's own
#      files share) or one of the headers that the table's "own" row keeps
#      to their layer, or tools/ or examples/ includes any private header
#      of the library;
#   5. docs/ARCHITECTURE.md's copy of the table of layers differs from it.
# The private fields of struct bl_list and struct bl_iter are read from
# the public headers (the members whose names start with '_'), those of
# struct bl_raw from raw_int.h (all of them), so the check follows the
# structs as they change.  A field of struct bl_raw is recognised through
# the names that the file, or a header's struct member, declares as a
# struct bl_raw pointer (r->len, p->raw->data, raws[i]->pool).
#
# The layers and their files are test/layers.txt's (a file it does not
# name fails the check, so that the table stays true).
#
# Environment: top_srcdir (set by `make check`; default: .).

top_srcdir=${top_srcdir:-.}
src=$top_srcdir/src
inc=$top_srcdir/include/bufferlist
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/layers.sh"

# Exceptions, one "path rule" per line (rule: list, iter, raw or include);
# the check passes with none, and should stay that way.
ALLOW=''

status=0

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

# The names of the members of `struct bl_raw {` in FILE (one level down:
# a union member counts by its own name).
raw_fields()	# FILE
{
	awk '
	index($0, "struct bl_raw {") == 1 { on = 1; depth = 1; next }
	!on { next }
	{
		line = $0
		gsub(/\/\*.*\*\//, "", line)
		sub(/\/\*.*/, "", line)
		if (line ~ /^[ \t]*\*/)
			next
		if (line ~ /{/) { depth++; next }
		if (line ~ /}/) {
			depth--
			if (depth == 0)
				exit
			if (depth == 1 && match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*;/)) {
				d = substr(line, RSTART, RLENGTH)
				sub(/[ \t;].*/, "", d)
				print d
			}
			next
		}
		if (depth == 1 && line !~ /^#/ &&
		    match(line, /[A-Za-z_][A-Za-z0-9_]*[ \t]*(\[[^]]*\])?[ \t]*;/)) {
			d = substr(line, RSTART, RLENGTH)
			sub(/[ \t\[;].*/, "", d)
			print d
		}
	}' "$1"
}

# The names that FILE declares as pointers to struct bl_raw; with
# "members", only declarations that end a statement (a struct's members).
raw_names()	# FILE [members]
{
	awk -v members="$2" '
	{
		line = $0
		while (match(line, /struct bl_raw[ \t]*\*+[ \t]*(const[ \t]+)?[A-Za-z_][A-Za-z0-9_]*[ \t]*(\[[^]]*\])?[ \t]*[;,=)]/)) {
			d = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			end = substr(d, length(d))
			sub(/^struct bl_raw[ \t]*\*+[ \t]*(const[ \t]+)?/, "", d)
			sub(/[^A-Za-z0-9_].*$/, "", d)
			if (members == "" || end == ";")
				print d
		}
	}' "$1"
}

list_fields=$( { private_fields "$inc/list.h" bl_list;
		 private_fields "$inc/list.h" bl__chunk_hdr;
		 private_fields "$inc/list.h" bl_list_seg_iter; } | alt)
iter_fields=$(private_fields "$inc/iter.h" bl_iter | alt)
if [ -z "$list_fields" ] || [ -z "$iter_fields" ]; then
	echo "check_layers: no private field found in list.h or iter.h" >&2
	exit 1
fi
raw_field_alt=$(raw_fields "$src/core/raw_int.h" | alt)
raw_members=$(cat "$inc"/*.h "$src"/*/*.h | raw_names /dev/stdin members | sort -u)
if [ -z "$raw_field_alt" ] || [ -z "$raw_members" ]; then
	echo "check_layers: no field of struct bl_raw found in raw_int.h" >&2
	exit 1
fi
list_re="(->|\\.)[[:space:]]*($list_fields)([^A-Za-z0-9_]|\$)|bl__chunk"
iter_re="(->|\\.)[[:space:]]*($iter_fields)([^A-Za-z0-9_]|\$)"

own=$(layer_own)

files=$(cd "$top_srcdir" && ls src/*/*.c src/*/*.h src/*/*.cc tools/*.c tools/*.h \
	examples/*.c 2>/dev/null)

for f in $files; do
	b=${f##*/}
	set -- $(layer_of "$f")
	r=${1-}
	ly=${2-}
	if [ -z "$r" ]; then
		complain "$f" include "$f: not in the table of layers (test/layers.txt)"
		continue
	fi

	# 1, 2, 3: private fields
	case $ly:$b in
	list:*) ;;
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
	if [ "$ly" != raw ]; then
		names=$( { printf '%s\n' "$raw_members"
			   raw_names "$top_srcdir/$f"; } | sort -u | alt)
		raw_re="(^|[^A-Za-z0-9_])($names)(\\[[^]]*\\])?[[:space:]]*->[[:space:]]*($raw_field_alt)([^A-Za-z0-9_]|\$)"
		hits=$(grep -nE "$raw_re" "$top_srcdir/$f")
		if [ -n "$hits" ] && ! allowed "$f" raw; then
			printf '%s\n' "$hits" | sed "s|^|$f: raw fields: |" >&2
			status=1
		fi
	fi

	# 4: includes
	for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
			"$top_srcdir/$f"); do
		hp=$(cd "$top_srcdir" && ls src/*/"$h" 2>/dev/null | head -n 1)
		[ -n "$hp" ] || continue	# config.h, tools' own headers
		if [ "$ly" = tools ]; then
			complain "$f" include "$f: includes the library's private $h"
			continue
		fi
		set -- $(layer_of "$hp")
		hr=${1-}
		hly=${2-}
		if [ -z "$hr" ]; then
			complain "$f" include \
				"$f: includes $h, which is not in the table of layers"
		elif [ "$hly" = "$ly" ]; then
			:
		elif [ "$hr" -ge "$r" ]; then
			complain "$f" include \
				"$f: includes $h, the private header of layer $hly, not below $ly"
		else
			case " $(echo $own) " in *" $h "*) own_h=1 ;; *) own_h= ;; esac
			case $h in
			*_priv.h)
				complain "$f" include \
					"$f: includes $h, layer $hly's own header" ;;
			*)
				[ -z "$own_h" ] || complain "$f" include \
					"$f: includes $h, which layer $hly keeps to itself (test/layers.txt)" ;;
			esac
		fi
	done
done

# 5: the copy of the table in docs/ARCHITECTURE.md, between the lines
# "<!-- test/layers.txt -->" and the end of the code block after it, is
# the table's rows (its lines that are not comments)
arch=$top_srcdir/docs/ARCHITECTURE.md
if [ -f "$arch" ]; then
	quote=$(awk '/^<!-- test\/layers.txt -->/ { on = 1; next }
		on && /^```/ { if (seen) exit; seen = 1; next }
		on && seen { print }' "$arch")
	rows=$(grep -v '^#' "$layer_table")
	if [ "$quote" != "$rows" ]; then
		echo "docs/ARCHITECTURE.md: its copy of test/layers.txt differs from the table:" >&2
		printf '%s\n' "$quote" >"${TMPDIR:-/tmp}/check_layers.$$.q"
		printf '%s\n' "$rows" | diff "${TMPDIR:-/tmp}/check_layers.$$.q" - >&2
		rm -f "${TMPDIR:-/tmp}/check_layers.$$.q"
		status=1
	fi
fi
exit $status
