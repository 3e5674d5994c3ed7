# SPDX-License-Identifier: MIT
#
# layers.sh - sourced by check_layers.sh and check_calls.sh: the lookups
# of test/layers.txt, the table of layers (LAYER_TABLE names another, for
# check_calls_self.sh's fixtures).  Needs top_srcdir.

layer_table=${LAYER_TABLE:-$top_srcdir/test/layers.txt}
if [ ! -f "$layer_table" ]; then
	echo "${0##*/}: no table of layers at $layer_table" >&2
	exit 1
fi

# layer_of PATH: "RANK LAYER" of PATH (relative to top_srcdir, such as
# src/core/raw.c) by the table's first row naming it, or nothing.
layer_of()
{
	awk -v path="$1" '
	$1 !~ /^[0-9]+$/ { next }
	{
		dir = path; sub(/\/[^\/]*$/, "", dir)
		base = path; sub(/^.*\//, "", base)
		if ($3 != dir)
			next
		for (i = 4; i <= NF; i++) {
			re = $i
			gsub(/\./, "\\.", re)
			gsub(/\*/, ".*", re)
			if (base ~ "^" re "$") {
				print $1, $2
				exit
			}
		}
	}' "$layer_table"
}

# layer_own: the private headers that only their own layer includes,
# besides the *_priv.h ones (the table's "own" rows), one per line.
layer_own()
{
	awk '$1 == "own" { for (i = 2; i <= NF; i++) print $i }' \
		"$layer_table"
}
