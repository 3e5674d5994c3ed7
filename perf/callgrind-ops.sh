#!/bin/sh
# SPDX-License-Identifier: MIT
#
# callgrind-ops.sh DIR - instructions per operation of the core hot paths,
# counted by callgrind, as a markdown table.
#
#   DIR holds bench_core.  `make bench-callgrind` calls this with the
#   build's perf/.
#
# Each workload runs alone (`bench_core -q =WORKLOAD`) under
# `valgrind --tool=callgrind`, twice: with BL_BENCH_ITERS=N1 and =N2
# (benchutil.h: one warm-up operation, then exactly N operations, no
# calibration).  Only instructions inside bench_core's workload functions
# (w_*, and what they call) are counted: start-up, the timer calibration
# (whose sort depends on the timings) and building the input are left out,
# which makes the counts repeat exactly from run to run.  The two runs
# differ only in the operations, so
#     instructions per op = (Ir(N2) - Ir(N1)) / (N2 - N1).
# Counts do not depend on the machine's load, so unlike run-core.sh one
# run is enough, and two builds can be compared exactly.  Valgrind's
# virtual CPU has no AVX-512: crc32c takes the implementation valgrind's
# CPUID offers (the header line names it), which is not the one a native
# run on a VPCLMULQDQ machine takes.
#
# Environment:
#   BL_BENCH_FILTER   only workloads whose name contains one of these
#                     words (default all)
#   VALGRIND          the valgrind command (default valgrind)
set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -x "$dir/bench_core" ]; then
	echo "usage: $0 DIR   (DIR/bench_core must exist; build it first)" >&2
	exit 1
fi
filter=${BL_BENCH_FILTER:-}
valgrind=${VALGRIND:-valgrind}
if ! $valgrind --version >/dev/null 2>&1; then
	echo "$0: valgrind not found (apt-get install valgrind)" >&2
	exit 1
fi

# workload N1 N2 what-one-operation-is (N2 - N1 operations make the
# difference; multiples of 4096 for append_8, whose clear comes every 4096).
# The lookup rows build lists of up to 10^6 segments outside the counted
# functions (a few seconds each under valgrind); their first operation,
# which builds the offset index, is the warm-up both runs share.
ops='alloc_32 100000 200000 bl_raw_create(32) + bl_raw_put
append_8 40960 81920 8-byte bl_list_append (a clear every 4096 included)
struct_encode_3 40960 81920 a versioned structure of u32, u64, u16 (bl_encode_start, three encoders, bl_encode_finish; a clear every 4096 included)
plain_encode_3 40960 81920 the same three fields without the header
struct_decode_3 40960 81920 bl_decode_start, three decoders, bl_decode_finish
plain_decode_3 40960 81920 the same three fields without the header
struct_decode_skip 40960 81920 a v3 structure (a u64 more) read by the v2 decoder: the u64 skipped
claim_empty_16 100000 200000 bl_list_claim_append of 16 segments into an empty list
substr_4K 20000 40000 bl_list_substr_of 4 KiB out of 1024 x 4 KiB segments
substr_100 100000 200000 bl_list_substr_of 100 B inside one of 1024 x 4 KiB segments into a new list, and its clear
splice_1M_cut 200 400 bl_list_splice of 1 MiB from 1.5 MiB + 123 of 1024 x 4 KiB (rebuilding the list and clearing the other included)
parse_frames_list 100000 200000 one frame: bl_decode_u32 + bl_iter_copy_list of its 16..64 B payload into a list + its clear
substr_100_local 100000 200000 substr_100 over thread-local raws (bl_raw_set_thread_local)
parse_frames_list_local 100000 200000 parse_frames_list over thread-local raws
parse_frames_ptr 100000 200000 one frame: bl_decode_u32 + bl_iter_get_ptr_and_advance over its 16..64 B payload
iovec_1024 1000 2000 bl_list_to_iovec of 1024 segments
iovec_1024_oneraw 1000 2000 bl_list_to_iovec of 1024 slices of one raw
crc32c_4M_first 4 8 bl_list_crc32c of 4 MiB, first call (cache invalidated)
crc32c_4M_cached 100000 200000 bl_list_crc32c of 4 MiB, cached
lookup_front_1e3 10000 20000 bl_list_substr_of 100 B at offset 10 of 10^3 64-byte segments into a list that held the last
lookup_mid_1e3 10000 20000 the same in the middle
lookup_end_1e3 10000 20000 the same 182 B before the end
get_ptr_mid_1e3 2000 4000 bl_list_get_ptr of the middle of 10^3 segments + bl_ptr_release
get_ptr_end_1e3 2000 4000 bl_list_get_ptr of the last of 10^3 segments + bl_ptr_release
seek_mid_1e3 10000 20000 bl_iter_init at 0 + bl_iter_seek to the middle of 10^3 segments + bl_decode_u8
splice_lookup_1e3 2000 4000 bl_list_splice of the middle segment of 10^3, bl_list_copy_out of 10 B 4 KiB before, claim back
lookup_front_1e5 10000 20000 bl_list_substr_of 100 B at offset 10 of 10^5 64-byte segments into a list that held the last
lookup_mid_1e5 10000 20000 the same in the middle
lookup_end_1e5 10000 20000 the same 182 B before the end
get_ptr_mid_1e5 2000 4000 bl_list_get_ptr of the middle of 10^5 segments + bl_ptr_release
get_ptr_end_1e5 2000 4000 bl_list_get_ptr of the last of 10^5 segments + bl_ptr_release
seek_mid_1e5 10000 20000 bl_iter_init at 0 + bl_iter_seek to the middle of 10^5 segments + bl_decode_u8
splice_lookup_1e5 2000 4000 bl_list_splice of the middle segment of 10^5, bl_list_copy_out of 10 B 4 KiB before, claim back
lookup_front_1e6 10000 20000 bl_list_substr_of 100 B at offset 10 of 10^6 64-byte segments into a list that held the last
lookup_mid_1e6 10000 20000 the same in the middle
lookup_end_1e6 10000 20000 the same 182 B before the end
get_ptr_mid_1e6 2000 4000 bl_list_get_ptr of the middle of 10^6 segments + bl_ptr_release
get_ptr_end_1e6 2000 4000 bl_list_get_ptr of the last of 10^6 segments + bl_ptr_release
seek_mid_1e6 10000 20000 bl_iter_init at 0 + bl_iter_seek to the middle of 10^6 segments + bl_decode_u8
splice_lookup_1e6 2000 4000 bl_list_splice of the middle segment of 10^6, bl_list_copy_out of 10 B 4 KiB before, claim back'

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blcallgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Total instructions of bench_core running workload $1 with $2 operations.
ir() {
	out="$tmp/cg.$1.$2"
	if ! BL_BENCH_ITERS=$2 $valgrind --tool=callgrind -q \
	    --toggle-collect='w_*' --callgrind-out-file="$out" \
	    "$dir/bench_core" -q "=$1" \
	    >"$tmp/stdout" 2>"$tmp/stderr"; then
		echo "$0: bench_core $1 (N=$2) failed: $(head -c 300 "$tmp/stderr")" >&2
		return 1
	fi
	awk '$1 == "summary:" || $1 == "totals:" { print $2; exit }' "$out"
}

# bench_core's header line: "# libbufferlist VERSION, crc32c: IMPL"
impl=$("$dir/bench_core" '=none' 2>/dev/null | sed -n 's/^# \(libbufferlist .*\)$/\1/p')
vimpl=$($valgrind -q "$dir/bench_core" '=none' 2>/dev/null | sed -n 's/^# libbufferlist .*crc32c: \(.*\)$/\1/p')
echo "# callgrind instructions per operation" >&2

echo "callgrind instructions per operation, $(date -u '+%Y-%m-%d %H:%M UTC'), ${impl:-libbufferlist} (natively)"
echo "$($valgrind --version); crc32c under valgrind: ${vimpl:-unknown}"
echo "Ir/op = (Ir(N2) - Ir(N1)) / (N2 - N1); Ir(N): instructions inside the workload functions of bench_core -q =WORKLOAD with BL_BENCH_ITERS=N"
echo
echo "| workload | one operation | N1 | N2 | Ir(N1) | Ir(N2) | Ir/op |"
echo "|---|---|---|---|---|---|---|"
status=0
while read -r w n1 n2 what; do
	if [ -n "$filter" ]; then
		keep=
		for f in $filter; do
			case $w in *"$f"*) keep=1 ;; esac
		done
		[ -n "$keep" ] || continue
	fi
	echo "#   $w" >&2
	a=$(ir "$w" "$n1") || { status=1; continue; }
	b=$(ir "$w" "$n2") || { status=1; continue; }
	awk -v w="$w" -v what="$what" -v n1="$n1" -v n2="$n2" -v a="$a" -v b="$b" 'BEGIN {
		printf "| %s | %s | %d | %d | %.0f | %.0f | %.1f |\n",
			w, what, n1, n2, a, b, (b - a) / (n2 - n1)
	}'
done <<EOF
$ops
EOF
exit $status
