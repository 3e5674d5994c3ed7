#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_calls.sh - calls go down the layers, and never in a loop.
#
#   1. No file calls into a file of a higher layer, nor of another layer
#      of its rank: the layers and their ranks are test/layers.txt's, the
#      tools above all of them.  A call through a public header counts
#      like any other (raw.c may call bl_crc32c because crc32c ranks
#      below raw, not because crc32c.h is public).
#   2. No two files call each other in a loop.  Within a layer as between
#      layers, calls between files go one way: a file that calls down into
#      another is never called back, directly or through a third.
# Where a lower file must start work in a higher one, it goes through a
# table of functions the higher one hands down (the uring back ends'
# struct bl__uring_backend), which is no call of a symbol.
#
# The graph is read from the built objects, not the sources, so it is the
# one the linker sees: per object, `nm` lists the global symbols it
# defines and those it leaves undefined; an undefined symbol that another
# object of the same program defines is an edge from the first file to the
# second.  A variable counts like a function (a file that uses another's
# variable depends on it the same way).  Calls made by a header's static
# inline function count against the file that includes the header; such
# an edge is marked "(via a header)" below.  The rule's one exception, a
# header's inline fast path calling its own layer's slow path, is such an
# edge: a loop that only it closes goes into ALLOW with its reason (none
# does today).  Objects: the convenience library's (every src/LAYER/*.c),
# the Ceph bridge's when it is built (src/ceph/*.cc) and the tools'
# (tools/*.c; blbench and msgbench are separate programs, and each
# resolves first among its own files, then in the library).
#
# Fails (exit 1) naming each upward call (the two files, their layers and
# the symbols), and each loop: one way around it with the symbol of each
# step, then every call between its files.  Exit 77 (SKIP) when the
# library's objects are not there (run from a tree that was not built).
# test/check_calls_self.sh proves on fixture objects that both fail.
#
# Environment: top_srcdir and top_builddir (set by `make check`); both
# default to what fits a run from the build directory.  NM (default nm);
# LAYER_TABLE (default test/layers.txt).

top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
NM=${NM:-nm}
case $0 in */*) here=${0%/*} ;; *) here=. ;; esac
. "$here/layers.sh"

# Loops known and tolerated, one per line: the files of the loop, sorted,
# separated by one space.  A listed loop that grows, shrinks or goes away
# fails the check too, so that the list stays exact.
ALLOW=''

tmp=${TMPDIR:-/tmp}/check_calls.$$
trap 'rm -f "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# obj DIR NAME: the object of NAME.c built in DIR (libtool puts the PIC
# objects of a convenience library in DIR/.libs; automake prefixes the
# object with the target's name when the target has its own flags).
obj()
{
	for o in "$1/.libs/"*"-$2.o" "$1/.libs/$2.o" "$1/"*"-$2.o" "$1/$2.o"; do
		if [ -f "$o" ]; then
			echo "$o"
			return
		fi
	done
}

: >"$tmp"
nobj=0
missing=
unranked=
for c in "$top_srcdir"/src/*/*.c "$top_srcdir"/src/*/*.cc \
	 "$top_srcdir"/tools/*.c; do
	[ -f "$c" ] || continue
	dir=${c#"$top_srcdir"/}
	dir=${dir%/*}			# src/LAYER or tools
	file=${c##*/}
	name=${file%.*}
	set -- $(layer_of "$dir/$file")
	if [ $# -lt 2 ]; then
		unranked="$unranked $dir/$file"
		continue
	fi
	rank=$1
	layer=$2
	o=$(obj "$top_builddir/$dir" "$name")
	if [ -z "$o" ]; then
		# a tool's optional part (blbench's rados target) and the Ceph
		# bridge may be off; every C file of src/ is in the library
		case $dir/$file in src/*.c) missing="$missing $dir/$file" ;; esac
		continue
	fi
	# the program an object belongs to: the library, or the tool named
	# by the object's prefix (blbench-blbench_dir.o: blbench)
	if [ "${dir%%/*}" = src ]; then
		unit=lib
	else
		unit=${o##*/}
		case $unit in
		*-*) unit=${unit%%-*} ;;
		*) unit=tools ;;
		esac
	fi
	nobj=$((nobj + 1))
	"$NM" -P "$o" | awk -v f="$dir/$file" -v unit="$unit" \
		-v rank="$rank" -v layer="$layer" \
		'NF >= 2 { print unit, f, rank, layer, $2, $1 }' >>"$tmp" ||
		exit 1
done
if [ -n "$unranked" ]; then
	echo "check_calls.sh: not in the table of layers (test/layers.txt):$unranked" >&2
	exit 1
fi
if [ "$nobj" -eq 0 ]; then
	echo "check_calls.sh: no objects under $top_builddir/src: skipped" >&2
	exit 77
fi
if [ -n "$missing" ]; then
	echo "check_calls.sh: no object for:$missing" >&2
	exit 1
fi

awk -v allow="$ALLOW" -v srcdir="$top_srcdir" '
# names(FILE, SYM): true if the source FILE names SYM itself
function names(file, sym,    line, path, re) {
	if (!(file in text)) {
		path = srcdir "/" file
		text[file] = ""
		while ((getline line < path) > 0)
			text[file] = text[file] "\n" line
		close(path)
	}
	re = "(^|[^A-Za-z0-9_])" sym "([^A-Za-z0-9_]|$)"
	return text[file] ~ re
}

# Tarjan: the strongly connected components of the file graph
function strong(v,    i, w) {
	idx[v] = low[v] = ++counter
	stk[++sp] = v
	onstk[v] = 1
	for (i = 1; i <= nadj[v]; i++) {
		w = adj[v, i]
		if (!(w in idx)) {
			strong(w)
			if (low[w] < low[v])
				low[v] = low[w]
		} else if (onstk[w] && idx[w] < low[v]) {
			low[v] = idx[w]
		}
	}
	if (low[v] == idx[v]) {
		ncomp++
		do {
			w = stk[sp--]
			onstk[w] = 0
			comp[w] = ncomp
			csize[ncomp]++
		} while (w != v)
	}
}

# the members of component K, sorted, separated by one space
function members(k,    n, i, j, t, m, s) {
	n = 0
	for (i = 1; i <= nnodes; i++)
		if (comp[node[i]] == k)
			m[++n] = node[i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && m[j - 1] > m[j]; j--) {
			t = m[j]; m[j] = m[j - 1]; m[j - 1] = t
		}
	s = m[1]
	for (i = 2; i <= n; i++)
		s = s " " m[i]
	return s
}

function label(a, b) {
	return (names(a, firstsym[a, b]) ? firstsym[a, b] \
		: firstsym[a, b] " (via a header)")
}

# one way around component K, from its first file back to it (BFS)
function loop(k, start,    q, h, t, v, i, w, prev, seen, path, s) {
	h = 1; t = 0
	for (i = 1; i <= nadj[start]; i++) {
		w = adj[start, i]
		if (comp[w] == k && !(w in seen)) {
			seen[w] = 1; prev[w] = start; q[++t] = w
		}
	}
	while (h <= t && !(start in seen)) {
		v = q[h++]
		for (i = 1; i <= nadj[v]; i++) {
			w = adj[v, i]
			if (comp[w] == k && !(w in seen)) {
				seen[w] = 1; prev[w] = v; q[++t] = w
			}
		}
	}
	s = ""
	v = start
	do {
		s = " -> " v " [" label(prev[v], v) "]" s
		v = prev[v]
	} while (v != start)
	return start s
}

function addnode(f) {
	if (!(f in known)) {
		known[f] = 1
		node[++nnodes] = f
	}
}

{
	unit = $1; f = $2; type = $5; sym = $6
	rank[f] = $3; layer[f] = $4
	addnode(f)
	if (type == "U") {
		nund++
		uu[nund] = unit; uf[nund] = f; us[nund] = sym
	} else if (type ~ /^[TWiDBRGSVC]$/) {
		def[unit, sym] = f
	}
}

END {
	for (i = 1; i <= nund; i++) {
		if ((uu[i], us[i]) in def)
			g = def[uu[i], us[i]]
		else if (("lib", us[i]) in def)
			g = def["lib", us[i]]
		else
			continue
		f = uf[i]
		if (g == f)
			continue
		if (!((f, g) in edge)) {
			edge[f, g] = us[i]
			firstsym[f, g] = us[i]
			adj[f, ++nadj[f]] = g
		} else {
			edge[f, g] = edge[f, g] " " us[i]
		}
	}
	status = 0
	for (i = 1; i <= nnodes; i++) {
		f = node[i]
		for (j = 1; j <= nadj[f]; j++) {
			g = adj[f, j]
			if (layer[f] == layer[g] || rank[f] + 0 > rank[g] + 0)
				continue
			status = 1
			print "upward call: " f " (" layer[f] ", rank " \
			      rank[f] ") -> " g " (" layer[g] ", rank " \
			      rank[g] "): " edge[f, g] > "/dev/stderr"
		}
	}

	for (i = 1; i <= nnodes; i++)
		if (!(node[i] in idx))
			strong(node[i])

	nallow = split(allow, al, "\n")
	for (k = 1; k <= ncomp; k++) {
		if (csize[k] < 2)
			continue
		m = members(k)
		ok = 0
		for (a = 1; a <= nallow; a++)
			if (al[a] == m) {
				ok = 1
				used[a] = 1
			}
		if (ok) {
			print "check_calls.sh: known loop, to be removed: " m
			continue
		}
		status = 1
		split(m, mm, " ")
		print "call loop: " loop(k, mm[1]) > "/dev/stderr"
		for (i = 1; i <= nnodes; i++) {
			f = node[i]
			if (comp[f] != k)
				continue
			for (j = 1; j <= nadj[f]; j++)
				if (comp[adj[f, j]] == k)
					print "  " f " -> " adj[f, j] ": " \
					      edge[f, adj[f, j]] > "/dev/stderr"
		}
	}
	for (a = 1; a <= nallow; a++)
		if (al[a] != "" && !used[a]) {
			print "check_calls.sh: the allowed loop \"" al[a] \
			      "\" is gone or changed: update ALLOW" > "/dev/stderr"
			status = 1
		}
	exit status
}' "$tmp"
