#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-uring.sh DIR - the io_uring layer's benchmarks, side by side with fio,
# as markdown tables of medians.
#
#   DIR holds bench_uring (the build's perf/).
#
# 1. File writes: 1 GiB as 4 MiB lists with 16 in flight, buffered and
#    O_DIRECT, lists of 64 x 64 KiB segments and of 1 x 4 MiB, against
#      fio --name=w --ioengine=io_uring --rw=write --bs=4M --iodepth=16 \
#          --size=1G --filename=F [--direct=1]
#    Both preallocate the file (fallocate) before the clock starts, as
#    fio does by default.
#    Every run writes a fresh file that is deleted right after, and starts
#    after a sync (outside the timed part), so that no run pays for the
#    writeback its predecessor left.  The runs
#    are interleaved (the order rotates from round to round) and the table
#    gives medians: single runs on a shared virtual disk vary by +-15% and
#    more.  Buffered writes on the kind of VM this was written on are
#    bimodal for every writer, fio included (0.3-7 GB/s; the slow mode
#    spends ~20x the CPU in the kernel's copy into fresh page cache inside
#    io-wq).  The mode is set by the memory, not the writer: this VM's
#    free page reporting (virtio-balloon) hands free guest memory back to
#    the host a second or two after it is freed, and the first write to a
#    handed-back page faults in the host.  A buffered write that follows
#    the deletion of another 1 GiB file reuses its pages (fast); one that
#    follows the O_DIRECT jobs gets handed-back pages (slow).  The
#    rotation below always put the same job after the O_DIRECT ones, so
#    every buffered job (ours and fio's) is now preceded by an untimed
#    1 GiB buffered write of a scratch file, deleted before the timed run
#    starts (BL_BENCH_PRIME=0 turns that off).  Look at min-max anyway.
# 2. Loopback TCP: messages of 4 KiB, 64 KiB and 1 MiB made of several
#    segments, sent by copy, by zero copy as the library does it by default
#    ("zc": the library stops using zero copy on a socket whose
#    notifications report that the kernel copied anyway) and by zero copy
#    for every send ("zcraw"); received with read(2) into a malloc'd buffer
#    or into a provided-buffer ring, the latter also with the ring's spin
#    before a sleep turned off (-S 0, "ring, no spin").  GB/s and CPU
#    seconds per GB of the whole process (getrusage).  On loopback the
#    kernel copies the payload whatever the sender asks for: zero copy can
#    only lose here, and the table says so.
#
# Environment:
#   BL_BENCH_ROUNDS   rounds (default 5)
#   BL_BENCH_DIR      where the 1 GiB files go (default /var/tmp if it is
#                     writable, else the current directory; tmpfs such as
#                     /tmp measures memory, not a disk); needs 3 GiB free
#   BL_BENCH_PARTS    "file net" (default), "file" or "net"
#   BL_BENCH_RAW      file to keep the raw RESULT lines in
#   BL_BENCH_PRIME    1 (default): an untimed buffered 1 GiB write before
#                     every buffered job, see above; 0: none
set -u

dir=${1:-}
if [ -z "$dir" ] || [ ! -x "$dir/bench_uring" ]; then
	echo "usage: $0 DIR   (DIR/bench_uring must exist; build it first)" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-5}
parts=${BL_BENCH_PARTS:-file net}
fdir=${BL_BENCH_DIR:-}
if [ -z "$fdir" ]; then
	if [ -d /var/tmp ] && [ -w /var/tmp ]; then fdir=/var/tmp; else fdir=.; fi
fi

. "$(dirname "$0")/rounds-lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/blbench-uring.XXXXXX") || exit 1
file="$fdir/bl-bench-uring.$$"
trap 'rm -rf "$tmp"; rm -f "$file"' EXIT INT TERM
: >"$tmp/results"

# One measurement: "name value unit" lines appended to the results.
# SUFFIX (may be empty) is added to every result's name.
ours_as() {
	suffix=$1
	shift
	rm -f "$file"
	if ! "$dir/bench_uring" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "warning: bench_uring $*: $(head -c 300 "$tmp/err")" >&2
	fi
	rm -f "$file"
	awk -v s="$suffix" '$1 == "RESULT" {
		n = $2
		if (s != "") { if (sub(/_cpu$/, "", n)) n = n s "_cpu"; else n = n s }
		print n, $3, $4 }' "$tmp/out" >>"$tmp/results"
	grep '^#' "$tmp/out" | grep -v ' waits: ' >>"$tmp/notes"
}

ours() {
	ours_as "" "$@"
}

fio_run() {	# fio_run NAME DIRECT
	rm -f "$file"
	if ! fio --name=w --ioengine=io_uring --rw=write --bs=4M --iodepth=16 \
		--size=1G --filename="$file" --direct="$2" \
		--output-format=terse --terse-version=3 >"$tmp/out" 2>"$tmp/err"; then
		echo "warning: fio: $(head -c 300 "$tmp/err")" >&2
		rm -f "$file"
		return
	fi
	rm -f "$file"
	# terse v3: field 48 is the write bandwidth in KiB/s
	awk -F';' -v n="$1" '{ printf "%s %.3f GB/s\n", n, $48 * 1024 / 1e9 }' \
		"$tmp/out" >>"$tmp/results"
}

: >"$tmp/notes"
want_file=0
want_net=0
case " $parts " in *" file "*) want_file=1 ;; esac
case " $parts " in *" net "*) want_net=1 ;; esac

if [ "$want_file" = 1 ]; then
	free_kb=$(df -Pk "$fdir" | awk 'NR == 2 { print $4 }')
	if [ -z "$free_kb" ] || [ "$free_kb" -lt 3145728 ]; then
		echo "skipping the file writes: $fdir has $((${free_kb:-0} / 1024)) MiB free, they need 3 GiB" >&2
		want_file=0
	elif ! command -v fio >/dev/null 2>&1; then
		echo "note: fio is not installed; file writes run without the fio baseline" >&2
	fi
fi

file_jobs="buf64 buf4m fiobuf dio64 dio4m fiodio"
net_jobs=""
for sz in 4k 64k 1m; do
	net_jobs="$net_jobs $sz:copy:read $sz:copy:ring $sz:copy:ringnospin"
	net_jobs="$net_jobs $sz:zc:read $sz:zcraw:read"
done

run_job() {
	# every file job starts with the page cache's dirty data on disk
	case $1 in
	buf*|dio*|fio*) sync ;;
	esac
	# every buffered job starts on page cache just freed, see the header
	case $1 in
	buf*|fiobuf)
		if [ "${BL_BENCH_PRIME:-1}" != 0 ]; then
			rm -f "$file"
			"$dir/bench_uring" write "$file" -s 4m >/dev/null 2>&1
			rm -f "$file"
		fi ;;
	esac
	case $1 in
	buf64)	ours write "$file" -s 64k ;;
	buf4m)	ours write "$file" -s 4m ;;
	dio64)	ours write "$file" -d -s 64k ;;
	dio4m)	ours write "$file" -d -s 4m ;;
	fiobuf)	command -v fio >/dev/null 2>&1 && fio_run fio_write_buffered 0 ;;
	fiodio)	command -v fio >/dev/null 2>&1 && fio_run fio_write_direct 1 ;;
	*:*:*)
		sz=${1%%:*}
		rest=${1#*:}
		case ${rest#*:} in
		ringnospin) ours_as _nospin net "$sz" "${rest%%:*}" ring -t 1G -S 0 ;;
		*)	ours net "$sz" "${rest%%:*}" "${rest#*:}" -t 1G ;;
		esac
		;;
	esac
}

jobs=""
[ "$want_file" = 1 ] && jobs="$file_jobs"
[ "$want_net" = 1 ] && jobs="$jobs $net_jobs"
start=$(date +%s)
r=1
while [ "$r" -le "$rounds" ]; do
	echo "#   round $r/$rounds" >&2
	# shellcheck disable=SC2086 # split on purpose
	for j in $(bench_rotate "$r" $jobs); do
		run_job "$j"
	done
	r=$((r + 1))
done
end=$(date +%s)
[ -n "${BL_BENCH_RAW:-}" ] && cp "$tmp/results" "$BL_BENCH_RAW"

# name median min max unit count
bench_medians <"$tmp/results" >"$tmp/stats"

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
echo
echo "libbufferlist io_uring benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: ${cpu:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) CPU(s), $(uname -sr); files in $fdir; $rounds round(s), $((end - start)) s"
echo "GB = 10^9 bytes; median (min-max) over the rounds"

awk -v want_file="$want_file" -v want_net="$want_net" '
{ med[$1] = $2; lo[$1] = $3; hi[$1] = $4 }
function cell(k) {
	return (k in med) ? sprintf("%.3f (%.3f-%.3f)", med[k], lo[k], hi[k]) : "-"
}
function ratio(a, b) {
	return (a in med) && (b in med) && med[b] > 0 ? sprintf("%.0f%%", 100 * med[a] / med[b]) : "-"
}
END {
	if (want_file) {
		print ""
		print "File writes, 1 GiB as 4 MiB lists, 16 in flight (GB/s):"
		print ""
		print "| mode | ours, 64 x 64 KiB segments | ours, 1 x 4 MiB | fio io_uring bs=4M | 64x64K / fio | 1x4M / fio |"
		print "|---|---|---|---|---|---|"
		printf "| buffered | %s | %s | %s | %s | %s |\n", cell("write_buffered_64x64k"),
			cell("write_buffered_1x4m"), cell("fio_write_buffered"),
			ratio("write_buffered_64x64k", "fio_write_buffered"),
			ratio("write_buffered_1x4m", "fio_write_buffered")
		printf "| O_DIRECT | %s | %s | %s | %s | %s |\n", cell("write_direct_64x64k"),
			cell("write_direct_1x4m"), cell("fio_write_direct"),
			ratio("write_direct_64x64k", "fio_write_direct"),
			ratio("write_direct_1x4m", "fio_write_direct")
	}
	if (want_net) {
		print ""
		print "Loopback TCP, 16 messages in flight, 1 GiB per run: GB/s and CPU s/GB (user+sys, whole process)."
		print "Loopback copies the payload whatever the sender asks: zero copy cannot win here (it needs a NIC);"
		print "\"zc\" is the library default (zero copy, abandoned per socket once the kernel reports it copied),"
		print "\"zcraw\" forces SENDMSG_ZC on every send."
		print ""
		print "| message | send copy, recv read() | send copy, recv ring | send copy, recv ring, no spin | send zc, recv read() | send zcraw, recv read() |"
		print "|---|---|---|---|---|---|"
		n = split("4k 64k 1m", sz, " ")
		for (i = 1; i <= n; i++) {
			s = sz[i]
			line = "| " s " |"
			m = split("copy_read copy_ring copy_ring_nospin zc_read zcraw_read", v, " ")
			for (j = 1; j <= m; j++) {
				k = "net_" s "_" v[j]
				line = line sprintf(" %s GB/s, %s s/GB |",
					(k in med) ? sprintf("%.2f", med[k]) : "-",
					(k "_cpu" in med) ? sprintf("%.3f", med[k "_cpu"]) : "-")
			}
			print line
		}
	}
}' "$tmp/stats"
if [ -s "$tmp/notes" ]; then
	echo
	echo "notes (from the last runs):"
	sort -u "$tmp/notes" | tail -12
fi
