#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ceph-cluster.sh - a throw-away one-node Ceph cluster for tests and benchmarks.
#
#   ceph-cluster.sh run [OPTIONS] -- COMMAND ARGS...
#   ceph-cluster.sh start DIR [OPTIONS]
#   ceph-cluster.sh stop DIR
#   ceph-cluster.sh restart-osd DIR [ID...]
#
# run: starts one mon, one mgr and N OSDs (bluestore, each on its own
# sparse file) in a new directory under ${TMPDIR:-/tmp}, on 127.0.0.1
# only, creates the pools, waits until every PG is active+clean and the
# cluster reports HEALTH_OK, exports CEPH_CONF=DIR/ceph.conf,
# BL_CEPH_POOL=POOL and (N >= 3) BL_CEPH_EC_POOL=POOL-ec, runs COMMAND,
# then stops exactly the daemons it started and removes the directory
# (also on failure, ^C or SIGTERM) and exits with COMMAND's status.
#
# The pools: POOL is replicated, of size min(N, 3) (min_size 2 at size 3,
# else 1).  With N >= 3 also POOL-ec, erasure-coded (profile k=2 m=1,
# allow_ec_overwrites on, as the bridge's partial writes need).  Every
# OSD is on this one host: CRUSH places replicas and shards on distinct
# OSDs (failure domain osd), and a peer OSD's failure report counts per
# OSD, not per host, so that a killed OSD is marked down.  Each OSD's
# osd_memory_target is 1 GiB, so three fit in a few GiB of memory.
#
# start DIR / stop DIR: the same, in two steps, for interactive use; start
# prints the exports, stop ends the daemons recorded in DIR/pids and
# removes DIR (only a directory start made: it carries a marker file).
#
# restart-osd DIR [ID...]: for tests that stop (SIGSTOP) or kill OSDs by
# the PIDs DIR/pids records: for each OSD ID (N or osd.N; default: the
# last OSD recorded) ends what is left of its newest process, starts it
# again on its store and records the new PID in DIR/pids (stop and run
# end it too); then waits until each is active and the cluster is
# healthy again.  Under run, DIR is the directory of $CEPH_CONF.
#
# OPTIONS
#   --osds N         OSDs to start, 1..9 (default 1)
#   --pool NAME      the replicated pool to create (blbench)
#   --osd-size SIZE  each OSD's sparse block file, with K/M/G/T, at least
#                    4G (default: 20G or 40% of the free space, whichever
#                    is smaller, shared by the N OSDs, at least 4G each)
#   --port PORT      the monitor's msgr2 port; msgr1 is PORT+1 and the other
#                    daemons bind in PORT+2..PORT+199 (default: the first of
#                    40789, 41789, ... with nothing listening on it, so two
#                    clusters on one machine do not meet)
#
# Exit status: COMMAND's (run), 0 (start, stop, restart-osd), 1 when the
# cluster did not come up (or an OSD not again), 2 on bad usage, 77 when
# Ceph's daemons are not installed and cannot be, or the OSD files do not
# fit in the free space (4 GiB each, and 1 GiB left over; a test harness
# counts 77 as skipped).
#
# Only daemons started here are ever signalled: by the PID recorded when
# they started, checked against /proc before each signal (SIGTERM, then
# SIGKILL after BL_CEPH_STOP_TIMEOUT seconds, default 20); a zombie counts
# as gone.  Nothing outside the directory is touched: every path Ceph would
# put in /var/lib/ceph, /var/log/ceph, /run/ceph or /etc/ceph is set in the
# generated ceph.conf.
set -u

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
GIB=$((1024 * 1024 * 1024))
MIN_FREE=$((4 * GIB))
MARKER=.ceph-cluster.sh

die() {		# die STATUS MESSAGE...
	local st=$1
	shift
	echo "$prog: $*" >&2
	exit "$st"
}

usage() {
	cat >&2 <<EOF
usage: $prog run [--osds N] [--pool NAME] [--osd-size SIZE] [--port PORT] -- COMMAND ARGS...
       $prog start DIR [--osds N] [--pool NAME] [--osd-size SIZE] [--port PORT]
       $prog stop DIR
       $prog restart-osd DIR [ID...]
EOF
	exit 2
}

# SIZE with an optional K/M/G/T suffix (powers of 1024), in bytes
parse_size() {
	local s=$1 n mul=1
	case "$s" in
	*[kK]) mul=1024 ;;
	*[mM]) mul=$((1024 * 1024)) ;;
	*[gG]) mul=$GIB ;;
	*[tT]) mul=$((GIB * 1024)) ;;
	esac
	n=${s%[kKmMgGtT]}
	case "$n" in
	'' | *[!0-9]*) return 1 ;;
	esac
	echo $((n * mul))
}

# ---- the daemons' PIDs ---------------------------------------------------------

dir=""		# the cluster's directory
pids=()		# daemons started by this process
names=()	# and their names (mon.a, mgr.x, osd.0)

# Is PID still one of our daemons?  Gone, a zombie, or reused by another
# program (its command line no longer names our ceph.conf) all count as no.
alive() {
	local pid=$1 state
	[ -r "/proc/$pid/stat" ] || return 1
	state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] || return 1
	tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir/ceph.conf"
}

# Stops PIDs: SIGTERM, wait, then SIGKILL for those still there.
stop_pids() {
	local timeout=${BL_CEPH_STOP_TIMEOUT:-20} pid left t0=$SECONDS
	for pid in "$@"; do
		alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	while :; do
		left=""
		for pid in "$@"; do
			alive "$pid" && left="$left $pid"
		done
		[ -z "$left" ] && break
		if [ $((SECONDS - t0)) -ge "$timeout" ]; then
			echo "$prog: still running after ${timeout} s, killing:$left" >&2
			for pid in $left; do
				alive "$pid" && kill -KILL "$pid" 2>/dev/null
			done
			sleep 0.5
			break
		fi
		sleep 0.2
	done
	# ours (run mode): collect them so no zombie outlives us
	for pid in "$@"; do
		wait "$pid" 2>/dev/null
	done
	return 0
}

# Started daemons go to DIR/pids at once, so a stop from another shell (or
# the trap) knows them even if start fails half-way.
spawn() {	# spawn NAME COMMAND ARGS...
	local name=$1
	shift
	# setsid: a ^C at the terminal reaches the script (which stops the
	# daemons in order), not the daemons directly
	setsid "$@" </dev/null >>"$dir/log/$name.out" 2>&1 &
	pids+=($!)
	names+=("$name")
	echo "$! $name" >>"$dir/pids"
}

# The OSDs first: one whose monitor is already gone waits 5 s
# (osd_mon_shutdown_timeout) before it exits; then the mgr and the mon.
stop_all() {
	local i osds=() rest=()
	for i in "${!pids[@]}"; do
		case "${names[$i]}" in
		osd.*) osds+=("${pids[$i]}") ;;
		*) rest+=("${pids[$i]}") ;;
		esac
	done
	stop_pids "${osds[@]}"
	stop_pids "${rest[@]}"
}

cleanup_dir() {
	# only what start made: the marker says so
	[ -n "$dir" ] && [ -f "$dir/$MARKER" ] && rm -rf "$dir"
}

# ---- start ------------------------------------------------------------------

need_packages() {
	local c missing=""
	for c in ceph-mon ceph-mgr ceph-osd ceph ceph-authtool monmaptool rados; do
		command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
	done
	[ -z "$missing" ] && return 0
	# the one package list: install-deps.sh --ceph, if we may install
	if [ -x "$here/install-deps.sh" ] &&
		{ [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then
		echo "$prog: missing$missing; running install-deps.sh --ceph" >&2
		"$here/install-deps.sh" --ceph >&2 || true
		missing=""
		for c in ceph-mon ceph-mgr ceph-osd ceph ceph-authtool monmaptool rados; do
			command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
		done
		[ -z "$missing" ] && return 0
	fi
	die 77 "Ceph is not installed (missing:$missing; scripts/install-deps.sh --ceph installs it)"
}

port_busy() {
	ss -Htln "sport = :$1" 2>/dev/null | grep -q . && return 0
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

pick_port() {
	local p
	for p in 40789 41789 42789 43789 44789 45789 46789 47789; do
		if ! port_busy "$p" && ! port_busy $((p + 1)); then
			echo "$p"
			return 0
		fi
	done
	return 1
}

write_conf() {	# write_conf FSID PORT OSD_SIZE OSDS
	local fsid=$1 port=$2 size=$3 n=$4 reps min
	reps=$((n < 3 ? n : 3))
	min=$((reps == 3 ? 2 : 1))
	cat >"$dir/ceph.conf" <<EOF
# generated by $prog: a throw-away cluster in $dir
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]
public_addr = 127.0.0.1
public_network = 127.0.0.0/8
cluster_network = 127.0.0.0/8
ms_bind_port_min = $((port + 2))
ms_bind_port_max = $((port + 199))
ms_bind_ipv6 = false

# everything stays in this directory
keyring = $dir/keyring
mon_data = $dir/\$name
mgr_data = $dir/\$name
osd_data = $dir/\$name
run_dir = $dir/run
crash_dir = $dir/crash
log_file = $dir/log/\$name.log
mon_cluster_log_file = $dir/log/cluster.log
admin_socket = $dir/run/\$name.\$pid.asok
pid_file = $dir/run/\$name.pid

# $n OSDs on one host: replicas on distinct OSDs, not hosts, and a
# failure is reported by OSDs, not by hosts (all are one, which could
# never make the 2 reporters the monitor wants)
osd_pool_default_size = $reps
osd_pool_default_min_size = $min
osd_crush_chooseleaf_type = 0
mon_osd_reporter_subtree_level = osd
mon_allow_pool_size_one = true
osd_pool_default_pg_autoscale_mode = off
mon_warn_on_pool_no_redundancy = false
auth_allow_insecure_global_id_reclaim = false
# the host disk may sit near its own warning levels: not the cluster's concern
mon_data_avail_warn = 2
mon_data_avail_crit = 1

# a quicker start
mgr_stats_period = 1
mon_mgr_digest_period = 1
bdev_aio_poll_ms = 20
bluestore_fsck_on_mkfs = false

[osd]
# the default 4 GiB each is more than a test machine has for three
osd_memory_target = 1073741824
# an OSD back after a failure catches up at once: the sparse files look
# like disks, whose default is a 0.1 s sleep between recovery ops, 3 at a
# time, so a test waiting for HEALTH_OK after a restart waited minutes
osd_recovery_sleep_hdd = 0
osd_recovery_max_active_hdd = 16
osd_objectstore = bluestore
bluestore_block_create = true
bluestore_block_size = $size
EOF
}

# Waits for HEALTH_OK with every PG active+clean and UP OSDs up (ceph
# status, JSON; the plain `ceph -s` lags a second or two behind the PG
# states).
wait_ready() {	# wait_ready TIMEOUT UP
	local limit=$1 want=$2 t0=$SECONDS st
	while [ $((SECONDS - t0)) -lt "$limit" ]; do
		st=$(timeout 20 ceph -c "$dir/ceph.conf" status -f json 2>/dev/null |
			/usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
pg = s.get("pgmap", {})
n = pg.get("num_pgs", 0)
clean = sum(x["count"] for x in pg.get("pgs_by_state", [])
            if x["state_name"] == "active+clean")
up = s.get("osdmap", {}).get("num_up_osds", 0)
print("%s %d %d %d" % (s["health"]["status"], n, clean, up))
' 2>/dev/null)
		set -- $st
		if [ "${1:-}" = HEALTH_OK ] && [ "${2:-0}" -gt 0 ] &&
			[ "${2:-0}" = "${3:-}" ] && [ "${4:-0}" -ge "$want" ]; then
			return 0
		fi
		sleep 0.5
	done
	echo "$prog: the cluster did not become healthy in ${limit} s: ${st:-no answer}" >&2
	timeout 20 ceph -c "$dir/ceph.conf" health detail >&2 2>/dev/null
	return 1
}

# new_osd: registers one OSD with its own key and makes its store on its
# sparse file in the background (mkfs is most of an OSD's start: N of them
# overlap); appends its ID to $ids and the mkfs's PID to $mkfs.
new_osd() {
	local c="$dir/ceph.conf" uuid secret id
	uuid=$(cat /proc/sys/kernel/random/uuid)
	secret=$(ceph-authtool --gen-print-key) || return 1
	printf '{"cephx_secret": "%s"}\n' "$secret" >"$dir/osd-new.json"
	id=$(timeout 60 ceph -c "$c" osd new "$uuid" -i "$dir/osd-new.json" 2>>"$dir/log/mkfs.out") ||
		{ echo "$prog: ceph osd new failed:" >&2;
		  tail -5 "$dir/log/mkfs.out" >&2; return 1; }
	rm -f "$dir/osd-new.json"
	ceph-authtool "$dir/keyring" --add-key "$secret" -n "osd.$id" >/dev/null &&
	mkdir -p "$dir/osd.$id" || return 1
	ceph-osd -c "$c" -i "$id" --mkfs --osd-uuid "$uuid" \
		>>"$dir/log/mkfs-osd.$id.out" 2>&1 &
	mkfs+=($!)
	ids+=("$id")
}

# start_cluster POOL OSD_SIZE PORT OSDS: sets $dir's cluster up; 0 or 1.
start_cluster() {
	local pool=$1 size=$2 port=$3 n=$4 fsid id i bad t0=$SECONDS
	local c="$dir/ceph.conf" ids=() mkfs=()

	fsid=$(cat /proc/sys/kernel/random/uuid)
	mkdir -p "$dir/log" "$dir/run" "$dir/crash" "$dir/mon.a" "$dir/mgr.x" ||
		return 1
	write_conf "$fsid" "$port" "$size" "$n"

	# keys: the monitors', the admin's and the mgr's; mkfs imports them
	ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. \
		--cap mon 'allow *' >/dev/null &&
	ceph-authtool "$dir/keyring" --gen-key -n client.admin \
		--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' \
		--cap mds 'allow *' >/dev/null &&
	ceph-authtool "$dir/keyring" --gen-key -n mgr.x \
		--cap mon 'allow profile mgr' --cap osd 'allow *' \
		--cap mds 'allow *' >/dev/null &&
	monmaptool --create --fsid "$fsid" \
		--addv a "[v2:127.0.0.1:$port,v1:127.0.0.1:$((port + 1))]" \
		"$dir/monmap" >/dev/null &&
	ceph-mon -c "$c" --mkfs -i a --monmap "$dir/monmap" \
		--keyring "$dir/keyring" >>"$dir/log/mkfs.out" 2>&1 ||
		{ echo "$prog: mon mkfs failed (see below)" >&2;
		  tail -5 "$dir/log/mkfs.out" >&2; return 1; }
	spawn mon.a ceph-mon -c "$c" -i a -f
	spawn mgr.x ceph-mgr -c "$c" -i x -f

	# the OSDs: registered one by one (the IDs come in order), their
	# stores made side by side
	for i in $(seq 1 "$n"); do
		new_osd || { wait "${mkfs[@]}" 2>/dev/null; return 1; }
	done
	bad=""
	for i in "${!mkfs[@]}"; do
		wait "${mkfs[$i]}" || bad="$bad ${ids[$i]}"
	done
	if [ -n "$bad" ]; then
		echo "$prog: osd mkfs failed:" >&2
		for id in $bad; do tail -5 "$dir/log/mkfs-osd.$id.out" >&2; done
		return 1
	fi
	for id in "${ids[@]}"; do
		spawn "osd.$id" ceph-osd -c "$c" -i "$id" -f
	done

	# the replicated pool takes its size from osd_pool_default_size
	timeout 60 ceph -c "$c" osd pool create "$pool" 32 32 >/dev/null 2>&1 &&
	timeout 60 ceph -c "$c" osd pool application enable "$pool" rados \
		>/dev/null 2>&1 ||
		{ echo "$prog: cannot create pool $pool" >&2; return 1; }
	if [ "$n" -ge 3 ]; then
		timeout 60 ceph -c "$c" osd erasure-code-profile set bl-k2m1 \
			k=2 m=1 crush-failure-domain=osd >/dev/null 2>&1 &&
		timeout 60 ceph -c "$c" osd pool create "$pool-ec" 16 16 \
			erasure bl-k2m1 >/dev/null 2>&1 &&
		timeout 60 ceph -c "$c" osd pool set "$pool-ec" \
			allow_ec_overwrites true >/dev/null 2>&1 &&
		timeout 60 ceph -c "$c" osd pool application enable "$pool-ec" \
			rados >/dev/null 2>&1 ||
			{ echo "$prog: cannot create pool $pool-ec" >&2; return 1; }
	fi
	wait_ready 180 "$n" || return 1
	local pools=$pool
	[ "$n" -ge 3 ] && pools="$pool and $pool-ec"
	echo "$prog: cluster up in $((SECONDS - t0)) s: $dir" \
		"(mon 127.0.0.1:$port, $n OSD(s), pool $pools," \
		"OSD files $((size / 1048576)) MiB each)" >&2
	return 0
}

# Option parsing shared by run and start: sets osds, pool, size, port.
parse_opts() {
	osds=1
	pool=blbench
	size=""
	port=""
	rest=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--osds) [ $# -ge 2 ] || usage; osds=$2; shift 2 ;;
		--osds=*) osds=${1#*=}; shift ;;
		--pool) [ $# -ge 2 ] || usage; pool=$2; shift 2 ;;
		--pool=*) pool=${1#*=}; shift ;;
		--osd-size) [ $# -ge 2 ] || usage; size=$2; shift 2 ;;
		--osd-size=*) size=${1#*=}; shift ;;
		--port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
		--port=*) port=${1#*=}; shift ;;
		--) shift; rest=("$@"); return 0 ;;
		*) usage ;;
		esac
	done
}

# Checks the options against the machine; sets size (bytes, per OSD) and
# port.
settle_opts() {	# settle_opts DIR_FOR_SPACE
	local free
	case "$osds" in
	[1-9]) ;;
	*) die 2 "--osds wants 1..9, not '$osds'" ;;
	esac
	case "$pool" in
	'' | *[!A-Za-z0-9_.-]*) die 2 "--pool wants a plain name, not '$pool'" ;;
	esac
	free=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
	free=$((${free:-0} * 1024))
	if [ "${free:-0}" -lt $((osds * MIN_FREE)) ]; then
		die 77 "only $((${free:-0} / 1048576)) MiB free in $1;" \
			"$osds OSD(s) need at least $((osds * 4)) GiB"
	fi
	if [ -n "$size" ]; then
		size=$(parse_size "$size") || die 2 "--osd-size wants a size like 10G"
		[ "$size" -ge "$MIN_FREE" ] || die 2 "--osd-size: at least 4G"
		[ $((size * osds)) -le $((free - GIB)) ] ||
			die 77 "--osd-size $((size / 1048576)) MiB x $osds does" \
			"not fit in the $((free / 1048576)) MiB free in $1"
	else
		size=$((free * 40 / 100))
		[ "$size" -gt $((20 * GIB)) ] && size=$((20 * GIB))
		size=$((size / osds))
		[ "$size" -lt "$MIN_FREE" ] && size=$MIN_FREE
	fi
	size=$((size / 1048576 * 1048576))
	if [ -n "$port" ]; then
		case "$port" in '' | *[!0-9]*) die 2 "--port wants a number" ;; esac
		[ "$port" -ge 1024 ] && [ "$port" -le 65000 ] ||
			die 2 "--port wants 1024..65000"
		port_busy "$port" && die 1 "port $port is in use"
	else
		port=$(pick_port) || die 1 "no free port among 40789, 41789, ... 47789"
	fi
}

on_signal() {
	trap - INT TERM
	exit "$1"
}

cmd_run() {
	local status t0
	parse_opts "$@"
	[ ${#rest[@]} -gt 0 ] || usage
	need_packages
	local base=${TMPDIR:-/tmp}
	settle_opts "$base"
	dir=$(mktemp -d "$base/ceph-cluster.XXXXXX") || die 1 "cannot make a directory in $base"
	: >"$dir/$MARKER"
	: >"$dir/pids"
	# load_pids: COMMAND may have restarted the OSD (restart-osd)
	trap 'load_pids; stop_all; cleanup_dir' EXIT
	trap 'on_signal 130' INT
	trap 'on_signal 143' TERM
	t0=$SECONDS
	if ! start_cluster "$pool" "$size" "$port" "$osds"; then
		echo "$prog: start failed after $((SECONDS - t0)) s; last log lines:" >&2
		tail -n 3 "$dir"/log/*.log 2>/dev/null >&2
		exit 1
	fi
	export CEPH_CONF="$dir/ceph.conf" BL_CEPH_POOL="$pool"
	[ "$osds" -ge 3 ] && export BL_CEPH_EC_POOL="$pool-ec"
	# in the background so that a signal runs the trap at once (bash
	# defers traps while a foreground command runs); <&0 keeps stdin
	"${rest[@]}" <&0 &
	child=$!
	trap 'kill -INT $child 2>/dev/null; wait $child; on_signal 130' INT
	trap 'kill -TERM $child 2>/dev/null; wait $child; on_signal 143' TERM
	status=0
	wait "$child" || status=$?
	child=""
	exit "$status"
}

cmd_start() {
	[ $# -ge 1 ] || usage
	dir=$1
	shift
	parse_opts "$@"
	[ ${#rest[@]} -eq 0 ] || usage
	need_packages
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
		die 2 "$dir exists and is not empty"
	fi
	mkdir -p "$dir" || die 1 "cannot make $dir"
	dir=$(cd "$dir" && pwd)
	settle_opts "$dir"
	: >"$dir/$MARKER"
	: >"$dir/pids"
	# a failed start leaves nothing behind
	trap 'stop_all; cleanup_dir' EXIT
	trap 'on_signal 130' INT
	trap 'on_signal 143' TERM
	start_cluster "$pool" "$size" "$port" "$osds" || exit 1
	trap - EXIT INT TERM
	if [ "$osds" -ge 3 ]; then
		echo "export CEPH_CONF=$dir/ceph.conf BL_CEPH_POOL=$pool" \
			"BL_CEPH_EC_POOL=$pool-ec"
	else
		echo "export CEPH_CONF=$dir/ceph.conf BL_CEPH_POOL=$pool"
	fi
	echo "# stop with: $0 stop $dir" >&2
}

# Every daemon DIR/pids records, restarted ones included, into pids/names.
load_pids() {
	local pid name
	pids=()
	names=()
	while read -r pid name; do
		pids+=("$pid")
		names+=("$name")
	done <"$dir/pids"
}

# DIR of a running cluster, checked; sets dir.
cluster_dir() {
	dir=$(cd "$1" 2>/dev/null && pwd) || die 1 "no such directory: $1"
	[ -f "$dir/$MARKER" ] || die 1 "$dir was not made by $prog"
}

cmd_stop() {
	[ $# -eq 1 ] || usage
	cluster_dir "$1"
	load_pids
	# daemons of another shell: not ours to wait for, alive() tells
	stop_all 2>/dev/null
	cleanup_dir
}

# OSDs again, after a test stopped (SIGSTOP) or killed them by the PIDs
# DIR/pids records: a stopped one is continued and stopped, then a new
# one starts on the same store (recorded in DIR/pids, so that stop and
# run's exit end it).  Each must answer on its admin socket (named by
# the new PID) as active before the cluster is waited for: a monitor that
# never saw the old one go (SIGKILL) can report HEALTH_OK before the new
# one has booted.
cmd_restart_osd() {
	local i id pid want="" all=() new=() t0
	[ $# -ge 1 ] || usage
	cluster_dir "$1"
	shift
	load_pids
	for i in "${!names[@]}"; do
		case "${names[$i]}" in
		osd.*)
			case " ${all[*]} " in
			*" ${names[$i]#osd.} "*) ;;
			*) all+=("${names[$i]#osd.}") ;;
			esac
			;;
		esac
	done
	[ ${#all[@]} -gt 0 ] || die 1 "$dir/pids names no OSD"
	if [ $# -eq 0 ]; then
		for i in "${!names[@]}"; do
			case "${names[$i]}" in osd.*) want=${names[$i]#osd.} ;; esac
		done
		set -- "$want"
	fi
	for id in "$@"; do
		id=${id#osd.}
		case " ${all[*]} " in
		*" $id "*) ;;
		*) die 2 "no osd.$id in $dir/pids" ;;
		esac
	done
	for id in "$@"; do
		id=${id#osd.}
		pid=""
		for i in "${!names[@]}"; do
			[ "${names[$i]}" = "osd.$id" ] && pid=${pids[$i]}
		done
		if [ -n "$pid" ] && alive "$pid"; then
			kill -CONT "$pid" 2>/dev/null
			stop_pids "$pid" 2>/dev/null
		fi
	done
	for id in "$@"; do
		id=${id#osd.}
		spawn "osd.$id" ceph-osd -c "$dir/ceph.conf" -i "$id" -f
		new+=("$id $!")
	done
	t0=$SECONDS
	for i in "${new[@]}"; do
		set -- $i
		local tries=1
		until timeout 10 ceph --admin-daemon "$dir/run/osd.$1.$2.asok" \
			status 2>/dev/null | grep -q '"state": "active"'; do
			if ! alive "$2"; then
				# a loaded machine has seen a restarted OSD end
				# while it started; say why, and try twice more
				echo "$prog: osd.$1 (PID $2) ended while starting:" >&2
				tail -n 5 "$dir/log/osd.$1.log" >&2
				[ "$tries" -lt 3 ] ||
					die 1 "osd.$1 ended $tries times; see $dir/log/osd.$1.log"
				tries=$((tries + 1))
				sleep 2
				spawn "osd.$1" ceph-osd -c "$dir/ceph.conf" -i "$1" -f
				set -- "$1" "$!"
				continue
			fi
			[ $((SECONDS - t0)) -lt 90 ] ||
				die 1 "osd.$1 (PID $2) not active after 90 s"
			sleep 0.5
		done
	done
	# the OSD's missing writes are recovered before HEALTH_OK
	wait_ready 180 "${#all[@]}" || exit 1
}

case "${1:-}" in
run) shift; cmd_run "$@" ;;
start) shift; cmd_start "$@" ;;
stop) shift; cmd_stop "$@" ;;
restart-osd) shift; cmd_restart_osd "$@" ;;
*) usage ;;
esac
