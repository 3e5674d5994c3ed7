#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_rados_stall.sh BLBENCH CLUSTER_SCRIPT - blbench's rados:POOL target
# when the only OSD stops answering: a write, a seq and a cleanup must end
# within --op-timeout plus a few seconds when the OSD is stopped (SIGSTOP)
# or killed (SIGTERM), and at once when blbench itself gets a SIGTERM
# while the OSD is stopped.  The OSD is signalled by the PID the cluster
# script recorded (DIR/pids) and restarted after (CLUSTER_SCRIPT
# restart-osd DIR); nothing else is signalled.
#
# Needs CEPH_CONF and BL_CEPH_POOL as `scripts/ceph-cluster.sh run` sets
# them (make check-ceph).  Exit status 0 only when every check passed, 77
# when there is no cluster.
set -u

bin=${1:-}
cluster=${2:-}
if [ -z "$bin" ] || [ ! -x "$bin" ] || [ -z "$cluster" ]; then
	echo "usage: $0 BLBENCH CLUSTER_SCRIPT" >&2
	exit 2
fi
if [ -z "${CEPH_CONF:-}" ] || [ -z "${BL_CEPH_POOL:-}" ]; then
	echo "$0: CEPH_CONF and BL_CEPH_POOL are not set (run me under scripts/ceph-cluster.sh run)" >&2
	exit 77
fi
dir=$(dirname "$CEPH_CONF")
[ -r "$dir/pids" ] || { echo "$0: no $dir/pids" >&2; exit 77; }
T=3			# --op-timeout
LIMIT=$((T + 8))	# librados' timeout, our grace, the exit
run=blbench_stall_meta
opts="-t 4 -b 64K --op-timeout $T --run-name $run --target rados:$BL_CEPH_POOL"
work=$(mktemp -d "${TMPDIR:-/tmp}/check_rados_stall.XXXXXX") || exit 1
osd=""
failed=0
n=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
	sed 's/^/#   /' "$work/err" 2>/dev/null | tail -n 8
}

# the OSD's PID: the last osd.N the cluster script recorded
osd_pid() { awk '$2 ~ /^osd\./ { p = $1 } END { print p }' "$dir/pids"; }

# The OSD back: a stopped one continues (one OSD has no peer to report it
# down), a killed one is started again by the cluster script.
osd_back() {
	if [ -n "$osd" ]; then
		if kill -0 "$osd" 2>/dev/null; then
			kill -CONT "$osd"
		else
			"$cluster" restart-osd "$dir" >"$work/restart" 2>&1 ||
				{ echo "# restart-osd failed:"; sed 's/^/#   /' "$work/restart"; }
		fi
		osd=""
	fi
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

stop_osd() {	# stop_osd SIGNAL
	osd=$(osd_pid)
	if [ -z "$osd" ] || ! kill -0 "$osd" 2>/dev/null; then
		echo "# no OSD PID in $dir/pids" >&2
		exit 1
	fi
	kill -"$1" "$osd"
}

# A run left to write, to read and to clean up.
prepare() {
	# shellcheck disable=SC2086
	"$bin" $opts --no-cleanup 1 write >/dev/null 2>"$work/err" ||
		{ not_ok "a 1-second write --no-cleanup for the checks"; return 1; }
}

for sig in STOP TERM; do
	# a write in progress, the OSD stops answering
	start 60 write
	sleep 2
	stop_osd "$sig"
	if ends_within $LIMIT && [ "$status" != 0 ] &&
		grep -Eq "op-timeout|timed out" "$work/err"; then
		ok "write, OSD SIG$sig: ends in ${took} s (--op-timeout $T), status $status"
	else
		not_ok "write, OSD SIG$sig: still running or wrong after ${took} s (status $status)"
	fi
	osd_back

	# seq and cleanup wait for the metadata object first
	for mode in "10 seq" cleanup; do
		prepare || continue
		stop_osd "$sig"
		# shellcheck disable=SC2086
		start $mode
		if ends_within $LIMIT && [ "$status" != 0 ]; then
			ok "$mode, OSD SIG$sig: ends in ${took} s, status $status"
		else
			not_ok "$mode, OSD SIG$sig: still running or wrong after ${took} s (status $status)"
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
		ok "$mode, OSD stopped, SIGTERM to blbench: ends in ${took} s, status $status"
	else
		not_ok "$mode, OSD stopped, SIGTERM to blbench: still running or wrong after ${took} s (status $status)"
	fi
	osd_back
done

# what the runs left goes, now that the OSD answers again
# shellcheck disable=SC2086
"$bin" $opts cleanup >/dev/null 2>"$work/err" &&
	"$bin" $opts --prefix benchmark_data_ cleanup >/dev/null 2>>"$work/err" ||
	not_ok "cleanup with the OSD back"

echo "1..$n"
[ "$failed" = 0 ]
