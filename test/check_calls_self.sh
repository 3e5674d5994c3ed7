#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_calls_self.sh - test/check_calls.sh fails where it should: run on
# fixture objects (two or three small files compiled here into a scratch
# tree laid out like the library's), with the real table of layers, it
#   - passes a call down (list.c -> raw.c),
#   - fails a call up (raw.c -> list.c), naming it,
#   - fails a loop between two files of one layer,
#   - fails on a file that the table of layers does not name.
# Exit 77 (SKIP) when no C compiler or nm is found.
#
# Environment: top_srcdir (set by `make check`; default: .), CC (default
# cc), NM (default nm).

top_srcdir=${top_srcdir:-.}
CC=${CC:-cc}
NM=${NM:-nm}
checker=$top_srcdir/test/check_calls.sh
table=$top_srcdir/test/layers.txt

if ! command -v "${CC%% *}" >/dev/null 2>&1 ||
   ! command -v "$NM" >/dev/null 2>&1; then
	echo "check_calls_self.sh: no C compiler or nm: skipped" >&2
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_calls_self.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
fails=0

# fixture NAME FILE=SOURCE...: a scratch tree NAME whose src/core holds
# each FILE with its SOURCE, compiled into FILE's object
fixture()
{
	t=$tmp/$1
	shift
	mkdir -p "$t/src/core"
	for fs in "$@"; do
		f=${fs%%=*}
		printf '%s\n' "${fs#*=}" >"$t/src/core/$f"
		$CC -c -o "$t/src/core/${f%.c}.o" "$t/src/core/$f" || exit 1
	done
}

# expect NAME STATUS TEXT: the checker on tree NAME exits with STATUS and
# says TEXT (nothing to look for when TEXT is empty)
expect()
{
	out=$(top_srcdir=$tmp/$1 top_builddir=$tmp/$1 LAYER_TABLE=$table \
	      NM=$NM sh "$checker" 2>&1)
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

fixture down \
	'raw.c=int bl_raw_fix(void) { return 1; }' \
	'list.c=int bl_raw_fix(void); int bl_list_fix(void) { return bl_raw_fix(); }'
expect down 0 ''

fixture up \
	'raw.c=int bl_list_fix(void); int bl_raw_fix(void) { return bl_list_fix(); }' \
	'list.c=int bl_list_fix(void) { return 2; }'
expect up 1 'upward call: src/core/raw.c (raw, rank 3) -> src/core/list.c (list, rank 5): bl_list_fix'

fixture loop \
	'list.c=int bl_b(void); int bl_a(int n) { return n ? bl_b() : 0; }' \
	'list_append.c=int bl_a(int); int bl_b(void) { return bl_a(0); }'
expect loop 1 'call loop: src/core/list.c'

fixture unranked \
	'raw.c=int bl_raw_fix(void) { return 1; }' \
	'stray.c=int bl_stray(void) { return 3; }'
expect unranked 1 'not in the table of layers (test/layers.txt): src/core/stray.c'

[ "$fails" -eq 0 ]
