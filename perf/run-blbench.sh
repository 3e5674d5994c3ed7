#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-blbench.sh [BLBENCH] - `blbench write` beside fio's io_uring engine,
# with the same block size and depth, on the same file system, in the same
# run, and a markdown table of medians and the blbench/fio ratio.
#
#   BLBENCH   the blbench binary (default: ./blbench, then blbench on PATH)
#
# Three comparisons, each interleaved: all the fresh rounds, then all the
# direct rounds, then all the dir rounds; in every round blbench and fio run back to back, and who goes
# first flips from round to round.  The kinds are not mixed because on
# these VMs a run pays for what the run before it left behind, and that
# differs by kind (after a buffered run an O_DIRECT run was up to 30%
# slower, depending on which program made the buffered mess).  Before
# every run: sync, and a second's pause for the disk to settle.
#
#   dir     blbench SECS write --target dir:DIR/objs       (buffered; one
#           new file per object, removed after each run)
#           fio --rw=write --fallocate=none, a new file removed after each
#           run: both allocate as they go
#   fresh   blbench SECS write --direct --target file:NEW:SIZE  (O_DIRECT
#           to a new preallocated file: unwritten extents, converted as
#           they are written; the file is removed after each run)
#           fio --rw=write --direct=1 --fallocate=native on a new file (the
#           same fallocate)
#   direct  blbench SECS write --direct --target file:RAW  (O_DIRECT; the
#           raw file is preallocated and written once before its rounds,
#           so both sides overwrite written blocks, as on a device)
#           fio --rw=write --direct=1 --filename=RAW
#           In both, neither side wraps: a run ends after SECS or when it
#           has written the file once, whichever comes first (a wrapping
#           fio against a blbench that stops at the end measured runs of
#           different lengths).
#
# The ratio: the geometric mean of the per-round ratios.  Whoever runs
# first in a pair pays a penalty p (measured up to 2x here), so a round
# gives r/p or r*p; with an even number of rounds the product cancels p,
# where a ratio of medians would keep whatever imbalance the order left.
# Medians and ranges are shown too.
#
# Both sides: 4 MiB ops (-b / --bs), 16 in flight (-t / --iodepth), MB =
# 2^20 bytes; fio's bandwidth is its write bw, blbench's its summary's
# "Bandwidth (MB/sec)".  A run that fills the raw file stops early (its
# bandwidth is still bytes over its own time).
#
# Disk: the objects of a dir run are capped at the fio file's size, and
# both that and the raw file are sized from the free space (at most 16 GiB,
# or BL_BENCH_SIZE MiB, each; together at most 80% of what is free); under
# 2 GiB free it stops.  A fresh file is removed before the raw file is
# made, so the two never take room together.
# Everything is removed at the end, also on ^C.
#
# Environment:
#   BL_BENCH_DIR      where to write (default: a new directory in /var/tmp;
#                     must not be tmpfs for the O_DIRECT comparison)
#   BL_BENCH_ROUNDS   rounds (default 6; an odd number is rounded up)
#   BL_BENCH_SECONDS  seconds per run (default 5)
#   BL_BENCH_SIZE     largest file, in MiB (default 16384)
#   BL_BENCH_RAW      file for the raw lines (prog target MB/s), kept
set -u

bin=${1:-}
. "$(dirname "$0")/rounds-lib.sh"
bin=$(bench_blbench "$0" "$bin" "build blbench first") || exit 1
if ! command -v fio >/dev/null 2>&1; then
	echo "$0: fio is not installed (scripts/install-deps.sh --bench installs it)" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-6}
# an even count: each side goes first in a pair equally often
rounds=$(( (rounds + 1) / 2 * 2 ))
secs=${BL_BENCH_SECONDS:-5}
bs=4M
depth=16

bench_workdir blbench-perf
raw="$base/raw.img"
fresh="$base/fresh.img"
results="$base/results"
cleanup() {
	rm -rf "$base/objs" "$base/fio.dat" "$raw" "$fresh" "$results"
	[ "$made_base" = 1 ] && rmdir "$base" 2>/dev/null
}
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

# free space, in MiB
avail=$(df -Pm "$base" | awk 'NR == 2 { print $4 }')
if [ "${avail:-0}" -lt 2048 ]; then
	echo "$0: only ${avail:-0} MiB free on $base; need at least 2048" >&2
	exit 1
fi
size=$((avail * 40 / 100))
max_size=${BL_BENCH_SIZE:-16384}
[ "$size" -gt "$max_size" ] && size=$max_size
size=$((size / 4 * 4))			# whole 4 MiB ops
maxobj=$((size / 4))
# a file: target's slots start at 4 MiB for 4 MiB ops; one pass over
# them, since a timed blbench write would wrap to the start (fio does not)
onepass=$((maxobj - 1))
echo "# $rounds rounds of ${secs} s, bs $bs, depth $depth, in $base ($avail MiB free; files of $size MiB)"
echo "# blbench: $bin ($("$bin" --help >/dev/null 2>&1 && echo ok))"
echo "# fio: $(fio --version)"

: >"$results"

# fio_bw, settle
. "$(dirname "$0")/blbench-lib.sh"

run_blb_dir() {
	settle
	bw=$("$bin" "$secs" write -b "$bs" -t "$depth" --max-objects "$maxobj" \
		--target "dir:$base/objs" 2>/dev/null |
		awk -F: '/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); print $2 }')
	rm -rf "$base/objs"
	echo "blbench dir ${bw:-0}" >>"$results"
}

run_fio_dir() {
	settle
	bw=$(fio --name=blbench-dir --directory="$base" --filename=fio.dat \
		--ioengine=io_uring --rw=write --bs="$bs" --iodepth="$depth" \
		--size="${size}M" --fallocate=none --time_based --runtime="$secs" \
		--output-format=terse --terse-version=3 2>/dev/null | fio_bw)
	rm -f "$base/fio.dat"
	echo "fio dir ${bw:-0}" >>"$results"
}

run_blb_direct() {
	settle
	bw=$("$bin" "$secs" write -b "$bs" -t "$depth" --direct \
		--max-objects "$onepass" --target "file:$raw" 2>/dev/null |
		awk -F: '/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); print $2 }')
	echo "blbench direct ${bw:-0}" >>"$results"
}

run_fio_direct() {
	settle
	bw=$(fio --name=blbench-direct --filename="$raw" --ioengine=io_uring \
		--rw=write --bs="$bs" --iodepth="$depth" --size="${size}M" \
		--direct=1 --runtime="$secs" \
		--output-format=terse --terse-version=3 2>/dev/null | fio_bw)
	echo "fio direct ${bw:-0}" >>"$results"
}

run_blb_fresh() {
	rm -f "$fresh"
	settle
	bw=$("$bin" "$secs" write -b "$bs" -t "$depth" --direct \
		--max-objects "$onepass" --target "file:$fresh:${size}M" 2>/dev/null |
		awk -F: '/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); print $2 }')
	rm -f "$fresh"
	echo "blbench fresh ${bw:-0}" >>"$results"
}

run_fio_fresh() {
	rm -f "$fresh"
	settle
	bw=$(fio --name=blbench-fresh --filename="$fresh" --ioengine=io_uring \
		--rw=write --bs="$bs" --iodepth="$depth" --size="${size}M" \
		--direct=1 --fallocate=native --runtime="$secs" \
		--output-format=terse --terse-version=3 2>/dev/null | fio_bw)
	rm -f "$fresh"
	echo "fio fresh ${bw:-0}" >>"$results"
}

# The raw "device": made by blbench (preallocated), then written once in
# full so that no run pays for converting unwritten extents.
make_raw() {
	if ! "$bin" 1 write -b "$bs" -t 1 --max-objects 1 \
		--target "file:$raw:${size}M" >/dev/null 2>&1; then
		echo "$0: cannot make $raw" >&2
		exit 1
	fi
	fio --name=prefill --filename="$raw" --ioengine=io_uring --rw=write \
		--bs="$bs" --iodepth="$depth" --size="${size}M" --direct=1 \
		--output-format=terse >/dev/null 2>&1
}

for kind in fresh direct dir; do
	[ "$kind" = direct ] && make_raw
	[ "$kind" = dir ] && rm -f "$raw"
	r=1
	while [ "$r" -le "$rounds" ]; do
		if [ $((r % 2)) -eq 1 ]; then
			run_blb_$kind; run_fio_$kind
		else
			run_fio_$kind; run_blb_$kind
		fi
		echo "# $kind round $r: $(tail -2 "$results" | tr '\n' ' ')"
		r=$((r + 1))
	done
done

[ -n "${BL_BENCH_RAW:-}" ] && cp "$results" "$BL_BENCH_RAW"

# medians, min-max, and the geometric mean of the per-round ratios
echo
echo "| target | blbench MB/s (median, min-max) | fio MB/s (median, min-max) | blbench / fio (medians) | blbench / fio (geomean of rounds) |"
echo "|---|---|---|---|---|"
table_row "$results" dir "dir (buffered, new files)"
table_row "$results" fresh "new preallocated file, O_DIRECT"
table_row "$results" direct "raw file written before, O_DIRECT"
