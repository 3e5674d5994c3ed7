#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_rados_failover.sh BLBENCH CLUSTER_SCRIPT - blbench's rados:POOL
# target through the failures a replicated cluster has: one OSD of three
# stopped (SIGSTOP, a hung OSD) while a write runs and started again later
# (the write stalls until the OSD's peers have it marked down, goes on
# degraded, ends with status 0 and its latencies and per-second table show
# the stall; a seq --crc afterwards reads every op it made, none lost,
# none twice),
# and two of three stopped (SIGSTOP: the pool falls below min_size, its
# I/O blocks), where --op-timeout must fail the run naming the op.  OSDs
# are signalled only by the PIDs the cluster script recorded (DIR/pids)
# and started again by CLUSTER_SCRIPT restart-osd DIR.
#
# Needs CEPH_CONF and BL_CEPH_POOL as `scripts/ceph-cluster.sh run` sets
# them (make check-ceph), three OSDs up and a pool of size 3 (min_size
# 2): exit 77 (skipped) otherwise, as with no cluster.  Exit status 0
# only when every check passed.
set -u

. "$(dirname "$0")/rados_tap.sh"
need_bin_and_cluster "$@"
need_cluster
pool=$BL_CEPH_POOL
dir=$(dirname "$CEPH_CONF")
[ -r "$dir/pids" ] || { echo "$0: no $dir/pids" >&2; exit 77; }
up=$(ceph osd stat 2>/dev/null | sed -n 's/.* \([0-9]*\) up.*/\1/p')
size=$(ceph osd pool get "$pool" size 2>/dev/null | awk '{ print $2 }')
if [ "${up:-0}" -lt 3 ] || [ "${size:-0}" -lt 3 ]; then
	echo "$0: needs 3 OSDs up and a pool of size 3 ($up OSDs up, size ${size:-?}): skipped" >&2
	exit 77
fi
run=blbench_failover_meta
opts="-t 8 -b 1M --crc --run-name $run --target rados:$pool"
work=$(mktemp -d "${TMPDIR:-/tmp}/check_rados_failover.XXXXXX") || exit 1
stopped=""
tap_log=$work/err
field() {	# a summary value of the last run
	awk -F: -v k="$1" '$1 ~ "^" k { gsub(/ /, "", $2); v = $2 } END { print v }' "$work/out"
}

# "osd.N PID" of each OSD the cluster script started (its newest PID)
osd_list() {
	awk '$2 ~ /^osd\./ { p[$2] = $1 } END { for (o in p) print o, p[o] }' \
		"$dir/pids" | sort
}
osd_pids() { osd_list | awk '{ print $2 }'; }

healthy() {	# healthy SECONDS: the cluster says HEALTH_OK within them
	i=0
	while [ $i -lt "$1" ]; do
		ceph health 2>/dev/null | grep -q HEALTH_OK && return 0
		sleep 1
		i=$((i + 1))
	done
	return 1
}

back() {	# every OSD signalled here continues
	for p in $stopped; do kill -CONT "$p" 2>/dev/null; done
	stopped=""
}
# the heartbeat settings go too: what runs next in the cluster should not
# see OSDs marked down after a 4-second hiccup
trap 'back; "$bin" $opts cleanup >/dev/null 2>&1; rm -rf "$work"
	ceph config rm global osd_heartbeat_grace >/dev/null 2>&1
	ceph config rm global osd_heartbeat_interval >/dev/null 2>&1' EXIT

# A failed OSD is reported down after the heartbeat grace (20 s by
# default): a few seconds here, so that a test of a failover is short.
ceph config set global osd_heartbeat_grace 4 >/dev/null 2>&1
ceph config set global osd_heartbeat_interval 1 >/dev/null 2>&1

# ---- one OSD stopped and started again during a write -------------------------
# Stopped, not killed: a killed OSD is marked down at once (SIGTERM tells
# the monitor, a SIGKILLed one's peers find its port closed), and the
# write might not stall long enough to show.  A hung one is noticed only
# after the heartbeat grace, and every write waits for it meanwhile (each
# PG of a size-3 pool on three OSDs has it), so seconds pass with none
# finished: the spike to look for.
# shellcheck disable=SC2086
"$bin" $opts --op-timeout 60 25 write --no-cleanup >"$work/out" 2>"$work/err" &
pid=$!
sleep 4
set -- $(osd_list | tail -n 1)
kill -STOP "$2" && stopped="$2"
sleep 10
# by its ID: the newest osd.N line of DIR/pids need not be the victim's
"$cluster" restart-osd "$dir" "$1" >"$work/restart" 2>&1 &
rpid=$!
wait "$pid"
st=$?
check "write goes on through an OSD stopped and restarted, status 0 ($st)" test "$st" -eq 0
writes=$(field "Total writes made")
check "write: ops made ($writes)" test "${writes:-0}" -gt 0
maxlat=$(field "Max latency\\(s\\)")
check "write: the stall shows in its latencies (max $maxlat s >= 1)" \
	awk -v m="${maxlat:-0}" 'BEGIN { exit !(m >= 1) }'
# a row's last latency is that of the op that finished last in that
# second, not the slowest: the stall shows as seconds in which none
# finished ('-'), or as a slow last one
d="write: the per-second table has a row with no op finished or a last"
check "$d latency of a second or more" \
	awk 'NF == 8 && $1 ~ /^[0-9]+$/ && $1 > 0 &&
		($7 == "-" || $7 + 0 >= 1) { f = 1 } END { exit !f }' "$work/out"
wait "$rpid"
st=$?
stopped=""	# restart-osd continued and ended it
check "restart-osd brought the stopped OSD back ($st)" test "$st" -eq 0
[ "$st" -eq 0 ] || sed 's/^/#   /' "$work/restart"
check "the cluster is healthy again" healthy 60
# shellcheck disable=SC2086
"$bin" $opts 0 seq >"$work/out" 2>"$work/err"
st=$?
check "seq --crc after the failover exits 0 ($st)" test "$st" -eq 0
reads=$(field "Total reads made")
check "seq reads every op the write made, once ($reads of $writes)" test "$reads" = "$writes"
check "seq: every op verified (no 'is not correct')" \
	sh -c '! grep -q "is not correct" "$1"' sh "$work/err"
# shellcheck disable=SC2086
"$bin" $opts cleanup >/dev/null 2>&1

# ---- two of three stopped: below min_size, the I/O waits -----------------------
T=3
# shellcheck disable=SC2086
"$bin" $opts --op-timeout $T 30 write >"$work/out" 2>"$work/err" &
pid=$!
sleep 3
for p in $(osd_pids | tail -n 2); do
	kill -STOP "$p" && stopped="$stopped $p"
done
t0=$(date +%s)
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
took=$(($(date +%s) - t0))
if kill -0 "$pid" 2>/dev/null; then
	kill -KILL "$pid"
	wait "$pid"
	not_ok "write with 2 of 3 OSDs stopped ends (still running after 30 s)"
else
	wait "$pid"
	st=$?
	check "write with 2 of 3 OSDs stopped fails (status $st) within --op-timeout and a grace ($took s <= $((T + 20)))" \
		test "$st" -eq 1 -a "$took" -le $((T + 20))
	# whichever sees it first: blbench's own check of the op's age
	# (once a second) or librados, which --op-timeout also bounds and
	# which ends the op with ETIMEDOUT
	why="no answer from rados:$pool within $T s|Connection timed out"
	check "... naming the op that got no answer" \
		grep -Eq "writing benchmark_data_.*_object[0-9]+: ($why)" \
			"$work/err"
fi
back
check "the stopped OSDs continue and the cluster is healthy again" healthy 120

tap_end
