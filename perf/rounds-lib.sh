# SPDX-License-Identifier: MIT
#
# rounds-lib.sh - what the run-*.sh scripts share: the allocator setting,
# finding blbench, rotating the order of the runs from round to round,
# running one workload per process in rounds, and the medians of the
# rounds (sourced; not run on its own).

# bench_malloc SCRIPT DEFAULT TRIM - BL_BENCH_MALLOC (default DEFAULT):
# "notrim" runs every program with glibc tunables that stop heap trimming
# below TRIM bytes and fix the mmap threshold at 32 MiB; "glibc", or
# empty, leaves glibc as it comes.  Exits 1 on any other value.
bench_malloc() {
	case ${BL_BENCH_MALLOC:-$2} in
	notrim)
		GLIBC_TUNABLES=glibc.malloc.trim_threshold=$3:glibc.malloc.mmap_threshold=33554432
		export GLIBC_TUNABLES
		;;
	""|glibc) ;;
	*)
		echo "$1: BL_BENCH_MALLOC must be notrim, glibc or empty" >&2
		exit 1
		;;
	esac
}

# bench_blbench SCRIPT BIN NOTE - prints BIN, else ./blbench, else the
# blbench on PATH; exits 1 with a usage line ending in NOTE when there is
# none.
bench_blbench() {
	b=$2
	if [ -z "$b" ]; then
		if [ -x ./blbench ]; then b=./blbench; else b=$(command -v blbench); fi
	fi
	if [ -z "$b" ] || [ ! -x "$b" ]; then
		echo "usage: $1 [BLBENCH]   ($3)" >&2
		exit 1
	fi
	printf '%s\n' "$b"
}

# bench_rotate R ITEM... - the ITEMs rotated left by R - 1 (modulo their
# count), one a line: round 1 keeps the order, round 2 starts with the
# second item, and so on, so that no item always runs first.
bench_rotate() {
	r=$1
	shift
	[ $# -gt 0 ] || return 0
	k=$(( (r - 1) % $# ))
	while [ "$k" -gt 0 ]; do
		first=$1
		shift
		set -- "$@" "$first"
		k=$((k - 1))
	done
	printf '%s\n' "$@"
}

# bench_workdir NAME - sets base to $BL_BENCH_DIR (made if missing), else
# to a new directory /var/tmp/NAME.XXXXXX, and made_base to 1 when it is
# new (then the script removes it at the end), else 0.
# shellcheck disable=SC2034 # base and made_base are the caller's
bench_workdir() {
	base=${BL_BENCH_DIR:-}
	if [ -z "$base" ]; then
		base=$(mktemp -d "/var/tmp/$1.XXXXXX") || exit 1
		made_base=1
	else
		mkdir -p "$base" || exit 1
		made_base=0
	fi
}

# bench_order TMP PROGS - writes TMP/order: the workloads of the first
# program of PROGS (from TMP/list.PROG), then those only a later one has.
bench_order() {
	cat "$1/list.${2%% *}" >"$1/order"
	for p in $2; do
		grep -vxF -f "$1/order" "$1/list.$p" >"$1/extra"
		cat "$1/extra" >>"$1/order"
	done
}

# bench_workloads DIR ROUNDS PROGS ORDER TMP - runs every workload of the
# file ORDER once per round in each program of PROGS that lists it (in
# TMP/list.PROG), `DIR/bench_PROG -q =WORKLOAD`, one process each, the
# programs in an order that rotates from round to round; appends
# "PROG WORKLOAD VALUE UNIT" to TMP/results.  A failed run is a warning.
bench_workloads() {
	: >"$5/results"
	r=1
	while [ "$r" -le "$2" ]; do
		echo "#   round $r/$2" >&2
		# shellcheck disable=SC2086 # split on purpose
		order=$(bench_rotate "$r" $3)
		while read -r w; do
			for p in $order; do
				grep -qxF "$w" "$5/list.$p" || continue
				if ! "$1/bench_$p" -q "=$w" </dev/null >"$5/out" \
				    2>"$5/err"; then
					echo "warning: bench_$p $w failed:" \
						"$(head -c 300 "$5/err")" >&2
					continue
				fi
				awk -v p="$p" '$1 == "RESULT" { print p, $2, $3, $4 }' \
					"$5/out" >>"$5/results"
			done
		done <"$4"
		r=$((r + 1))
	done
}

# bench_medians - reads "KEY... VALUE UNIT" lines (the key is every field
# before the last two) and prints, for each key, "KEY... MEDIAN MIN MAX
# UNIT COUNT", the keys in the order they first came.
bench_medians() {
	awk '
	{
		k = $1
		for (i = 2; i <= NF - 2; i++)
			k = k " " $i
		if (!(k in n))
			keys[++nk] = k
		v[k, ++n[k]] = $(NF - 1)
		unit[k] = $NF
	}
	END {
		for (i = 1; i <= nk; i++) {
			k = keys[i]
			m = n[k]
			for (a = 2; a <= m; a++) {
				x = v[k, a]
				for (b = a - 1; b >= 1 && v[k, b] + 0 > x + 0; b--)
					v[k, b + 1] = v[k, b]
				v[k, b + 1] = x
			}
			med = (m % 2) ? v[k, (m + 1) / 2] : \
				(v[k, m / 2] + v[k, m / 2 + 1]) / 2
			print k, med, v[k, 1], v[k, m], unit[k], m
		}
	}'
}

# bench_machine - one line: the CPU, how many (also left in $ncpu), the
# kernel and the load.
bench_machine() {
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
	ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo "?")
	echo "machine: ${cpu:-unknown CPU}, $ncpu CPU(s), $(uname -sr);" \
		"load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
}
