#!/bin/sh
# SPDX-License-Identifier: MIT
#
# run-blbench-tcp.sh [BLBENCH [MSGBENCH]] - blbench's tcp: target against
# the messenger it runs on: `blbench serve` with a dir: target on
# loopback, its objects read from the server's page cache, beside
# msgbench's 4 MiB stream (ours, one connection) in the same rounds.
#
#   BLBENCH    the blbench binary (default: ./blbench, then blbench on PATH)
#   MSGBENCH   the msgbench binary (default: msgbench next to BLBENCH)
#
# The server starts once; a write with --no-cleanup puts the objects in
# its directory (and so in the page cache).  Each round then runs every
# case - seq and rand at -t 1, 4 and 16, write at -t 16, and the same
# write with --direct (the server's files O_DIRECT) - each paired
# with one msgbench --mode stream --size 4M --conns 1 --impl ours run;
# who goes first in a pair flips from round to round.  seq reads every
# object once (rados bench's seq), so it is as long as the objects make
# it; rand and write run for BL_BENCH_SECONDS.  The write case writes
# under a run name of its own and removes its objects after each run;
# beside it runs the same write into a dir: target on the server's file
# system from the client's own process (no messenger): the write's bound.
#
# Per case the table gives the median bandwidth and its min-max range,
# the median of the msgbench runs paired with it, their ratio, and CPU
# seconds per GiB moved: the client process's (user + system, from
# /usr/bin/time, start-up included) and the server process's (from
# /proc/PID/stat before and after the run), beside msgbench's client and
# server threads' (its cli- and srv-cpu-ns/msg).  MiB/s is 2^20 bytes a
# second for both programs.  Nothing is pinned; the load average is
# printed before and after: on a shared machine read the ranges.
#
# Environment:
#   BL_BENCH_ROUNDS    rounds (default 5)
#   BL_BENCH_SECONDS   seconds per rand, write and msgbench run (default 3)
#   BL_BENCH_OBJECTS   objects of 4 MiB written for the reads (default 256)
#   BL_BENCH_DIR       the server's directory (default: a new directory in
#                      /var/tmp, removed at the end)
#   BL_BENCH_PORT      loopback port of the server (default 6800 + pid % 1000)
#   BL_BENCH_CASES     mode:depth list (default: seq:1 seq:4 seq:16 rand:1
#                      rand:4 rand:16 write:16 dwrite:16; dwrite is write
#                      --direct: the server writes O_DIRECT)
#   BL_BENCH_RAW       file to keep the raw lines in
set -u

. "$(dirname "$0")/rounds-lib.sh"
bb=$(bench_blbench "$0" "${1:-}" "build blbench first") || exit 1
mb=${2:-$(dirname "$bb")/msgbench}
if [ ! -x "$mb" ]; then
	echo "$0: cannot find msgbench at $mb (build it, or pass its path)" >&2
	exit 1
fi
if [ ! -x /usr/bin/time ]; then
	echo "$0: /usr/bin/time is needed for the client's CPU time" >&2
	exit 1
fi
rounds=${BL_BENCH_ROUNDS:-5}
secs=${BL_BENCH_SECONDS:-3}
nobj=${BL_BENCH_OBJECTS:-256}
port=${BL_BENCH_PORT:-$((6800 + $$ % 1000))}
cases=${BL_BENCH_CASES:-"seq:1 seq:4 seq:16 rand:1 rand:4 rand:16 write:16 dwrite:16"}
addr=127.0.0.1:$port
tck=$(getconf CLK_TCK)

bench_workdir blbench-tcp
raw=$(mktemp "${TMPDIR:-/tmp}/blbench-tcp.XXXXXX") || exit 1
out=$(mktemp "${TMPDIR:-/tmp}/blbench-tcp.XXXXXX") || exit 1
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	rm -f "$raw" "$out"
	rm -rf "$base/objs" "$base/local"
	[ "$made_base" = 1 ] && rmdir "$base" 2>/dev/null
}
trap 'cleanup; exit 130' INT TERM
trap cleanup EXIT

# free space for the objects and one write run (at most 2 GiB: see below)
avail=$(df -Pm "$base" | awk 'NR == 2 { print $4 }')
if [ "${avail:-0}" -lt $((nobj * 4 + 4096)) ]; then
	echo "$0: only ${avail:-0} MiB free on $base; need $((nobj * 4 + 4096))" >&2
	exit 1
fi

mkdir -p "$base/objs" || exit 1
"$bb" serve --listen "$addr" --target "dir:$base/objs" >/dev/null 2>"$out" &
spid=$!
tries=0
until "$bb" --target "tcp:$addr" --max-objects "$nobj" -t 16 0 write \
	--no-cleanup --run-name tcpbench >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 50 ] || ! kill -0 "$spid" 2>/dev/null; then
		echo "$0: blbench serve on $addr did not take the objects:" >&2
		cat "$out" >&2
		exit 1
	fi
	sleep 0.2
done

srv_ticks() {
	awk '{ print $14 + $15 }' "/proc/$spid/stat"
}

echo "# blbench serve on $addr, dir: target in $base, $nobj objects of 4 MiB read from the page cache"
echo "# $rounds rounds, $secs s per rand/write/msgbench run, cases: $cases"
echo "# $(uname -r), $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# RAW lines: CASE ROUND prog MiB/s cli-s/GiB srv-s/GiB
one_blbench() {	# mode depth round
	label=$1:$2
	if [ "$1" = dwrite ]; then
		# write with --direct: the server opens its files O_DIRECT
		set -- write "$2" "$3" --run-name tcpbench-w --max-objects 512 \
			--direct
	elif [ "$1" = write ]; then
		# a run of its own, its objects removed at its end; at most
		# 512 objects (2 GiB) so a fast run cannot fill the disk
		set -- "$1" "$2" "$3" --run-name tcpbench-w --max-objects 512
	else
		set -- "$1" "$2" "$3" --run-name tcpbench
	fi
	mode=$1 depth=$2 round=$3
	shift 3
	s0=$(srv_ticks)
	/usr/bin/time -f "TIME %U %S" "$bb" --target "tcp:$addr" -t "$depth" \
		"$@" "$secs" "$mode" >"$out" 2>&1
	st=$?
	s1=$(srv_ticks)
	if [ "$st" -ne 0 ]; then
		echo "$0: blbench $mode -t $depth failed:" >&2
		cat "$out" >&2
		exit 1
	fi
	raw_line "$label" "$round" blbench $((s1 - s0))
}

# raw_line CASE ROUND PROG SERVER-TICKS: the RAW line of blbench's summary
# in $out (its /usr/bin/time line included)
raw_line() {
	awk -v c="$1" -v r="$2" -v p="$3" -v sv="$4" -v tck="$tck" '
		/^Total (reads|writes) made:/ { n = $4 }
		/^Object size:/ { size = $3 }
		/^(Read|Write) size:/ { size = $3 }
		/^Bandwidth \(MB\/sec\):/ { bw = $3 }
		$1 == "TIME" { cpu = $2 + $3 }
		END {
			gib = n * size / 1073741824
			if (gib <= 0) exit 1
			printf "%s %d %s %.1f %.3f %.3f\n", c, r, p, bw,
				cpu / gib, sv / tck / gib
		}' "$out" >>"$raw" || {
		echo "$0: cannot read blbench's summary:" >&2
		cat "$out" >&2
		exit 1
	}
}

# The write case's bound: the same write into a dir: target on the
# server's file system, in the client's own process (no messenger), so
# that a write slower than the stream shows whether the transport or the
# target's page-cache writes hold it.  RAW: CASE ROUND local MiB/s cpu 0
one_local() {	# mode depth round
	mkdir -p "$base/local" || exit 1
	/usr/bin/time -f "TIME %U %S" "$bb" --target "dir:$base/local" \
		$([ "$1" = dwrite ] && echo --direct) -t "$2" \
		--run-name tcpbench-l --max-objects 512 "$secs" write \
		>"$out" 2>&1 || {
		echo "$0: the local write failed:" >&2
		cat "$out" >&2
		exit 1
	}
	raw_line "$1:$2" "$3" local 0
}

one_msgbench() {	# case round
	"$mb" --mode stream --size 4M --conns 1 --seconds "$secs" --impl ours \
		-q >"$out" 2>&1 || {
		echo "$0: msgbench failed:" >&2
		cat "$out" >&2
		exit 1
	}
	# RESULT msgbench stream size=N conns=1 impl=ours VALUE UNIT
	awk -v c="$1" -v r="$2" '
		$1 == "RESULT" && $8 == "GB/s" { gbs = $7 }
		$1 == "RESULT" && $8 == "srv-cpu-ns/msg" { srv = $7 }
		$1 == "RESULT" && $8 == "cli-cpu-ns/msg" { cli = $7 }
		END {
			# 256 messages of 4 MiB to the GiB
			printf "%s %d msgbench %.1f %.3f %.3f\n", c, r,
				gbs * 1e9 / 1048576, cli * 256 / 1e9,
				srv * 256 / 1e9
		}' "$out" >>"$raw"
}

r=1
while [ "$r" -le "$rounds" ]; do
	for c in $cases; do
		mode=${c%%:*}
		depth=${c#*:}
		if [ $((r % 2)) -eq 1 ]; then
			one_blbench "$mode" "$depth" "$r"
			one_msgbench "$c" "$r"
		else
			one_msgbench "$c" "$r"
			one_blbench "$mode" "$depth" "$r"
		fi
		# (one_blbench set $mode to what it ran: the case's own)
		case ${c%%:*} in
		write|dwrite) one_local "${c%%:*}" "$depth" "$r" ;;
		esac
	done
	echo "# round $r of $rounds done (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
	r=$((r + 1))
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

[ -n "${BL_BENCH_RAW:-}" ] && cp "$raw" "$BL_BENCH_RAW"

awk -v cases="$cases" '
function med(s,    n, i, j, t, v) {
	n = split(s, v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	lo = v[1]; hi = v[n]
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ k = $1 SUBSEP $3; bw[k] = bw[k] " " $4; cc[k] = cc[k] " " $5; sc[k] = sc[k] " " $6 }
END {
	print "| case | blbench MiB/s (range) | msgbench MiB/s (range) | ratio | client CPU s/GiB | server CPU s/GiB | msgbench cli / srv s/GiB |"
	print "|---|---|---|---|---|---|---|"
	n = split(cases, cs, " ")
	ok_bw = 1; ok_cpu = 1
	for (i = 1; i <= n; i++) {
		c = cs[i]
		b = med(bw[c, "blbench"]); blo = lo; bhi = hi
		m = med(bw[c, "msgbench"]); mlo = lo; mhi = hi
		ccpu = med(cc[c, "blbench"]); scpu = med(sc[c, "blbench"])
		mc = med(cc[c, "msgbench"]); ms = med(sc[c, "msgbench"])
		ratio = m > 0 ? b / m : 0
		bwmed[c] = b
		printf "| %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.2fx | %.3f | %.3f | %.3f / %.3f |\n", \
			c, b, blo, bhi, m, mlo, mhi, ratio, ccpu, scpu, mc, ms
		if (ratio < 0.5)
			ok_bw = 0
		if (ccpu > 2 * mc || scpu > 2 * ms)
			ok_cpu = 0
	}
	printf "goal: every case >= 0.5x the msgbench stream: %s\n", (ok_bw ? "holds" : "MISSED")
	for (i = 1; i <= n; i++) {
		split(cs[i], p, ":")
		if (p[2] == 16 && ((p[1] ":1") in bwmed))
			printf "goal: %s -t 16 not slower than -t 1 (%.0f vs %.0f): %s\n", \
				p[1], bwmed[cs[i]], bwmed[p[1] ":1"], \
				(bwmed[cs[i]] >= bwmed[p[1] ":1"] ? "holds" : "MISSED")
	}
	printf "goal: CPU per GiB on each side <= 2x msgbench'"'"'s: %s\n", (ok_cpu ? "holds" : "MISSED")
	for (i = 1; i <= n; i++) {
		c = cs[i]
		if (!((c, "local") in bw))
			continue
		l = med(bw[c, "local"]); llo = lo; lhi = hi
		lc = med(cc[c, "local"])
		printf "%s against the same write into a local dir: target (its bound): %.0f vs %.0f (%.0f-%.0f) MiB/s, %.2fx; the local writer'"'"'s CPU %.3f s/GiB\n", \
			c, bwmed[c], l, llo, lhi, (l > 0 ? bwmed[c] / l : 0), lc
	}
}' "$raw"
