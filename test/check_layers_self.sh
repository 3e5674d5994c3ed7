#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_layers_self.sh - test/check_layers.sh fails where it should: run
# on fixture trees (the real public headers, raw_int.h and table of
# layers, beside one or two small sources written here), it
#   - passes a file that reads a raw through raw_int.h's accessors,
#   - fails a file outside the raw layer that reads a field of struct
#     bl_raw (through a local pointer and through a slice's raw),
#   - fails the messenger including uring_int.h (kept to its layer),
#   - fails a lower layer including a higher layer's private header.
#
# Environment: top_srcdir (set by `make check`; default: .).

top_srcdir=${top_srcdir:-.}
checker=$top_srcdir/test/check_layers.sh
table=$top_srcdir/test/layers.txt

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_layers_self.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fails=0

# fixture NAME FILE=SOURCE...: a tree NAME with the real headers the
# checker reads and each FILE (a path under src/) holding SOURCE
fixture()
{
	t=$tmp/$1
	shift
	mkdir -p "$t/include/bufferlist" "$t/src/core" "$t/src/io" \
		"$t/src/msgr"
	cp "$top_srcdir"/include/bufferlist/*.h "$t/include/bufferlist/"
	cp "$top_srcdir/src/core/raw_int.h" "$top_srcdir/src/core/list_int.h" \
		"$t/src/core/"
	cp "$top_srcdir/src/io/uring_int.h" "$top_srcdir/src/io/uring_msgr.h" \
		"$t/src/io/"
	for fs in "$@"; do
		printf '%s\n' "${fs#*=}" >"$t/src/${fs%%=*}"
	done
}

# expect NAME STATUS TEXT: as check_calls_self.sh's
expect()
{
	out=$(top_srcdir=$tmp/$1 LAYER_TABLE=$table sh "$checker" 2>&1)
	st=$?
	if [ "$st" -ne "$2" ]; then
		echo "FAIL $1: exit $st, expected $2: $out" >&2
		fails=$((fails + 1))
	elif [ -n "$3" ] && ! printf '%s\n' "$out" | grep -qF "$3"; then
		echo "FAIL $1: no \"$3\" in: $out" >&2
		fails=$((fails + 1))
	else
		echo "ok $1"
	fi
}

fixture accessors 'core/ptr.c=#include "raw_int.h"
char *f(struct bl_raw *r) { return bl__raw_data(r) + bl__raw_len(r); }'
expect accessors 0 ''

fixture field 'core/ptr.c=#include "raw_int.h"
size_t f(struct bl_raw *r) { return r->len; }'
expect field 1 'src/core/ptr.c: raw fields: 2:'

fixture slice 'core/ptr.c=#include "raw_int.h"
char *f(struct bl_ptr *p) { return p->raw->data + p->off; }'
expect slice 1 'src/core/ptr.c: raw fields: 2:'

fixture own 'msgr/msgr_send.c=#include "uring_int.h"'
expect own 1 'src/msgr/msgr_send.c: includes uring_int.h, which layer uring keeps to itself'

fixture up 'core/raw.c=#include "list_int.h"'
expect up 1 'src/core/raw.c: includes list_int.h, the private header of layer list'

[ "$fails" -eq 0 ]
