# SPDX-License-Identifier: MIT
#
# blbench-lib.sh - what the scripts that compare blbench with fio share
# (sourced by run-blbench.sh and run-blbench-sync.sh; not run on its own).

fio_bw() {	# write bandwidth of a terse v3 line, in MiB/s
	awk -F';' '{ printf "%.1f\n", $48 / 1024 }'
}

blb_bw() {	# the "Bandwidth (MB/sec)" of blbench's summary
	awk -F: '/^Bandwidth \(MB\/sec\)/ { gsub(/ /, "", $2); print $2 }'
}

settle() {	# before every run: what the last one left goes to disk
	sync
	sleep 1
}

# One row of a table from a results file of "PROG KIND MB/s" lines:
# blbench's and fio's medians (min-max) and the geometric mean of the
# per-round ratios blbench/fio.
# Usage: table_row RESULTS KIND LABEL
table_row() {
	awk -v t="$2" -v name="$3" '
		$2 != t { next }
		$1 == "blbench" { b[++nb] = $3 }
		$1 == "fio" { f[++nf] = $3 }
		function sort(a, n,    i, j, x) {
			for (i = 2; i <= n; i++) {
				x = a[i]
				for (j = i - 1; j >= 1 && a[j] > x; j--)
					a[j + 1] = a[j]
				a[j + 1] = x
			}
		}
		function median(a, n) {
			return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			n = (nb < nf) ? nb : nf
			lr = 0; k = 0
			for (i = 1; i <= n; i++)
				if (b[i] > 0 && f[i] > 0) { lr += log(b[i] / f[i]); k++ }
			g = k ? exp(lr / k) : 0
			sort(b, nb); sort(f, nf)
			mb = median(b, nb); mf = median(f, nf)
			printf "| %s | %.0f (%.0f-%.0f) | %.0f (%.0f-%.0f) | %.3f | %.3f |\n",
				name, mb, b[1], b[nb], mf, f[1], f[nf],
				(mf > 0 ? mb / mf : 0), g
		}' "$1"
}
