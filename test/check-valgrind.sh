#!/bin/sh
# check-valgrind.sh - `make check-valgrind`: every Check suite named on the
# command line under valgrind's memcheck, one process per suite.
#
#   CK_FORK=no        libcheck runs the tests in the one process valgrind
#                     watches (by default it forks one child per test);
#   BL_POOL_CACHE=0   every raw goes back to malloc, so a leak is a leak
#                     and not a block parked in a per-thread cache;
#   BL_TEST_QUICK=1   suites that honour it run fewer random iterations.
#
# The test_uring_* suites run twice: on the io_uring back end and on the
# blocking one (BL_URING_FORCE_BLOCKING=1).  Output goes to
# test/NAME.valgrind[-MODE].log (the suite) and .vg (valgrind); one
# summary line per run is printed, and the exit status is non-zero if any
# run had an error or a definite or indirect leak, or its suite failed.
#
# Environment: LIBTOOL (the build's libtool: test programs may be libtool
# wrapper scripts), top_srcdir, VALGRIND (default valgrind), VG_SUITES (a
# space-separated subset of suite names to run), VG_JOBS (runs at once;
# default: the number of CPUs).
set -u
: "${LIBTOOL:=libtool}"
: "${top_srcdir:=.}"
: "${VALGRIND:=valgrind}"
supp="$top_srcdir/test/valgrind.supp"

if ! command -v "$VALGRIND" >/dev/null 2>&1; then
	echo "check-valgrind: $VALGRIND not found (apt-get install valgrind)" >&2
	exit 1
fi

jobs=${VG_JOBS:-$(nproc 2>/dev/null || echo 1)}
start=$(date +%s)
: "${SHELL:=/bin/sh}"
export LIBTOOL top_srcdir VALGRIND

# BL_TEST_WAIT_MS: the hang guards of test_msgr_*, raised for valgrind's pace
CK_FORK=no BL_POOL_CACHE=0 BL_TEST_QUICK=1 BL_TEST_WAIT_MS=600000
export CK_FORK BL_POOL_CACHE BL_TEST_QUICK BL_TEST_WAIT_MS

# run_one PROG MODE: one valgrind run, one summary line; 1 if it failed
run_one() {
	prog=$1 mode=$2
	name=$(basename "$prog")
	tag=$name
	[ "$mode" = - ] || tag="$name-$mode"
	log="test/$tag.valgrind.log"
	vg="test/$tag.valgrind.vg"
	if [ "$mode" = blocking ]; then
		BL_URING_FORCE_BLOCKING=1
	else
		BL_URING_FORCE_BLOCKING=
	fi
	export BL_URING_FORCE_BLOCKING
	t0=$(date +%s)
	$LIBTOOL --mode=execute "$VALGRIND" --error-exitcode=1 \
		--leak-check=full --child-silent-after-fork=yes \
		--errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect \
		--suppressions="$supp" --log-file="$vg" \
		"$prog" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - t0 ))
	if [ $rc -eq 77 ]; then	# the program has nothing to test here
		printf '%-30s %8s %7s %14s %14s %6s  %s\n' "$tag" - skip - - \
			"$secs" "$(head -n 1 "$log")"
		return 0
	fi
	# a test that forks (without exec) adds its child's summaries
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' \
		"$vg" | tr -d , | awk '{ s += $1 } END { print s + 0 }')
	definite=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' \
		"$vg" | tr -d , | awk '{ s += $1 } END { print s + 0 }')
	indirect=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' \
		"$vg" | tr -d , | awk '{ s += $1 } END { print s + 0 }')
	checks=$(grep -hE '^[0-9]+%: Checks: ' "$log" | tail -n 1)
	case $checks in
	100%*) suite=ok ;;
	"") suite=none ;;
	*) suite=FAIL ;;
	esac
	printf '%-30s %8s %7s %14s %14s %6s  %s\n' "$tag" "$errors" \
		"$suite" "$definite" "$indirect" "$secs" "$checks"
	if [ $rc -ne 0 ] || [ "$suite" = FAIL ]; then
		echo "  -> $vg and $log (exit $rc)"
		return 1
	fi
	return 0
}

# xargs calls back here for each run when VG_JOBS > 1
if [ "${1:-}" = --one ]; then
	run_one "$2" "$3"
	exit $?
fi

printf '%-30s %8s %7s %14s %14s %6s  %s\n' suite errors suite \
	definite indirect secs checks
for prog in "$@"; do
	name=$(basename "$prog")
	if [ -n "${VG_SUITES:-}" ]; then
		case " $VG_SUITES " in *" $name "*) ;; *) continue ;; esac
	fi
	case $name in
	test_uring_*) modes="io_uring blocking" ;;
	*) modes="-" ;;
	esac
	for mode in $modes; do
		echo "$prog $mode"
	done
done | xargs -n 2 -P "$jobs" "$SHELL" "$0" --one
# xargs: 123 when a run failed
status=$?
t1=$(date +%s)
echo "check-valgrind: $((t1 - start)) s with $jobs job(s), exit $status"
[ $status -eq 0 ]
