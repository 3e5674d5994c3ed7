#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-lz4.sh DIR - LZ4 frames of segmented lists against liblz4 on one
# contiguous buffer: 256 MiB of a text/random mix held as 4 KiB and as 1 MiB
# segments, compressed and decompressed, 5 interleaved rounds, medians.
# Prints a markdown table (MB/s, min..max, ours as a percentage of
# LZ4_compress_default / LZ4_decompress_safe and of LZ4F on the same bytes,
# and the compressed size as a fraction of the original).
#
#   DIR holds bench_lz4 (the build's perf/ directory).
#
# Environment:
#   BL_BENCH_ROUNDS   rounds (default 5)
#   BL_BENCH_MIB      MiB of input (default 256; needs about 9x that in RAM)
#   BL_BENCH_WALL     1: wall-clock time instead of the thread's CPU time
#   BL_BENCH_MALLOC   "notrim" (default): glibc keeps freed memory (no heap
#                     trimming, mmap threshold at 32 MiB), so that neither
#                     our output raws nor the baselines' buffers are page
#                     faults measured again in every round; "glibc": glibc
#                     as it comes (then our fresh output raws pay the page
#                     faults that the baselines' reused buffer does not)
set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -x "$dir/bench_lz4" ]; then
	echo "usage: $0 DIR   (DIR/bench_lz4 must exist; build it first)" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-5}
mib=${BL_BENCH_MIB:-256}

. "$(dirname "$0")/rounds-lib.sh"
bench_malloc "$0" notrim 4294967296

need=$((mib * 9 / 1024 + 1))
avail=$(awk '/MemAvailable/ { print int($2 / 1048576) }' /proc/meminfo 2>/dev/null)
if [ -n "$avail" ] && [ "$avail" -lt "$need" ]; then
	echo "$0: about $need GiB of memory needed, $avail GiB available" >&2
	exit 1
fi

wall=
[ "${BL_BENCH_WALL:-0}" = 1 ] && wall=-w
echo "# $(uname -m), $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# liblz4 $(pkg-config --modversion liblz4 2>/dev/null || echo '?'), malloc: ${BL_BENCH_MALLOC:-notrim}"
exec "$dir/bench_lz4" -r "$rounds" -m "$mib" $wall
