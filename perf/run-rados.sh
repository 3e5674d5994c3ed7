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
# then both read back what they wrote (seq), then read it at random (rand),
# in the same order; who goes first flips from round to round; then both
# clean up (rados cleanup / blbench cleanup).  The two keep their metadata
# under different run names (rados bench's and blbench's layouts differ),
# and each reads only its own objects.  Before every run: sync, and 2 s for
# the OSDs to settle.  Then, unless BL_BENCH_JOBS=0, the same for many
# clients: `blbench --jobs 4 -t 8` against four `rados bench -t 8` processes
# started together under their own --run-name (write and seq), in two rows:
# each client's own bandwidth summed (rados bench's four summaries, and
# blbench's per-job JSON array), and all clients' bytes over the longest
# client's time (blbench's own summary; rados bench's ops over the longest
# "Total time run").
#
# What is measured, per run: the summary's "Bandwidth (MB/sec)" (MB = 2^20
# bytes, the same label in both) and "Average Latency(s)", blbench's p99
# latency (rados bench prints no percentile), the client process's CPU
# time (user + sys, from the shell's `times` of a subshell that ran it
# alone), reported per GiB moved (writes or reads made x 4 MiB), and the
# bytes libbufferlist copied in the blbench client while its ops ran (its
# JSON's client_copied_bytes: 0 is the zero-copy path).  The daemons' CPU
# is not counted: both clients drive the same daemons.
#
# The cluster has BL_BENCH_OSDS OSDs (default 3, when
# scripts/ceph-cluster.sh takes --osds; its pool then has size min(N, 3)).
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
#   BL_BENCH_OSDS      OSDs of the cluster started here (default 3)
#   BL_BENCH_JOBS      clients of the many-client comparison (default 4;
#                      0 skips it); BL_BENCH_JOBS_T their -t (default 8)
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
njobs=${BL_BENCH_JOBS:-4}
jdepth=${BL_BENCH_JOBS_T:-8}
command -v python3 >/dev/null || { echo "$0: needs python3 (Ceph's tools do too)" >&2; exit 1; }
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
	osds=${BL_BENCH_OSDS:-3}
	osd_opt=()
	reps=1
	if grep -q -- '--osds' "$cluster"; then
		osd_opt=(--osds "$osds")
		reps=$((osds < 3 ? osds : 3))
	fi
	# two writes at ~1.1 GB/s, each stored reps times over the OSDs,
	# 15% for bluestore, 2 GiB of headroom
	need_g=$(( (2 * secs * 11 / 10) * reps * 115 / 100 + 2 ))
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
	# the OSD files share the disk: each gets its share
	per_osd=$size_g
	[ ${#osd_opt[@]} -gt 0 ] && per_osd=$(( (size_g + osds - 1) / osds + 2 ))
	exec "$cluster" run "${osd_opt[@]}" --osd-size "${per_osd}G" -- "$0" "$bin"
fi

# ---- inside ------------------------------------------------------------------
pool=$BL_CEPH_POOL
layout=${BL_RUN_RADOS_LAYOUT:-pair}
work=$(mktemp -d "${TMPDIR:-/tmp}/run-rados.XXXXXX") || exit 1
raw="$work/raw"
rmeta=run_rados_rados_meta
bmeta=run_rados_blbench_meta
cleanup_all() {
	local k
	rados -p "$pool" cleanup --run-name "$rmeta" >/dev/null 2>&1
	for k in $(seq 1 "$njobs"); do
		rados -p "$pool" cleanup --run-name "${rmeta}_$k" >/dev/null 2>&1
	done
	"$bin" cleanup --run-name "$bmeta" --target "rados:$pool" >/dev/null 2>&1
}
trap 'cleanup_all; [ -n "${BL_BENCH_RAW:-}" ] && cp "$raw" "$BL_BENCH_RAW"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
: >"$raw"

echo "# load before: $(uptime | sed 's/.*load average/load average/')"
# the clients and the daemons share the CPUs: a busy machine skews both
awk -v n="$(nproc)" '{ if ($1 > n / 2) printf "# WARNING: 1-minute load %s on %d CPUs: other work competes with the cluster\n", $1, n }' /proc/loadavg
size=$(ceph osd pool get "$pool" size -f json 2>/dev/null |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["size"])' 2>/dev/null)
echo "# $rounds rounds ($layout), $secs s each, -t $depth, 4 MiB ops, pool $pool (size ${size:-?}, $(ceph osd ls 2>/dev/null | wc -l) OSDs), $(ceph --version | cut -d' ' -f1-3)"
echo "# blbench: $bin"
df -h "$(dirname "$CEPH_CONF")" | sed 's/^/# /'

# rados bench's plain summary: "MB/s ops avg-lat time-run" (- or 0 when
# absent)
parse_rados() {	# parse_rados FILE
	awk -F: '
		/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); bw = $2 }
		/^Total (writes|reads) made/ { gsub(/ /, "", $2); n = $2 }
		/^Average Latency\(s\)/ { gsub(/ /, "", $2); lat = $2 }
		/^Total time run/ { gsub(/ /, "", $2); t = $2 }
		END { if (bw != "" && n != "") print bw, n, (lat == "" ? "-" : lat), (t == "" ? 0 : t) }' "$1"
}
# blbench's JSON (after rados bench's "hints = 1" line): "MB/s ops avg-lat
# p99 copied rates-summed"
parse_blbench() {	# parse_blbench FILE
	python3 - "$1" <<'PY' 2>/dev/null
import json, sys
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
n = d.get("total_writes_made", d.get("total_reads_made"))
# --jobs: the clients' own rates summed too, as four rados bench runs
# are added up
rates = sum(float(j["bandwidth"]) for j in d.get("jobs", [])) or d["bandwidth"]
print(d["bandwidth"], n, d["average_latency"], d["latency_p99"],
      d["client_copied_bytes"], rates)
PY
}

# cpu_of FILE: user + sys seconds of the children, from `times`' second line
cpu_of() {
	awk 'NR == 2 {
		split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"
}

# record ROUND CLIENT MODE MB/S OPS CPU LAT P99 COPIED: one raw line
record() {
	echo "$1 $2 $3 $4 $6 $(($5 * opsize)) $7 $8 $9" >>"$raw"
	printf '# round %d  %-7s %-7s %9s MB/s  %6s s CPU  %d ops  avg lat %s s%s\n' \
		"$1" "$2" "$3" "$4" "$6" "$5" "$7" \
		"$([ "$8" != - ] && echo "  p99 $8 s  copied $9 B")"
}

# run_one ROUND CLIENT MODE: one run of one client
run_one() {
	local round=$1 who=$2 mode=$3 out="$work/out" err="$work/err" st
	local -a cmd
	if [ "$who" = rados ]; then
		cmd=(rados bench -p "$pool" "$secs" "$mode" -t "$depth" --run-name "$rmeta")
	else
		cmd=("$bin" "$secs" "$mode" -t "$depth" --target "rados:$pool"
		     --run-name "$bmeta" --format json)
	fi
	[ "$mode" = write ] && cmd+=(--no-cleanup)
	sync
	sleep 2
	# the subshell runs only the client: its children's times are the client's
	( "${cmd[@]}" >"$out" 2>"$err"; st=$?; times >"$work/times"; exit $st )
	st=$?
	local v
	# rados bench: its own time is not needed for one client
	if [ "$who" = rados ]; then v=$(parse_rados "$out" | cut -d' ' -f1-3)
	else v=$(parse_blbench "$out"); fi
	if [ "$st" -ne 0 ] || [ -z "$v" ]; then
		echo "# round $round: $who $mode FAILED (status $st)" >&2
		tail -n 5 "$err" >&2
		return 1
	fi
	if grep -q "is not correct" "$err" "$out"; then
		echo "# round $round: $who $mode read wrong data" >&2
		return 1
	fi
	local bw n lat p99 cp
	read -r bw n lat p99 cp _ <<<"$v"
	record "$round" "$who" "$mode" "$bw" "$n" "$(cpu_of "$work/times")" \
		"$lat" "${p99:--}" "${cp:--}"
}

# run_many ROUND CLIENT MODE: BL_BENCH_JOBS clients of -t BL_BENCH_JOBS_T:
# blbench --jobs N in one process, or N rados bench processes started
# together (ops summed over the longest client's time, CPU of all of them)
run_many() {
	local round=$1 who=$2 mode=$3 st=0 k v bw=0 n=0 lat=0 p99=- cp=-
	local rates=0
	local -a cmd
	sync
	sleep 2
	if [ "$who" = blbench ]; then
		cmd=("$bin" "$secs" "$mode" --jobs "$njobs" -t "$jdepth"
		     --target "rados:$pool" --run-name "$bmeta" --format json)
		[ "$mode" = write ] && cmd+=(--no-cleanup)
		( "${cmd[@]}" >"$work/out" 2>"$work/err"; st=$?; times >"$work/times"; exit $st )
		st=$?
		v=$(parse_blbench "$work/out")
		[ -n "$v" ] && read -r bw n lat p99 cp rates <<<"$v"
	else
		(
			for k in $(seq 1 "$njobs"); do
				cmd=(rados bench -p "$pool" "$secs" "$mode" -t "$jdepth"
				     --run-name "${rmeta}_$k")
				[ "$mode" = write ] && cmd+=(--no-cleanup)
				"${cmd[@]}" >"$work/out.$k" 2>"$work/err.$k" &
			done
			st=0
			for k in $(seq 1 "$njobs"); do wait -n || st=1; done
			times >"$work/times"
			exit $st
		)
		st=$?
		local lsum=0 tmax=0
		for k in $(seq 1 "$njobs"); do
			v=$(parse_rados "$work/out.$k")
			[ -z "$v" ] && { st=1; break; }
			read -r b1 n1 l1 t1 <<<"$v"
			rates=$(awk -v a="$rates" -v b="$b1" 'BEGIN { print a + b }')
			n=$((n + n1))
			lsum=$(awk -v a="$lsum" -v b="$l1" -v c="$n1" 'BEGIN { print a + b * c }')
			tmax=$(awk -v a="$tmax" -v b="$t1" 'BEGIN { print (b > a ? b : a) }')
		done
		# and the clients' bytes over the longest client's time, as
		# blbench --jobs reports it (fio's aggregate): a sum of rates
		# counts a client that finished early as if it had gone on at
		# its rate while the others still ran
		[ "$n" -gt 0 ] && lat=$(awk -v a="$lsum" -v c="$n" 'BEGIN { print a / c }')
		[ "$n" -gt 0 ] && bw=$(awk -v n="$n" -v s="$opsize" -v t="$tmax" \
			'BEGIN { printf "%.3f", (t > 0 ? n * s / 1048576 / t : 0) }')
		cat "$work"/err.* >"$work/err" 2>/dev/null
	fi
	if [ "$st" -ne 0 ] || [ "$n" -eq 0 ]; then
		echo "# round $round: $who x$njobs $mode FAILED (status $st)" >&2
		tail -n 5 "$work/err" >&2
		return 1
	fi
	if grep -q "is not correct" "$work"/err* "$work"/out*; then
		echo "# round $round: $who x$njobs $mode read wrong data" >&2
		return 1
	fi
	# two rows: each client's own rate summed (what rados bench users
	# add up by hand), and all bytes over the longest client's time
	record "$round" "$who" "${mode}x$njobs" "$rates" "$n" \
		"$(cpu_of "$work/times")" "$lat" "$p99" "$cp"
	record "$round" "$who" "${mode}x${njobs}all" "$bw" "$n" \
		"$(cpu_of "$work/times")" "$lat" "$p99" "$cp"
}

clean_one() {	# clean_one CLIENT [many]
	local k
	if [ "$1" = rados ] && [ "${2:-}" = many ]; then
		for k in $(seq 1 "$njobs"); do
			rados -p "$pool" cleanup --run-name "${rmeta}_$k" >/dev/null 2>"$work/err" || break
		done
	elif [ "$1" = rados ]; then
		rados -p "$pool" cleanup --run-name "$rmeta" >/dev/null 2>"$work/err"
	else
		"$bin" cleanup --run-name "$bmeta" --target "rados:$pool" >/dev/null 2>"$work/err"
	fi || { echo "# cleanup of $1 failed:" >&2; cat "$work/err" >&2; return 1; }
}

# After a cleanup the OSDs go on freeing the removed objects' space for
# a few seconds; a write started meanwhile shares them with that work.
# Waiting makes every round start on settled OSDs, whichever client
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
		for who in $order; do run_one "$r" "$who" rand || exit 1; done
		for who in $order; do clean_one "$who" || exit 1; done
		settle
	else
		for who in $order; do
			run_one "$r" "$who" write || exit 1
			run_one "$r" "$who" seq || exit 1
			run_one "$r" "$who" rand || exit 1
			clean_one "$who" || exit 1
			settle
		done
	fi
	[ "$njobs" -gt 0 ] || continue
	for who in $order; do
		run_many "$r" "$who" write || exit 1
		run_many "$r" "$who" seq || exit 1
		clean_one "$who" many || exit 1
		settle
	done
done
echo "# $rounds rounds in $((SECONDS - t0)) s; load after: $(uptime | sed 's/.*load average: //')"

# ---- the table ------------------------------------------------------------------
# raw: round client mode MB/s cpu-s bytes avg-lat p99 copied
stat() {	# stat WHO MODE FIELD   FIELD: bw | cpu (s per GiB) | lat | copied
	awk -v w="$1" -v m="$2" -v f="$3" '
		$2 == w && $3 == m {
			if (f == "bw") x = $4
			else if (f == "cpu") x = $5 / ($6 / 1073741824)
			else if (f == "lat") x = $7
			else { if ($9 == "-") next; x = $9 }
			v[n++] = x
		}
		END {
			if (!n) { print "- - -"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			med = n % 2 ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
			printf "%g %g %g\n", med, v[0], v[n - 1]
		}' "$raw"
}

modes="write seq rand"
[ "$njobs" -gt 0 ] && modes="$modes writex$njobs seqx$njobs writex${njobs}all seqx${njobs}all"
echo
echo "| mode | rados bench MB/s | blbench MB/s | blbench / rados | rados bench avg lat (s) | blbench avg lat (s) | rados bench CPU s/GiB | blbench CPU s/GiB | blbench / rados | blbench bytes copied (max) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for m in $modes; do
	read -r rb rbl rbh <<<"$(stat rados "$m" bw)"
	read -r bb bbl bbh <<<"$(stat blbench "$m" bw)"
	read -r rl _ _ <<<"$(stat rados "$m" lat)"
	read -r bl _ _ <<<"$(stat blbench "$m" lat)"
	read -r rc rcl rch <<<"$(stat rados "$m" cpu)"
	read -r bc bcl bch <<<"$(stat blbench "$m" cpu)"
	read -r _ _ cpmax <<<"$(stat blbench "$m" copied)"
	label=$m
	case $m in
	*all) label="${m%x*} (${njobs} clients of -t $jdepth, all bytes / longest time)" ;;
	*x*) label="${m%x*} (${njobs} clients of -t $jdepth, rates summed)" ;;
	esac
	awk -v m="$label" -v rb="$rb" -v rbl="$rbl" -v rbh="$rbh" -v bb="$bb" \
		-v bbl="$bbl" -v bbh="$bbh" -v rl="$rl" -v bl="$bl" -v rc="$rc" \
		-v rcl="$rcl" -v rch="$rch" -v bc="$bc" -v bcl="$bcl" \
		-v bch="$bch" -v cp="$cpmax" 'BEGIN {
		printf "| %s | %.0f (%.0f..%.0f) | %.0f (%.0f..%.0f) | %.2f | %.4f | %.4f | %.3f (%.3f..%.3f) | %.3f (%.3f..%.3f) | %.2f | %s |\n",
			m, rb, rbl, rbh, bb, bbl, bbh, rb ? bb / rb : 0, rl, bl,
			rc, rcl, rch, bc, bcl, bch, rc ? bc / rc : 0, cp }'
done
echo
echo "Medians of $rounds interleaved rounds (min..max); MB = 2^20 bytes; CPU = the client processes' user+sys per GiB moved; bytes copied = what libbufferlist copied in the blbench client while its ops ran (the most of any round)."
