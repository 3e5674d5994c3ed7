#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_rados_stall.sh BLBENCH CLUSTER_SCRIPT - blbench's rados:POOL target
# when no OSD answers: a write, a seq and a cleanup must end within
# --op-timeout plus a few seconds when every OSD is stopped (SIGSTOP) or
# killed (SIGTERM), and at once when blbench itself gets a SIGTERM while
# they are stopped.  Every OSD, not one: with replicas a pool goes on
# with one OSD gone (check_rados_failover.sh tests that).  The OSDs are
# signalled by the PIDs the cluster script recorded (DIR/pids) and
# restarted after (CLUSTER_SCRIPT restart-osd DIR ID...); nothing else is
# signalled.
#
# Needs CEPH_CONF and BL_CEPH_POOL as `scripts/ceph-cluster.sh run` sets
# them (make check-ceph).  Exit status 0 only when every check passed, 77
# when there is no cluster.
set -u

. "$(dirname "$0")/rados_tap.sh"
need_bin_and_cluster "$@"
need_cluster
dir=$(dirname "$CEPH_CONF")
[ -r "$dir/pids" ] || { echo "$0: no $dir/pids" >&2; exit 77; }
T=3			# --op-timeout
LIMIT=$((T + 8))	# librados' timeout, our grace, the exit
run=blbench_stall_meta
opts="-t 4 -b 64K --op-timeout $T --run-name $run --target rados:$BL_CEPH_POOL"
work=$(mktemp -d "${TMPDIR:-/tmp}/check_rados_stall.XXXXXX") || exit 1
osds=""		# "osd.N PID" of each OSD signalled
sig=""			# and the signal
tap_log=$work/err

# every OSD the cluster script recorded, "osd.N PID" (its newest PID)
osd_pids() {
	awk '$2 ~ /^osd\./ { p[$2] = $1 } END { for (o in p) print o, p[o] }' \
		"$dir/pids" | sort
}

# The OSDs back: stopped ones continue (stopped together, none can have
# reported another down), killed ones are started again by the cluster
# script (which also ends one still shutting down).
osd_back() {
	[ -n "$osds" ] || return 0
	if [ "$sig" = STOP ]; then
		echo "$osds" | while read -r _ p; do kill -CONT "$p"; done
	else
		# shellcheck disable=SC2046
		"$cluster" restart-osd "$dir" $(echo "$osds" | cut -d' ' -f1) \
			>"$work/restart" 2>&1 ||
			{ echo "# restart-osd failed:"; sed 's/^/#   /' "$work/restart"; }
	fi
	osds=""
}
trap 'osd_back; rm -rf "$work"' EXIT

# Starts blbench ARGS... in the background: $pid, output in $work/out, err.
start() {
	# shellcheck disable=SC2086
	"$bin" $opts "$@" >"$work/out" 2>"$work/err" &
	pid=$!
	t0=$(date +%s)
}

# ends_within SECONDS: blbench ended by then; its status in $status,
# the time it took in $took.  A blbench still there is killed (SIGKILL).
ends_within() {
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $(($1 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	took=$(($(date +%s) - t0))
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		status=137
		return 1
	fi
	wait "$pid"
	status=$?
	return 0
}

stop_osd() {	# stop_osd SIGNAL: every OSD gets it
	osds=$(osd_pids)
	sig=$1
	if [ -z "$osds" ]; then
		echo "# no OSD PID in $dir/pids" >&2
		exit 1
	fi
	echo "$osds" | while read -r o p; do
		kill -0 "$p" 2>/dev/null || { echo "# $o ($p) is gone" >&2; exit 1; }
	done || exit 1
	echo "$osds" | while read -r _ p; do kill -"$sig" "$p"; done
}

# Waits up to SECONDS until every OSD signalled has exited or the
# monitor has them all down: one given SIGTERM tells the monitor, then
# takes its time to exit, and before it told it still served a short seq.
osds_gone() {	# osds_gone SECONDS
	i=0
	while [ $i -lt $(($1 * 10)) ]; do
		# a zombie has exited too
		echo "$osds" | while read -r _ p; do
			st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null)
			[ -n "$st" ] && [ "${st%% *}" != Z ] && exit 1
		done && return 0
		ceph osd stat 2>/dev/null | grep -q ' 0 up' && return 0
		sleep 0.5
		i=$((i + 5))
	done
	echo "# OSDs still up $1 s after SIGTERM" >&2
	return 1
}

# A run left to write, to read and to clean up.
prepare() {
	# shellcheck disable=SC2086
	"$bin" $opts --no-cleanup 1 write >/dev/null 2>"$work/err" ||
		{ not_ok "a 1-second write --no-cleanup for the checks"; return 1; }
}

for s in STOP TERM; do
	# a write in progress, the OSDs stop answering
	start 60 write
	sleep 2
	stop_osd "$s"
	if ends_within $LIMIT && [ "$status" != 0 ] &&
		grep -Eq "op-timeout|timed out" "$work/err"; then
		ok "write, OSDs SIG$s: ends in ${took} s (--op-timeout $T), status $status"
	else
		not_ok "write, OSDs SIG$s: still running or wrong after ${took} s (status $status)"
	fi
	osd_back

	# seq and cleanup wait for the metadata object first
	for mode in "10 seq" cleanup; do
		prepare || continue
		stop_osd "$s"
		[ "$s" = TERM ] && osds_gone 20
		# shellcheck disable=SC2086
		start $mode
		if ends_within $LIMIT && [ "$status" != 0 ]; then
			ok "$mode, OSDs SIG$s: ends in ${took} s, status $status"
		else
			not_ok "$mode, OSDs SIG$s: still running or wrong after ${took} s (status $status)"
		fi
		osd_back
	done
done

# SIGTERM to blbench ends it at once, whatever librados waits for
for mode in "60 write" "10 seq" cleanup; do
	prepare || continue
	# shellcheck disable=SC2086
	[ "$mode" = "60 write" ] && start $mode && sleep 2
	stop_osd STOP
	# shellcheck disable=SC2086
	[ "$mode" != "60 write" ] && start $mode
	sleep 1
	kill -TERM "$pid"
	t0=$(date +%s)
	if ends_within 3 && [ "$status" != 0 ]; then
		ok "$mode, OSDs stopped, SIGTERM to blbench: ends in ${took} s, status $status"
	else
		not_ok "$mode, OSDs stopped, SIGTERM to blbench: still running or wrong after ${took} s (status $status)"
	fi
	osd_back
done

# what the runs left goes, now that the OSDs answer again
# shellcheck disable=SC2086
"$bin" $opts cleanup >/dev/null 2>"$work/err" &&
	"$bin" $opts --prefix benchmark_data_ cleanup >/dev/null 2>>"$work/err" ||
	not_ok "cleanup with the OSDs back"

echo "1..$n"
[ "$failed" = 0 ]
