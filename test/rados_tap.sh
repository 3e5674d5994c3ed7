# SPDX-License-Identifier: MIT
#
# rados_tap.sh - sourced by the rados: checks (blbench-rados-check.sh,
# check_rados_stall.sh, check_rados_failover.sh): the cluster they need,
# and their TAP lines.
#
# need_cluster: exits 77 (skipped) unless CEPH_CONF and BL_CEPH_POOL are
# set, as `scripts/ceph-cluster.sh run` sets them (make check-ceph).
# ok / not_ok DESCRIPTION: a TAP line, counted in n and failed; not_ok
# also shows the last lines of $tap_log, when the script set one.
# check DESCRIPTION COMMAND...: ok or not_ok as COMMAND succeeds.
# tap_end: the plan and a summary; exits 0 only when every check passed.
# need_bin_and_cluster BLBENCH CLUSTER_SCRIPT: sets bin and cluster, or
# says the usage and exits 2.

need_bin_and_cluster() {
	bin=${1:-}
	cluster=${2:-}
	if [ -z "$bin" ] || [ ! -x "$bin" ] || [ -z "$cluster" ]; then
		echo "usage: $0 BLBENCH CLUSTER_SCRIPT" >&2
		exit 2
	fi
}

need_cluster() {
	if [ -z "${CEPH_CONF:-}" ] || [ -z "${BL_CEPH_POOL:-}" ]; then
		echo "$0: CEPH_CONF and BL_CEPH_POOL are not set (run me under scripts/ceph-cluster.sh run)" >&2
		exit 77
	fi
}

failed=0
n=0
tap_log=""

ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() {
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $*"
	if [ -n "$tap_log" ]; then
		sed 's/^/#   /' "$tap_log" 2>/dev/null | tail -n 8
	fi
}
check() {	# check DESCRIPTION COMMAND...
	d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
tap_end() {
	echo "1..$n"
	if [ "$failed" -ne 0 ]; then
		echo "# $failed of $n checks failed"
		exit 1
	fi
	echo "# all $n checks passed"
	exit 0
}
