#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-pool.sh DIR - run the memory benchmarks of libbufferlist (bench_pool)
# side by side with Ceph's buffer::create (bench_pool_ceph) and print two
# markdown tables of medians: create+release costs against glibc
# malloc+free and Ceph, and the bytes a messenger-like workload pins.
#
#   DIR holds bench_pool (required) and bench_pool_ceph (used when present).
#
# As perf/run-core.sh: every workload runs in a process of its own
# (`prog -q =WORKLOAD`); for each round, each workload runs once in each
# program, back to back, in an order that rotates from round to round; the
# tables give medians over the rounds with min-max.  Nothing is pinned to a
# CPU.  The cross-thread rows need two cores running at once: on a machine
# with two CPUs and other work, they measure the scheduler as much as the
# allocator (the machine's CPU count is printed with the table).
#
# Environment:
#   BL_BENCH_ROUNDS   rounds (default 5)
#   BL_BENCH_FILTER   only workloads whose name contains one of these
#                     words (default all)
#   BL_BENCH_MALLOC   "notrim": run every program with glibc tunables that
#                     stop heap trimming and fix the mmap threshold at 32 MiB;
#                     default: glibc as it comes
#   BL_BENCH_RAW      file to keep the raw RESULT lines in (prog workload value unit)
set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -x "$dir/bench_pool" ]; then
	echo "usage: $0 DIR   (DIR/bench_pool must exist; build it first)" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-5}
filter=${BL_BENCH_FILTER:-}

. "$(dirname "$0")/rounds-lib.sh"
bench_malloc "$0" "" 1073741824

progs="pool"
[ -x "$dir/bench_pool_ceph" ] && progs="$progs pool_ceph"

. "$(dirname "$0")/bench-filter.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blpool.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

for p in $progs; do
	"$dir/bench_$p" -l | bench_filter "$filter" \
		>"$tmp/list.$p"
done
bench_order "$tmp" "$progs"

nw=$(wc -l <"$tmp/order")
echo "# libbufferlist memory benchmarks: $rounds round(s) of $nw workload(s), programs: $progs" >&2
start=$(date +%s)

bench_workloads "$dir" "$rounds" "$progs" "$tmp/order" "$tmp"
end=$(date +%s)

[ -n "${BL_BENCH_RAW:-}" ] && cp "$tmp/results" "$BL_BENCH_RAW"

# Per (program, result): median, min, max, unit, count.
bench_medians <"$tmp/results" >"$tmp/stats"

echo
echo "libbufferlist memory benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
bench_machine
echo "rounds: $rounds, one process per workload and program, $((end - start)) s; allocator: ${BL_BENCH_MALLOC:-glibc default}"
echo "ns per create+release (cross-thread: wall time / count, producer and consumer on different threads; $ncpu CPU(s))"
echo "ours/malloc < 1 and Ceph/ours > 1 mean ours is faster; targets: ours <= malloc+free, Ceph/ours >= 5"
echo

awk -v ncpu="$ncpu" '
function fmt(x) {
	if (x >= 1000) return sprintf("%.0f", x)
	if (x >= 100) return sprintf("%.1f", x)
	if (x >= 10) return sprintf("%.2f", x)
	return sprintf("%.3f", x)
}
function cell(p, w) {
	if (!((p, w) in med))
		return "-"
	return fmt(med[p, w]) " (" fmt(lo[p, w]) "-" fmt(hi[p, w]) ")"
}
function bytes(p, w) {
	if (!((p, w) in med))
		return "-"
	if (lo[p, w] == hi[p, w])
		return sprintf("%.0f", med[p, w])
	return sprintf("%.0f (%.0f-%.0f)", med[p, w], lo[p, w], hi[p, w])
}
FILENAME == ARGV[1] {
	med[$1, $2] = $3; lo[$1, $2] = $4; hi[$1, $2] = $5
	next
}
# the time rows: bench_pool workloads measured against malloc and Ceph
$1 ~ /^(alloc_|alloc_nocache_|xthread_alloc_|xthread_nocache_)[0-9]+$/ {
	w = $1
	size = w; sub(/.*_/, "", size)
	x = (w ~ /^xthread_/)
	base = (x ? "xthread_malloc_" : "malloc_") size
	peer = (x ? "xthread_alloc_" : "alloc_") size
	if (!header) {
		print "| workload | ours median (min-max) | malloc+free | ours/malloc | Ceph buffer::create | Ceph/ours | targets met |"
		print "|---|---|---|---|---|---|---|"
		header = 1
	}
	ours = (("pool", w) in med) ? med["pool", w] : ""
	m = (("pool", base) in med) ? med["pool", base] : ""
	c = (("pool_ceph", peer) in med) ? med["pool_ceph", peer] : ""
	rm = (ours != "" && m != "" && m > 0) ? sprintf("%.2f", ours / m) : "-"
	rc = (ours != "" && c != "" && ours > 0) ? sprintf("%.1fx", c / ours) : "-"
	t = "-"
	if (rm != "-" && rc != "-")
		t = ((ours <= m) ? "<=malloc: yes" : "<=malloc: no") ", " \
		    ((c >= 5 * ours) ? ">=5x Ceph: yes" : ">=5x Ceph: no")
	printf "| %s | %s | %s | %s | %s | %s | %s |\n", w, cell("pool", w),
		cell("pool", base), rm, cell("pool_ceph", peer), rc, t
	next
}
$1 ~ /^pin_/ { pins[++np] = $1 }
END {
	if (!np)
		exit
	print ""
	print "Messenger-like pinning: 10,000 received 64 KiB buffers, a 200-byte slice of every 100th kept (100 slices, 20,000 bytes); bytes (median, min-max when they differ)."
	print "pinned = kept + bl_list_pinned_unused (ours) / capacity of the distinct raws the kept lists reference (Ceph); pool = live capacity of the default pool (bl_pool_get_stats); cache = bytes in the calling thread'"'"'s cache + depot; heap = glibc mallinfo2 bytes in use, growth over the run; heap after flush = the same after bl_pool_cache_flush(); compact = ns per bl_list_compact (Ceph: per rebuild) call."
	print ""
	print "| variant | kept | pinned | pool | cache | heap | heap after flush | RSS growth | compact ns |"
	print "|---|---|---|---|---|---|---|---|---|"
	for (i = 1; i <= np; i++) {
		w = pins[i]
		for (k = 0; k < 2; k++) {
			p = k ? "pool_ceph" : "pool"
			if (!((p, w ".kept") in med))
				continue
			printf "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				(k ? "Ceph" : "ours"), w, bytes(p, w ".kept"),
				bytes(p, w ".pinned"), bytes(p, w ".pool"),
				bytes(p, w ".cache"), bytes(p, w ".heap"),
				bytes(p, w ".heap_flushed"), bytes(p, w ".rss"),
				cell(p, w ".compact_ns")
		}
	}
}' "$tmp/stats" "$tmp/order"
