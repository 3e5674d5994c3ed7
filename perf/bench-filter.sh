# SPDX-License-Identifier: MIT
#
# bench-filter.sh - sourced by the perf/run-*.sh scripts.
#
# bench_filter FILTER [ALSO]: reads workload names on stdin and prints
# each once, in order, when its name contains one of FILTER's words
# (every name when FILTER is empty) or is a line of the file ALSO.
bench_filter() {
	awk -v f="$1" -v also="${2:-}" '
		function want(w,   n, i, fw) {
			n = split(f, fw, " ")
			for (i = 1; i <= n; i++)
				if (index(w, fw[i]))
					return 1
			return !n
		}
		BEGIN {
			if (also != "")
				while ((getline x < also) > 0)
					extra[x] = 1
		}
		!seen[$0]++ && (want($0) || $0 in extra)'
}
