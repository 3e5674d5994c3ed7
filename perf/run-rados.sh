#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-rados.sh [BLBENCH] - blbench's rados: target beside `rados bench` on
# one throw-away cluster, interleaved, and a markdown table of medians.
#
#   BLBENCH   the blbench binary, built with the Ceph bridge (default:
#             ./blbench, then blbench on PATH)
#
# Started outside a cluster it starts one (scripts/ceph-cluster.sh run,
# with an OSD file sized for two writes' data) and runs itself inside.
# Given CEPH_CONF and BL_CEPH_POOL it uses that cluster.
#
# A round: both clients write for SECONDS (-t 16, 4 MiB ops, --no-cleanup),
# then both read back what they wrote (seq), in the same order; who goes
# first flips from round to round; then both clean up (rados cleanup /
# blbench cleanup).  The two keep their metadata under different run names
# (rados bench's and blbench's layouts differ), and each reads only its own
# objects.  Before every run: sync, and 2 s for the OSD to settle.
#
# What is measured, per run: the summary's "Bandwidth (MB/sec)" (MB = 2^20
# bytes, the same label in both), and the client process's CPU time
# (user + sys, from the shell's `times` of a subshell that ran it alone),
# reported per GiB moved (writes or reads made x 4 MiB).  The daemons'
# CPU is not counted: both clients drive the same daemons.
#
# Disk: every write stores SECONDS x ~1.1 GB/s; the OSD file is sized for
# two writes (about 30 GB for 10 s), and the round cleans up before the
# next.  With less room it runs each client's write, seq and cleanup in
# turn instead ("serial"), which needs half.  Everything goes at the end.
#
# Environment:
#   BL_BENCH_ROUNDS    rounds (default 5)
#   BL_BENCH_SECONDS   seconds per write and seq (default 10)
#   BL_BENCH_THREADS   ops in flight, -t (default 16)
#   BL_BENCH_SETTLE    seconds to wait after each cleanup (default 8)
#   BL_BENCH_RAW       also keep the raw lines (round client mode MB/s cpu-s
#                      bytes) in this file
set -u

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-}
. "$(dirname "$0")/rounds-lib.sh"
bin=$(bench_blbench "$0" "$bin" \
	"build blbench with the Ceph bridge first") || exit 1
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
rounds=${BL_BENCH_ROUNDS:-5}
secs=${BL_BENCH_SECONDS:-10}
depth=${BL_BENCH_THREADS:-16}
opsize=$((4 * 1024 * 1024))

if ! "$bin" --target rados:x -c /nonexistent/x 1 write 2>&1 |
	grep -q "cannot open target rados"; then
	echo "$0: $bin was built without the Ceph bridge (configure --with-ceph)" >&2
	exit 1
fi

# ---- outside a cluster: start one and come back inside it ---------------------
if [ -z "${CEPH_CONF:-}" ] || [ -z "${BL_CEPH_POOL:-}" ]; then
	cluster="$here/../scripts/ceph-cluster.sh"
	[ -x "$cluster" ] || { echo "$0: no $cluster" >&2; exit 1; }
	tmp=${TMPDIR:-/tmp}
	free_g=$(df -Pk "$tmp" | awk 'NR == 2 { print int($4 / 1048576) }')
	# two writes at ~1.1 GB/s, 15% for bluestore, 2 GiB of headroom
	need_g=$(( (2 * secs * 11 / 10) * 115 / 100 + 2 ))
	[ "$need_g" -lt 8 ] && need_g=8
	if [ "$free_g" -ge $((need_g + 8)) ]; then
		export BL_RUN_RADOS_LAYOUT=pair
		size_g=$need_g
	else
		export BL_RUN_RADOS_LAYOUT=serial
		size_g=$(( (need_g + 1) / 2 + 2 ))
		[ "$free_g" -ge $((size_g + 4)) ] || {
			echo "$0: $free_g GiB free in $tmp; need at least $((size_g + 4))" >&2
			exit 1
		}
	fi
	exec "$cluster" run --osd-size "${size_g}G" -- "$0" "$bin"
fi

# ---- inside ------------------------------------------------------------------
pool=$BL_CEPH_POOL
layout=${BL_RUN_RADOS_LAYOUT:-pair}
work=$(mktemp -d "${TMPDIR:-/tmp}/run-rados.XXXXXX") || exit 1
raw="$work/raw"
rmeta=run_rados_rados_meta
bmeta=run_rados_blbench_meta
cleanup_all() {
	rados -p "$pool" cleanup --run-name "$rmeta" >/dev/null 2>&1
	"$bin" cleanup --run-name "$bmeta" --target "rados:$pool" >/dev/null 2>&1
}
trap 'cleanup_all; [ -n "${BL_BENCH_RAW:-}" ] && cp "$raw" "$BL_BENCH_RAW"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
: >"$raw"

echo "# load before: $(uptime | sed 's/.*load average/load average/')"
# the clients and the daemons share the CPUs: a busy machine skews both
awk -v n="$(nproc)" '{ if ($1 > n / 2) printf "# WARNING: 1-minute load %s on %d CPUs: other work competes with the cluster\n", $1, n }' /proc/loadavg
echo "# $rounds rounds ($layout), $secs s each, -t $depth, 4 MiB ops, pool $pool, $(ceph --version | cut -d' ' -f1-3)"
echo "# blbench: $bin"
df -h "$(dirname "$CEPH_CONF")" | sed 's/^/# /'

# run_one ROUND CLIENT MODE: one run; appends "round client mode MB/s cpu bytes"
run_one() {
	local round=$1 who=$2 mode=$3 out="$work/out" err="$work/err" st
	local -a cmd
	if [ "$who" = rados ]; then
		cmd=(rados bench -p "$pool" "$secs" "$mode" -t "$depth" --run-name "$rmeta")
	else
		cmd=("$bin" "$secs" "$mode" -t "$depth" --target "rados:$pool" --run-name "$bmeta")
	fi
	[ "$mode" = write ] && cmd+=(--no-cleanup)
	sync
	sleep 2
	# the subshell runs only the client: its children's times are the client's
	( "${cmd[@]}" >"$out" 2>"$err"; st=$?; times >"$work/times"; exit $st )
	st=$?
	local bw n cpu
	bw=$(awk -F: '/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); print $2 }' "$out")
	n=$(awk -F: '/^Total (writes|reads) made/ { gsub(/ /, "", $2); print $2 }' "$out")
	# `times`: line 2 is the children's "XmY.YYYs XmY.YYYs" (user sys)
	cpu=$(awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$work/times")
	if [ "$st" -ne 0 ] || [ -z "$bw" ] || [ -z "$n" ]; then
		echo "# round $round: $who $mode FAILED (status $st)" >&2
		tail -n 5 "$err" >&2
		return 1
	fi
	if grep -q "is not correct" "$err"; then
		echo "# round $round: $who $mode read wrong data" >&2
		return 1
	fi
	echo "$round $who $mode $bw $cpu $((n * opsize))" >>"$raw"
	printf '# round %d  %-7s %-5s %9s MB/s  %6s s CPU  %d ops\n' \
		"$round" "$who" "$mode" "$bw" "$cpu" "$n"
}

clean_one() {	# clean_one CLIENT
	if [ "$1" = rados ]; then
		rados -p "$pool" cleanup --run-name "$rmeta" >/dev/null 2>"$work/err"
	else
		"$bin" cleanup --run-name "$bmeta" --target "rados:$pool" >/dev/null 2>"$work/err"
	fi || { echo "# cleanup of $1 failed:" >&2; cat "$work/err" >&2; return 1; }
}

# After a cleanup the OSD goes on freeing the removed objects' space for
# a few seconds; a write started meanwhile shares the OSD with that work.
# Waiting makes every round start on a settled OSD, whichever client
# cleaned up last.
settle() {
	sync
	sleep "${BL_BENCH_SETTLE:-8}"
}

t0=$SECONDS
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then order="rados blbench"; else order="blbench rados"; fi
	if [ "$layout" = pair ]; then
		for who in $order; do run_one "$r" "$who" write || exit 1; done
		for who in $order; do run_one "$r" "$who" seq || exit 1; done
		for who in $order; do clean_one "$who" || exit 1; done
		settle
	else
		for who in $order; do
			run_one "$r" "$who" write || exit 1
			run_one "$r" "$who" seq || exit 1
			clean_one "$who" || exit 1
			settle
		done
	fi
done
echo "# $rounds rounds in $((SECONDS - t0)) s; load after: $(uptime | sed 's/.*load average: //')"

# ---- the table ------------------------------------------------------------------
# median (min..max) of column C for client W and mode M
stat() {	# stat WHO MODE FIELD   FIELD: bw | cpu (CPU s per GiB)
	awk -v w="$1" -v m="$2" -v f="$3" '
		$2 == w && $3 == m {
			v[n++] = f == "bw" ? $4 : $5 / ($6 / 1073741824)
		}
		END {
			if (!n) { print "- - -"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			med = n % 2 ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
			printf "%g %g %g\n", med, v[0], v[n - 1]
		}' "$raw"
}

echo
echo "| mode | rados bench MB/s | blbench MB/s | blbench / rados | rados bench CPU s/GiB | blbench CPU s/GiB | blbench / rados |"
echo "|---|---|---|---|---|---|---|"
for m in write seq; do
	read -r rb rbl rbh <<<"$(stat rados "$m" bw)"
	read -r bb bbl bbh <<<"$(stat blbench "$m" bw)"
	read -r rc rcl rch <<<"$(stat rados "$m" cpu)"
	read -r bc bcl bch <<<"$(stat blbench "$m" cpu)"
	awk -v m="$m" -v rb="$rb" -v rbl="$rbl" -v rbh="$rbh" -v bb="$bb" \
		-v bbl="$bbl" -v bbh="$bbh" -v rc="$rc" -v rcl="$rcl" \
		-v rch="$rch" -v bc="$bc" -v bcl="$bcl" -v bch="$bch" 'BEGIN {
		printf "| %s | %.0f (%.0f..%.0f) | %.0f (%.0f..%.0f) | %.2f | %.3f (%.3f..%.3f) | %.3f (%.3f..%.3f) | %.2f |\n",
			m, rb, rbl, rbh, bb, bbl, bbh, rb ? bb / rb : 0,
			rc, rcl, rch, bc, bcl, bch, rc ? bc / rc : 0 }'
done
echo
echo "Medians of $rounds interleaved rounds (min..max); MB = 2^20 bytes; CPU = the client process's user+sys per GiB moved."
