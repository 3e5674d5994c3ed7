#!/bin/sh
# SPDX-License-Identifier: MIT
#
# blbench-rados-check.sh [BLBENCH] - blbench's rados:POOL target against a
# live cluster: 1-second write --no-cleanup, seq, rand and cleanup, read
# back from their summaries and from the pool itself, and an object
# overwritten with garbage (rados put) that seq must catch; cleanup after
# damaged or missing metadata and with --prefix (the pool is listed), two
# writers of one run name, and a writer killed with its lock held; -p
# alone, and rados bench and blbench reading each other's runs.
#
#   BLBENCH   the blbench binary (default: ./blbench, then blbench on PATH)
#
# Needs CEPH_CONF and BL_CEPH_POOL, as `scripts/ceph-cluster.sh run` sets
# them (`make check-ceph` runs this inside such a cluster), and the rados
# command.  Exit status 0 only when every check passed; 77 (skipped) when
# there is no cluster to talk to.  Everything it writes is removed again.
set -u

bin=${1:-}
if [ -z "$bin" ]; then
	if [ -x ./blbench ]; then bin=./blbench; else bin=$(command -v blbench); fi
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
	echo "usage: $0 [BLBENCH]   (build blbench first)" >&2
	exit 2
fi
. "$(dirname "$0")/rados_tap.sh"
need_cluster
pool=$BL_CEPH_POOL
target="rados:$pool"
# a run name of our own: another user of the pool keeps its metadata
run=blbench_check_meta
# small ops, few in flight: the checks prove behaviour, not speed
opts="-t 4 -b 1M --run-name $run --target $target"

work=$(mktemp -d "${TMPDIR:-/tmp}/blbench-rados-check.XXXXXX") || exit 1
# shellcheck disable=SC2086
trap '"$bin" $opts cleanup >/dev/null 2>&1; rm -rf "$work"' EXIT
show() {	# the output of a failed run, for the log
	sed 's/^/#   /' "$work/out" "$work/err" | tail -n 20
}

# blb MODE-ARGS...: runs blbench, keeps stdout/stderr, returns its status
blb() {
	# shellcheck disable=SC2086
	"$bin" $opts "$@" >"$work/out" 2>"$work/err"
}

# A summary value: field LABEL (up to the colon) from the last run's output.
field() {
	awk -F: -v k="$1" '$1 ~ "^" k { gsub(/ /, "", $2); v = $2 } END { print v }' "$work/out"
}
# osd_ops OBJECT: the op list of the newest write the primary OSD of OBJECT
# recorded for it ("set-alloc-hint object_size N write_size M,write 0~L"),
# from the OSD's own op history (the newest: a pid, and so a prefix, can come
# back within the history's 10 minutes); empty when there is none.  An op
# is filed there only after its reply went out, so this asks for up to 10 s.
osd_ops() {
	_osd=$(ceph osd map "$pool" "$1" -f json 2>/dev/null |
		sed -n 's/.*"acting_primary": *\([0-9]*\).*/\1/p')
	[ -n "$_osd" ] || return 0
	_i=0
	while [ $_i -lt 50 ]; do
		_ops=$(ceph tell "osd.$_osd" dump_historic_ops 2>/dev/null |
			sed -n "s/.*:::$1:head \[\([^]]*write[^]]*\)\].*/\1/p" | tail -n 1)
		[ -n "$_ops" ] && break
		sleep 0.2
		_i=$((_i + 1))
	done
	echo "$_ops"
}
positive() {	# positive NUMBER: a number greater than zero
	awk -v x="${1:-}" 'BEGIN { exit !(x ~ /^[0-9.e+-]+$/ && x + 0 > 0) }'
}

echo "# blbench $bin against pool $pool (CEPH_CONF=$CEPH_CONF)"

# An OSD's op history keeps only its 20 slowest recent ops unless told more;
# osd_ops() below reads it, so raise that before anything is written.
for o in $(ceph osd ls 2>/dev/null); do
	ceph tell "osd.$o" config set osd_op_history_size 10000 >/dev/null 2>&1
done

# ---- write --no-cleanup ---------------------------------------------------------
if blb 1 write --no-cleanup; then ok "write exits 0"; else not_ok "write exits 0"; show; fi
writes=$(field "Total writes made")
prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out")
check "write: Total writes made > 0 ($writes)" positive "$writes"
check "write: Bandwidth (MB/sec) > 0 ($(field 'Bandwidth \(MB/sec\)'))" \
	positive "$(field 'Bandwidth \(MB/sec\)')"
check "write: object prefix is rados bench's benchmark_data_<host>_<pid> ($prefix)" \
	sh -c 'case "$1" in benchmark_data_?*_[0-9]*) exit 0 ;; *) exit 1 ;; esac' sh "$prefix"
rados -p "$pool" ls >"$work/ls" 2>"$work/ls.err" || { echo "# rados ls failed:"; cat "$work/ls.err"; }
nobj=$(grep -c "^${prefix}_object[0-9]*\$" "$work/ls")
check "pool holds one object per write ($nobj objects, $writes writes)" \
	test "${nobj:-0}" -eq "${writes:-x}"
check "pool holds ${prefix}_object0" grep -qx "${prefix}_object0" "$work/ls"
check "pool holds the metadata object $run" grep -qx "$run" "$work/ls"
ops=$(osd_ops "${prefix}_object0")
check "write: the OSD got rados bench's allocation hint with the write ($ops)" \
	test "$ops" = "set-alloc-hint object_size 1048576 write_size 1048576,write 0~1048576"
ops=$(osd_ops "$run")
check "write: the metadata object went without a hint, as rados bench's ($ops)" \
	sh -c 'case "$1" in writefull\ 0~[0-9]*) exit 0 ;; *) exit 1 ;; esac' sh "$ops"

# ---- seq and rand, verified ---------------------------------------------------------
if blb 1 seq; then ok "seq exits 0"; else not_ok "seq exits 0"; show; fi
reads=$(field "Total reads made")
check "seq: Total reads made > 0 ($reads)" positive "$reads"
check "seq: reads no more than the write made ($reads <= $writes)" \
	test "${reads:-0}" -le "${writes:-0}"
check "seq: Bandwidth (MB/sec) > 0" positive "$(field 'Bandwidth \(MB/sec\)')"
check "seq: verification ok (no 'is not correct')" \
	sh -c '! grep -q "is not correct" "$1"' sh "$work/err"

# -c FILE instead of $CEPH_CONF
conf=$CEPH_CONF
if env -u CEPH_CONF "$bin" $opts -c "$conf" 1 rand >"$work/out" 2>"$work/err"; then
	ok "rand with -c FILE (no CEPH_CONF) exits 0"
else
	not_ok "rand with -c FILE (no CEPH_CONF) exits 0"; show
fi
check "rand: Total reads made > 0 ($(field 'Total reads made'))" positive "$(field 'Total reads made')"
check "rand: Bandwidth (MB/sec) > 0" positive "$(field 'Bandwidth \(MB/sec\)')"
check "rand: verification ok (no 'is not correct')" \
	sh -c '! grep -q "is not correct" "$1"' sh "$work/err"

# ---- an object overwritten with garbage ------------------------------------------------
victim="${prefix}_object0"
head -c 1048576 /dev/urandom >"$work/garbage"
if rados -p "$pool" put "$victim" "$work/garbage" 2>"$work/put.err"; then
	if blb 1 seq; then
		not_ok "seq over a garbage object exits non-zero"
	else
		ok "seq over a garbage object exits non-zero (status $?)"
	fi
	check "seq names the garbage object ($victim is not correct!)" \
		grep -q "^$victim is not correct!" "$work/err"
else
	not_ok "rados put of garbage into $victim"; cat "$work/put.err"
fi

# ---- cleanup --------------------------------------------------------------------------
if blb cleanup; then ok "cleanup exits 0"; else not_ok "cleanup exits 0"; show; fi
rados -p "$pool" ls >"$work/ls" 2>/dev/null
left=$(grep -c "^${prefix}_" "$work/ls")
check "cleanup removed every object of the run ($left left)" test "$left" -eq 0
check "cleanup removed the metadata object" sh -c '! grep -qx "$1" "$2"' sh "$run" "$work/ls"
if blb 1 seq; then
	not_ok "seq after cleanup fails"
else
	ok "seq after cleanup fails"
fi
check "seq after cleanup says there is nothing to read" \
	grep -q "Must write data before running a read benchmark" "$work/err"

# ---- cleanup finds objects by listing ---------------------------------------------
# leftover PREFIX: objects named PREFIX* in the pool
leftover() {
	rados -p "$pool" ls 2>/dev/null | grep -c "^$1" || true
}
for how in damaged missing; do
	blb 1 write --no-cleanup || { not_ok "write --no-cleanup for the $how-metadata cleanup"; show; }
	prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out")
	if [ $how = damaged ]; then
		head -c 100 /dev/urandom >"$work/garbage"
		rados -p "$pool" put "$run" "$work/garbage"
	else
		rados -p "$pool" rm "$run"
	fi
	if blb cleanup; then ok "cleanup with $how metadata exits 0"; else not_ok "cleanup with $how metadata exits 0"; show; fi
	left=$(leftover "${prefix}_")
	check "cleanup with $how metadata removed every object of the run ($left left)" test "$left" -eq 0
	check "cleanup with $how metadata says what it removed" grep -q "^Removed [1-9][0-9]* object" "$work/err"
	check "no metadata object left ($how)" sh -c '! rados -p "$1" stat "$2" >/dev/null 2>&1' sh "$pool" "$run"
done

# --prefix, the advice a failed run gives
blb 1 write --no-cleanup || { not_ok "write --no-cleanup for --prefix"; show; }
prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out")
if blb --prefix "$prefix" cleanup; then ok "cleanup --prefix exits 0"; else not_ok "cleanup --prefix exits 0"; show; fi
left=$(leftover "${prefix}_")
check "cleanup --prefix $prefix removed every object named so ($left left)" test "$left" -eq 0
check "cleanup --prefix removed the run's metadata" sh -c '! rados -p "$1" stat "$2" >/dev/null 2>&1' sh "$pool" "$run"

# two writers of one --run-name: the second is refused, the first unharmed
# shellcheck disable=SC2086
"$bin" $opts 4 write --no-cleanup >"$work/out1" 2>"$work/err1" &
w1=$!
sleep 2
if blb 2 write --no-cleanup; then
	not_ok "a second writer of run $run is refused"
else
	ok "a second writer of run $run is refused (status $?)"
fi
check "the refusal names the other writer" grep -q "another blbench" "$work/err"
if wait $w1; then ok "the first writer completes"; else not_ok "the first writer completes"; fi
prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out1")
if blb 1 seq; then ok "seq reads the first writer's run"; else not_ok "seq reads the first writer's run"; show; fi
blb cleanup
left=$(leftover "${prefix}_")
check "cleanup after two writers leaves none of the first's objects ($left left)" test "$left" -eq 0

# a writer killed with SIGKILL leaves its lock and objects: the next
# writer on this host takes the lock over, cleanup takes the objects
# shellcheck disable=SC2086
"$bin" $opts 30 write --no-cleanup >"$work/out1" 2>"$work/err1" &
w1=$!
sleep 2
kill -KILL $w1
wait $w1 2>/dev/null
if blb 1 write --no-cleanup; then ok "a writer after one killed by SIGKILL takes its lock over"; else not_ok "a writer after one killed by SIGKILL takes its lock over"; show; fi
blb cleanup
left=$(leftover "benchmark_data_$(hostname)_$w1")
check "cleanup removes the killed writer's objects too ($left left)" test "$left" -eq 0

# ---- rados bench's runs and habits ------------------------------------------------
# -p POOL alone is the rados target; "hints = 1" comes first, as rados bench's
if "$bin" -p "$pool" -t 4 -b 1M --run-name "$run" 1 write >"$work/out" 2>"$work/err"; then
	ok "-p POOL without --target writes to rados:POOL"
else
	not_ok "-p POOL without --target writes to rados:POOL"; show
fi
check "the output starts with rados bench's 'hints = 1'" \
	test "$(head -n 1 "$work/out")" = "hints = 1"
rbrun=blbench_check_rb_meta
# rados bench writes, blbench reads and cleans up
if rados bench -p "$pool" 1 write -t 4 -b 64K --no-cleanup --run-name "$rbrun" >"$work/rb" 2>&1; then
	rbprefix=$(awk '/^Object prefix:/ { print $3 }' "$work/rb")
	# shellcheck disable=SC2086
	if "$bin" -p "$pool" -t 4 --run-name "$rbrun" 10 seq >"$work/out" 2>"$work/err"; then
		ok "blbench seq reads what rados bench write left"
	else
		not_ok "blbench seq reads what rados bench write left"; show
	fi
	check "... and verifies it (no 'is not correct')" \
		sh -c '! grep -q "is not correct" "$1"' sh "$work/err"
	check "... every op of it ($(field 'Total reads made') reads, $(awk -F: '/^Total writes made/ { gsub(/ /, "", $2); print $2 }' "$work/rb") writes)" \
		test "$(field 'Total reads made')" = "$(awk -F: '/^Total writes made/ { gsub(/ /, "", $2); print $2 }' "$work/rb")"
	head -c 65536 /dev/urandom >"$work/garbage"
	rados -p "$pool" put "${rbprefix}_object0" "$work/garbage"
	if "$bin" -p "$pool" -t 4 --run-name "$rbrun" 10 seq >"$work/out" 2>"$work/err"; then
		not_ok "blbench seq catches a garbage object in rados bench's run"
	else
		check "blbench seq catches a garbage object in rados bench's run" \
			grep -q "^${rbprefix}_object0 is not correct" "$work/err"
	fi
	"$bin" -p "$pool" --run-name "$rbrun" cleanup >"$work/out" 2>"$work/err"
	check "blbench cleanup removes rados bench's run ($(leftover "${rbprefix}_") left)" \
		test "$(leftover "${rbprefix}_")" -eq 0
else
	not_ok "rados bench write"; sed 's/^/#   /' "$work/rb" | tail -5
fi
# blbench writes in rados bench's format, rados bench reads it
if "$bin" -p "$pool" -t 4 -b 64K --run-name "$rbrun" --rados-bench-compat --no-cleanup 1 write >"$work/out" 2>"$work/err"; then
	ok "write --rados-bench-compat exits 0"
else
	not_ok "write --rados-bench-compat exits 0"; show
fi
writes=$(field "Total writes made")
prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out")
if rados bench -p "$pool" 10 seq -t 4 --run-name "$rbrun" >"$work/rb" 2>&1; then
	ok "rados bench seq reads what blbench --rados-bench-compat left"
else
	not_ok "rados bench seq reads what blbench --rados-bench-compat left"; sed 's/^/#   /' "$work/rb" | tail -5
fi
check "... and verifies it (no 'is not correct')" \
	sh -c '! grep -q "is not correct" "$1"' sh "$work/rb"
check "... every op of it ($writes writes)" \
	test "$(awk -F: '/^Total reads made/ { gsub(/ /, "", $2); print $2 }' "$work/rb")" = "$writes"
if "$bin" -p "$pool" -t 4 --run-name "$rbrun" 1 rand >"$work/out" 2>"$work/err"; then
	ok "blbench rand reads its --rados-bench-compat run"
else
	not_ok "blbench rand reads its --rados-bench-compat run"; show
fi
rados -p "$pool" cleanup --run-name "$rbrun" >/dev/null 2>&1
check "rados cleanup removes it ($(leftover "${prefix}_") left)" test "$(leftover "${prefix}_")" -eq 0

# ---- --no-hints ----------------------------------------------------------------
if blb 1 write --no-hints; then ok "write --no-hints exits 0"; else not_ok "write --no-hints exits 0"; show; fi
prefix=$(awk '/^Object prefix:/ { print $3 }' "$work/out")
ops=$(osd_ops "${prefix}_object0")
check "write --no-hints: the OSD got the write alone ($ops)" \
	test "$ops" = "write 0~1048576"

# ---- --jobs: clients with a cluster handle each --------------------------------
if blb --jobs 3 --max-objects 4 --format json 0 write --no-cleanup; then
	ok "write --jobs 3 exits 0"
else
	not_ok "write --jobs 3 exits 0"; show
fi
# (rados bench's "hints = 1" line comes before the JSON)
jobs_total=$(python3 -c 'import json,sys; t=open(sys.argv[1]).read(); d=json.loads(t[t.index("{"):]); print(d["total_writes_made"], sum(int(j["total_writes_made"]) for j in d["jobs"]), len(d["jobs"]))' "$work/out" 2>/dev/null)
check "write --jobs 3: 12 writes, the jobs' counts add up to them, 3 jobs ($jobs_total)" \
	test "$jobs_total" = "12 12 3"
prefix=$(python3 -c 'import json,sys; t=open(sys.argv[1]).read(); print(json.loads(t[t.index("{"):])["object_prefix"])' "$work/out" 2>/dev/null)
check "write --jobs 3: the pool holds objects 0..11 of ${prefix}, once each" \
	test "$(rados -p "$pool" ls | grep -c "^${prefix}_object\([0-9]\|1[01]\)\$")" -eq 12
if blb --crc 0 seq; then ok "seq reads the 3 clients' run"; else not_ok "seq reads the 3 clients' run"; show; fi
check "seq --jobs: all 12 ops read and verified ($(field 'Total reads made'))" \
	test "$(field 'Total reads made')" = 12
if blb --jobs 3 1 rand; then ok "rand --jobs 3 exits 0"; else not_ok "rand --jobs 3 exits 0"; show; fi
if blb cleanup; then ok "cleanup after --jobs exits 0"; else not_ok "cleanup after --jobs exits 0"; show; fi
check "cleanup removes every client's objects ($(leftover "${prefix}_") left)" \
	test "$(leftover "${prefix}_")" -eq 0

tap_end
