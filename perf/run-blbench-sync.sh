#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-blbench-sync.sh [BLBENCH] - durable writes: `blbench write --direct`
# with its durability options beside fio's io_uring engine with the same
# option, block size and depth, on one raw file, and a markdown table of
# the medians.
#
#   BLBENCH   the blbench binary (default: ./blbench, then blbench on PATH)
#
# The modes (each side O_DIRECT, overwriting a file written before, as on
# a device; both run for the whole time, wrapping at the file's end):
#   fdatasync  blbench --fdatasync 1   fio --fdatasync=1
#   fsync      blbench --fsync 1       fio --fsync=1
#   dsync      blbench --sync dsync    fio --sync=dsync   (RWF_DSYNC)
#   sync       blbench --sync sync     fio --sync=sync    (RWF_SYNC)
# blbench links each sync to the write it follows (one submission), fio
# issues it as a request of its own after that write.
#
# Rounds alternate who goes first; the modes are run one after the other
# (all rounds of one, then the next).  Before every run: sync, and a
# second's pause.  The table gives the medians (min-max), the ratio of the
# medians, and the geometric mean of the per-round ratios.  The load
# average is printed before and after: run it when the machine is idle.
#
# Environment:
#   BL_BENCH_DIR      where to write (default: a new directory in /var/tmp;
#                     not tmpfs: O_DIRECT)
#   BL_BENCH_ROUNDS   rounds per mode (default 5)
#   BL_BENCH_SECONDS  seconds per run (default 5)
#   BL_BENCH_SIZE     the file, in MiB (default 2048, at most 40% of free)
#   BL_BENCH_BS       bytes per write (default 4M)
#   BL_BENCH_DEPTH    writes in flight (default 16)
#   BL_BENCH_MODES    the modes to run (default "fdatasync fsync dsync sync")
#   BL_BENCH_RAW      file for the raw lines (prog mode MB/s), kept
set -u

bin=${1:-}
. "$(dirname "$0")/rounds-lib.sh"
bin=$(bench_blbench "$0" "$bin" "build blbench first") || exit 1
if ! command -v fio >/dev/null 2>&1; then
	echo "$0: fio is not installed (scripts/install-deps.sh installs it)" >&2
	exit 1
fi
. "$(dirname "$0")/blbench-lib.sh"

rounds=${BL_BENCH_ROUNDS:-5}
secs=${BL_BENCH_SECONDS:-5}
bs=${BL_BENCH_BS:-4M}
depth=${BL_BENCH_DEPTH:-16}
modes=${BL_BENCH_MODES:-fdatasync fsync dsync sync}

bench_workdir blbench-sync
raw="$base/raw.img"
results="$base/results"
cleanup() {
	rm -f "$raw" "$results"
	[ "$made_base" = 1 ] && rmdir "$base" 2>/dev/null
}
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

avail=$(df -Pm "$base" | awk 'NR == 2 { print $4 }')
if [ "${avail:-0}" -lt 1024 ]; then
	echo "$0: only ${avail:-0} MiB free on $base; need at least 1024" >&2
	exit 1
fi
size=${BL_BENCH_SIZE:-2048}
[ "$size" -gt $((avail * 40 / 100)) ] && size=$((avail * 40 / 100))
size=$((size / 4 * 4))
echo "# $rounds rounds of ${secs} s per mode, bs $bs, depth $depth, O_DIRECT, in $base (file of $size MiB)"
echo "# blbench: $bin; fio: $(fio --version)"
echo "# load before: $(uptime)"

: >"$results"

blb_opt() {
	case $1 in
	fdatasync) echo "--fdatasync 1" ;;
	fsync) echo "--fsync 1" ;;
	dsync) echo "--sync dsync" ;;
	sync) echo "--sync sync" ;;
	esac
}

fio_opt() {
	case $1 in
	fdatasync) echo "--fdatasync=1" ;;
	fsync) echo "--fsync=1" ;;
	dsync) echo "--sync=dsync" ;;
	sync) echo "--sync=sync" ;;
	esac
}

run_blb() {
	settle
	# shellcheck disable=SC2046
	bw=$("$bin" "$secs" write -b "$bs" -t "$depth" --direct \
		$(blb_opt "$1") --target "file:$raw" 2>/dev/null | blb_bw)
	echo "blbench $1 ${bw:-0}" >>"$results"
}

run_fio() {
	settle
	# shellcheck disable=SC2046
	bw=$(fio --name=blbench-sync --filename="$raw" --ioengine=io_uring \
		--rw=write --bs="$bs" --iodepth="$depth" --size="${size}M" \
		--direct=1 $(fio_opt "$1") --time_based --runtime="$secs" \
		--output-format=terse --terse-version=3 2>/dev/null | fio_bw)
	echo "fio $1 ${bw:-0}" >>"$results"
}

# the raw "device": made by blbench (preallocated), then written in full
if ! "$bin" 1 write -b "$bs" -t 1 --max-objects 1 \
	--target "file:$raw:${size}M" >/dev/null 2>&1; then
	echo "$0: cannot make $raw" >&2
	exit 1
fi
fio --name=prefill --filename="$raw" --ioengine=io_uring --rw=write \
	--bs="$bs" --iodepth="$depth" --size="${size}M" --direct=1 \
	--output-format=terse >/dev/null 2>&1

for m in $modes; do
	r=1
	while [ "$r" -le "$rounds" ]; do
		if [ $((r % 2)) -eq 1 ]; then
			run_blb "$m"; run_fio "$m"
		else
			run_fio "$m"; run_blb "$m"
		fi
		echo "# $m round $r: $(tail -2 "$results" | tr '\n' ' ')"
		r=$((r + 1))
	done
done
echo "# load after: $(uptime)"

[ -n "${BL_BENCH_RAW:-}" ] && cp "$results" "$BL_BENCH_RAW"

echo
echo "| mode (blbench / fio) | blbench MB/s (median, min-max) | fio MB/s (median, min-max) | ratio of medians | geomean of rounds |"
echo "|---|---|---|---|---|"
for m in $modes; do
	table_row "$results" "$m" "$(blb_opt "$m") / $(fio_opt "$m")"
done
