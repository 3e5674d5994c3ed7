#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-core.sh DIR - run the core benchmarks of libbufferlist side by side
# with Ceph's bufferlist, libevent's evbuffer and the Rust bytes crate, and
# print a markdown table of medians.
#
#   DIR holds bench_core (required), bench_ceph, bench_evbuffer and
#   bench_bytes (used when present; the bytes columns appear only then).
#   `make bench` calls this with the build's perf/ (after building
#   bench_bytes with perf/build-bytes.sh when cargo can).
#
# Every workload runs in a process of its own (`prog -q =WORKLOAD`), so no
# workload inherits the allocator state another one left (glibc raises its
# mmap threshold after freeing a large block and trims the heap top, which
# changes results by 10x for some workloads).  For each round, each workload
# runs once in each program, back to back, in an order that rotates from
# round to round; the table gives medians over the rounds.  Nothing is
# pinned: on a shared machine expect noise, and look at min-max.
# A workload ending in _local (bench_core's only: its raws thread-local,
# bl_raw_set_thread_local(3)) is set against the peers' row of the same
# name without the suffix, which they run in the same round.
#
# Environment:
#   BL_BENCH_ROUNDS   rounds (default 5)
#   BL_BENCH_FILTER   only workloads whose name contains one of these
#                     words (default all)
#   BL_BENCH_MALLOC   "notrim": run every program with glibc tunables that
#                     stop heap trimming and fix the mmap threshold at 32 MiB
#                     (steady-state allocator, no page faults from re-growing
#                     the heap); default: glibc as it comes
#   BL_BENCH_RAW      file to keep the raw RESULT lines in (prog workload value unit)
set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -x "$dir/bench_core" ]; then
	echo "usage: $0 DIR   (DIR/bench_core must exist; build it first)" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-5}
filter=${BL_BENCH_FILTER:-}

. "$(dirname "$0")/rounds-lib.sh"
bench_malloc "$0" "" 1073741824

progs="core"
[ -x "$dir/bench_ceph" ] && progs="$progs ceph"
[ -x "$dir/bench_evbuffer" ] && progs="$progs evbuffer"
[ -x "$dir/bench_bytes" ] && progs="$progs bytes"

. "$(dirname "$0")/bench-filter.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blbench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Workload lists, in each program's order, without repeats.  A peer also
# runs the plain row of every _local row bench_core runs.
: >"$tmp/plain"
for p in $progs; do
	"$dir/bench_$p" -l | bench_filter "$filter" "$tmp/plain" \
		>"$tmp/list.$p"
	if [ "$p" = core ]; then
		sed -n 's/_local$//p' "$tmp/list.core" >"$tmp/plain"
	fi
done
# The rows: bench_core's workloads first, then any only a peer has.
bench_order "$tmp" "$progs"

nw=$(wc -l <"$tmp/order")
echo "# libbufferlist core benchmarks: $rounds round(s) of $nw workload(s), programs: $progs" >&2
start=$(date +%s)

bench_workloads "$dir" "$rounds" "$progs" "$tmp/order" "$tmp"
end=$(date +%s)

[ -n "${BL_BENCH_RAW:-}" ] && cp "$tmp/results" "$BL_BENCH_RAW"

# Per (program, workload): median, min, max, unit, count.
bench_medians <"$tmp/results" >"$tmp/stats"

echo
echo "libbufferlist core benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
bench_machine
echo "rounds: $rounds, one process per workload and program, $((end - start)) s; allocator: ${BL_BENCH_MALLOC:-glibc default}"
echo "ratio = how many times faster ours is (peer time / our time, or our GB/s / peer GB/s); > 1 means ours is faster"
echo

awk -v progs="$progs" '
function fmt(x) {
	if (x >= 1000) return sprintf("%.0f", x)
	if (x >= 100) return sprintf("%.1f", x)
	if (x >= 10) return sprintf("%.2f", x)
	return sprintf("%.3f", x)
}
function ratio(ours, peer, unit) {
	if (ours == "" || peer == "" || ours == 0 || peer == 0)
		return "-"
	return sprintf("%.2fx", unit == "GB/s" ? ours / peer : peer / ours)
}
FILENAME == ARGV[1] {
	med[$1, $2] = $3; lo[$1, $2] = $4; hi[$1, $2] = $5; unit[$2] = $6
	next
}
{
	w = $1
	if (w ~ /^(malloc_|memcpy_|refpair)/ || w == "iovec_1024_oneraw") {
		base[++nb] = w
		next
	}
	if (!header) {
		hasbytes = index(" " progs " ", " bytes ") > 0
		print "| workload | unit | ours median (min-max) | Ceph median | ours/Ceph | evbuffer median | ours/evbuffer |" (hasbytes ? " bytes median | ours/bytes |" : "")
		print "|---|---|---|---|---|---|---|" (hasbytes ? "---|---|" : "")
		header = 1
	}
	u = unit[w]
	# a _local row (thread-local raws) faces the only kind the peers have:
	# the plain row of the same workload, run in the same round
	pw = w
	sub(/_local$/, "", pw)
	ours = (("core", w) in med) ? med["core", w] : ""
	ceph = (("ceph", pw) in med) ? med["ceph", pw] : ""
	ev = (("evbuffer", pw) in med) ? med["evbuffer", pw] : ""
	by = (("bytes", pw) in med) ? med["bytes", pw] : ""
	o = ours == "" ? "-" : fmt(ours) " (" fmt(lo["core", w]) "-" fmt(hi["core", w]) ")"
	printf "| %s | %s | %s | %s | %s | %s | %s |", w, (u == "ns" ? "ns/op" : u), o,
		(ceph == "" ? "-" : fmt(ceph)), ratio(ours, ceph, u),
		(ev == "" ? "-" : fmt(ev)), ratio(ours, ev, u)
	if (hasbytes)
		printf " %s | %s |", (by == "" ? "-" : fmt(by)), ratio(ours, by, u)
	printf "\n"
}
END {
	if (!nb)
		exit
	print ""
	print "| baseline (bench_core) | unit | median (min-max) | compared with |"
	print "|---|---|---|---|"
	for (i = 1; i <= nb; i++) {
		w = base[i]
		if (!(("core", w) in med))
			continue
		u = unit[w]
		cmp = "-"
		if (w ~ /^malloc_/) {
			a = w; sub(/^malloc_/, "alloc_", a)
			if (("core", a) in med)
				cmp = sprintf("%s: ours %s ns = %.2fx malloc+free", a, fmt(med["core", a]), med["core", a] / med["core", w])
		} else if (w ~ /^memcpy_/) {
			a = w; sub(/^memcpy_/, "rebuild_", a)
			if (("core", a) in med)
				cmp = sprintf("%s: ours %s GB/s = %.0f%% of memcpy", a, fmt(med["core", a]), 100 * med["core", a] / med["core", w])
		} else if (w == "iovec_1024_oneraw") {
			if (("core", "iovec_1024") in med)
				cmp = sprintf("iovec_1024: ours %s ns = %.2fx the export over one raw", fmt(med["core", "iovec_1024"]), med["core", "iovec_1024"] / med["core", w])
		} else if (w ~ /^refpair/) {
			cmp = ""
			sfx = w == "refpair_local" ? "_local" : ""
			n = split("substr_100 parse_frames_list", rw, " ")
			for (k = 1; k <= n; k++) {
				a = rw[k] sfx
				if (("core", a) in med)
					cmp = cmp (cmp == "" ? "" : "; ") sprintf("%s: ours %s ns = %.2fx a get+put", a, fmt(med["core", a]), med["core", a] / med["core", w])
			}
			if (cmp == "")
				cmp = "-"
		}
		printf "| %s | %s | %s (%s-%s) | %s |\n", w, (u == "ns" ? "ns/op" : u),
			fmt(med["core", w]), fmt(lo["core", w]), fmt(hi["core", w]), cmp
	}
}' "$tmp/stats" "$tmp/order"
