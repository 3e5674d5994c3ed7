#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-fuzz.sh - `make check-fuzz`: runs each libFuzzer harness named on
# the command line for SECONDS seconds on a copy of its corpus and of its
# regression inputs in test/fuzz/run/NAME (the source tree is never
# written), one harness at a time (the machine may be shared).  Prints one
# line per harness (executions, coverage) and, for a failure, the log's
# error lines; exit status 1 if any harness failed.
#
#   check-fuzz.sh TOP_SRCDIR SECONDS NAME...
#
# Run from the build directory, where `make fuzz` put test/fuzz/fuzz_NAME.
set -u
if [ $# -lt 3 ]; then
	echo "usage: $0 TOP_SRCDIR SECONDS NAME..." >&2
	exit 2
fi
top_srcdir=$1
seconds=$2
shift 2

fail=0
for h in "$@"; do
	run=test/fuzz/run/$h
	rm -rf "$run"
	mkdir -p "$run"
	cp "$top_srcdir"/test/fuzz/corpus/"$h"/* "$run"/
	for f in "$top_srcdir"/test/fuzz/regress/"$h"/*; do
		if test -f "$f"; then cp "$f" "$run"/; fi
	done
	chmod u+w "$run"/*
	t0=$(date +%s)
	./test/fuzz/fuzz_"$h" -max_total_time="$seconds" -timeout=60 \
		-print_final_stats=1 -artifact_prefix=test/fuzz/run/crash-"$h"- \
		"$run" > "$run.log" 2>&1
	rc=$?
	t1=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$run.log")
	cov=$(grep -E '^#[0-9]+.*(DONE|INITED)' "$run.log" | tail -n 1 |
		sed -e 's/^#[0-9]*[[:space:]]*[A-Z]*[[:space:]]*//' \
		    -e 's/ lim:.*//')
	if test $rc -eq 0; then
		echo "fuzz_$h: ${execs:-?} executions in $((t1 - t0)) s, $cov"
	else
		fail=1
		echo "fuzz_$h: FAILED (exit $rc) after $((t1 - t0)) s; log: $run.log"
		grep -E 'ERROR|SUMMARY|Test unit written' "$run.log" | head -n 5
	fi
done
exit $fail
