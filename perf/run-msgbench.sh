#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-msgbench.sh [MSGBENCH] - the messenger benchmark in interleaved
# rounds, with medians.
#
#   MSGBENCH   the msgbench program (default: ./msgbench, else msgbench
#              from PATH)
#
# Each round runs the in-memory parse once and every network case twice,
# ours and the baseline each in a process of its own; the order of the two
# alternates from round to round, so neither always runs on a machine the
# other has just warmed (or heated).  The table gives, per case, the
# median over the rounds and the min-max range.  Nothing is pinned; on a
# shared machine expect noise, and look at the ranges and the CPU time per
# message, which moves less with other load than the rates do.
#
# Environment:
#   BL_BENCH_ROUNDS   rounds (default 5)
#   MSGBENCH_SECONDS  seconds per network run (default 2)
#   MSGBENCH_CASES    mode:size:conns list (default: the msgbench matrix)
#   MSGBENCH_ARGS     extra msgbench arguments (e.g. --zc, --align; --lz4:
#                     every payload compressed on the wire, rates count
#                     uncompressed bytes; the RESULT case names stay the
#                     same, so do not mix runs with and without it)
#   MSGBENCH_ARGS_B   a second variant of ours, run in the same rounds with
#                     these arguments added (e.g. --spin 0): each case then
#                     runs three programs in an order that rotates, and the
#                     table gains a line for "ours-b" with its ratios to
#                     the baseline and to ours
#   BL_BENCH_MALLOC   "notrim": run every program with glibc tunables that
#                     stop heap trimming and fix the mmap threshold at 32 MiB
#                     (as perf/run-core.sh).  Matters for 1 MiB payloads:
#                     glibc as it comes gives back and re-faults the heap
#                     top when several 1 MiB blocks are freed together,
#                     which both sides do (ours: the raws payloads are read
#                     into; base: the payload copies); default: glibc as it
#                     comes
#   BL_BENCH_RAW      file to keep the raw RESULT lines in
#   BENCH_CEPH        perf/bench_ceph (default: next to MSGBENCH, if built):
#                     its parse_frames_list (Ceph's bufferlist iterator over
#                     the same 100,000 frames of 16..64 bytes, u32 length
#                     prefixes, no crc) runs in every round, so Ceph's
#                     number comes from this machine in this run; likewise
#                     BENCH_CORE (perf/bench_core: our list's iterator).
set -u

mb=${1:-}
if [ -z "$mb" ]; then
	if [ -x ./msgbench ]; then
		mb=./msgbench
	else
		mb=msgbench
	fi
fi
. "$(dirname "$0")/rounds-lib.sh"
bench_malloc "$0" "" 1073741824
dir=$(dirname "$(command -v "$mb" 2>/dev/null || echo "$mb")")
ceph=${BENCH_CEPH:-$dir/perf/bench_ceph}
core=${BENCH_CORE:-$dir/perf/bench_core}
rounds=${BL_BENCH_ROUNDS:-5}
secs=${MSGBENCH_SECONDS:-2}
cases=${MSGBENCH_CASES:-"stream:64:1 stream:64:4 stream:1048576:1 stream:1048576:4 pingpong:64:1 pingpong:1048576:1"}
extra=${MSGBENCH_ARGS:-}
extra_b=${MSGBENCH_ARGS_B:-}
case " $extra_b " in
*" --impl"* | *" -i"*)
	echo "$0: MSGBENCH_ARGS_B varies ours; it cannot name --impl" >&2
	exit 1
	;;
esac

if ! command -v "$mb" >/dev/null 2>&1; then
	echo "$0: cannot find $mb (build it, or pass its path)" >&2
	exit 1
fi

raw=$(mktemp "${TMPDIR:-/tmp}/msgbench.XXXXXX") || exit 1
rawb=$(mktemp "${TMPDIR:-/tmp}/msgbench.XXXXXX") || exit 1
trap 'rm -f "$raw" "$rawb"' EXIT
trap 'exit 1' HUP INT TERM

echo "# $("$mb" --parse --frames 1000 | head -1 | sed 's/^# //')"
echo "# $rounds rounds, $secs s per network run, cases: $cases${extra:+, args: $extra}${extra_b:+, ours-b adds: $extra_b}, malloc: ${BL_BENCH_MALLOC:-glibc as it comes}"
echo "# $(uname -r), $(nproc) CPUs, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"

r=1
while [ "$r" -le "$rounds" ]; do
	# shellcheck disable=SC2086
	"$mb" --parse -q $extra >>"$raw" || exit 1
	for p in ceph core; do
		if [ "$p" = ceph ]; then prog=$ceph; else prog=$core; fi
		[ -x "$prog" ] || continue
		"$prog" -q =parse_frames_list | awk -v impl="$p" \
			'$1 == "RESULT" && $2 == "parse_frames_list" {
				print "RESULT msgbench parse size=0 conns=0 impl=" impl, $3, "ns/frame"
			}' >>"$raw"
	done
	for c in $cases; do
		# shellcheck disable=SC2046
		set -- $(echo "$c" | tr ':' ' ')
		if [ -n "$extra_b" ]; then
			case $((r % 3)) in
			1) order="ours ours-b base" ;;
			2) order="ours-b base ours" ;;
			*) order="base ours ours-b" ;;
			esac
		elif [ $((r % 2)) -eq 1 ]; then
			order="ours base"
		else
			order="base ours"
		fi
		for impl in $order; do
			if [ "$impl" = ours-b ]; then
				# shellcheck disable=SC2086
				"$mb" --mode "$1" --size "$2" --conns "$3" \
					--seconds "$secs" --impl ours -q $extra \
					$extra_b >"$rawb" || exit 1
				sed 's/ impl=ours / impl=ours-b /' "$rawb" >>"$raw"
				continue
			fi
			# shellcheck disable=SC2086
			"$mb" --mode "$1" --size "$2" --conns "$3" \
				--seconds "$secs" --impl "$impl" -q $extra \
				>>"$raw" || exit 1
		done
	done
	echo "# round $r of $rounds done" >&2
	r=$((r + 1))
done

[ -n "${BL_BENCH_RAW:-}" ] && cp "$raw" "$BL_BENCH_RAW"

# RESULT msgbench CASE size=N conns=N impl=I VALUE UNIT
awk '
function med(key,    n, i, j, t, v) {
	n = split(vals[key], v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	lo[key] = v[1]; hi[key] = v[n]
	return v[int((n + 1) / 2)]
}
$1 == "RESULT" && $2 == "msgbench" {
	sub(/^size=/, "", $4); sub(/^conns=/, "", $5); sub(/^impl=/, "", $6)
	c = $3 " " $4 " " $5
	key = c SUBSEP $6 SUBSEP $8
	vals[key] = vals[key] " " $7
	if (!(c in seen)) {
		seen[c] = 1
		order[++ncase] = c
	}
}
END {
	k1 = "parse 0 0" SUBSEP "ours" SUBSEP "ns/frame"
	k2 = "parse 0 0" SUBSEP "base" SUBSEP "ns/frame"
	if (k1 in vals) {
		o = med(k1); b = med(k2)
		printf "\nparse 100,000 frames of 16..64 bytes in memory, ns per frame (median, min-max)\n"
		printf "  ours (bl_msgr_parse, shared slices)  %6.1f  (%s-%s)\n", o, lo[k1], hi[k1]
		printf "  base (malloc + memcpy per payload)   %6.1f  (%s-%s)\n", b, lo[k2], hi[k2]
		k3 = "parse 0 0" SUBSEP "ceph" SUBSEP "ns/frame"
		k4 = "parse 0 0" SUBSEP "core" SUBSEP "ns/frame"
		if (k3 in vals) {
			ceph = med(k3)
			printf "  Ceph bufferlist iterator, this run   %6.1f  (%s-%s; perf/bench_ceph, u32 length, no crc)\n", ceph, lo[k3], hi[k3]
		}
		if (k4 in vals) {
			c = med(k4)
			printf "  our list iterator, this run          %6.1f  (%s-%s; perf/bench_core, u32 length, no crc)\n", c, lo[k4], hi[k4]
		}
		printf "  faster than base: %s; than Ceph (this run): %s\n",
		       o < b ? "yes" : "NO", (k3 in vals) ? (o < ceph ? "yes" : "NO") : "not run"
	}
	printf "\n%-9s %8s %5s | %11s %7s %9s %9s | %11s %7s %9s %9s | %6s\n",
	       "mode", "size", "conns", "ours msg/s", "GB/s", "srv ns/m",
	       "cli ns/m", "base msg/s", "GB/s", "srv ns/m", "cli ns/m",
	       "o/b"
	wins = 0; n = 0
	for (i = 1; i <= ncase; i++) {
		c = order[i]
		if (c ~ /^parse /)
			continue
		split(c, f, " ")
		line = sprintf("%-9s %8s %5s |", f[1], f[2], f[3])
		for (k = 0; k < 2; k++) {
			impl = k ? "base" : "ours"
			m[k] = med(c SUBSEP impl SUBSEP "msgs/s")
			line = line sprintf(" %11.0f %7.3f %9.0f %9.0f |", m[k],
				med(c SUBSEP impl SUBSEP "GB/s"),
				med(c SUBSEP impl SUBSEP "srv-cpu-ns/msg"),
				med(c SUBSEP impl SUBSEP "cli-cpu-ns/msg"))
			rng[k] = sprintf("%s: %.0f-%.0f msg/s", impl,
				lo[c SUBSEP impl SUBSEP "msgs/s"],
				hi[c SUBSEP impl SUBSEP "msgs/s"])
		}
		ratio = m[1] > 0 ? m[0] / m[1] : 0
		printf "%s %5.2fx\n", line, ratio
		printf "%-26s   (%s; %s)\n", "", rng[0], rng[1]
		kb = c SUBSEP "ours-b" SUBSEP "msgs/s"
		if (kb in vals) {
			mb_ = med(kb)
			printf "%-26s   ours-b: %.0f msg/s (%.0f-%.0f), srv %.0f cli %.0f ns/m: %.2fx the baseline, ours %.2fx ours-b\n",
			       "", mb_, lo[kb], hi[kb],
			       med(c SUBSEP "ours-b" SUBSEP "srv-cpu-ns/msg"),
			       med(c SUBSEP "ours-b" SUBSEP "cli-cpu-ns/msg"),
			       (m[1] > 0 ? mb_ / m[1] : 0), (mb_ > 0 ? m[0] / mb_ : 0)
		}
		n++
		wins += ratio > 1
	}
	printf "\nours faster than the baseline (median msg/s) in %d of %d cases\n", wins, n
}' "$raw"
