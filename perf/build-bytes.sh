#!/bin/sh
# SPDX-License-Identifier: MIT
#
# build-bytes.sh SRCDIR OUTDIR - builds bench_bytes, the Rust `bytes` crate
# as a peer of perf/run-core.sh, into OUTDIR/bench_bytes.
#
#   SRCDIR is perf/bytes of the source tree (Cargo.toml, src/main.rs and a
#   .cargo/config.toml that points cargo at the crates Debian installs,
#   librust-bytes-dev).  The sources are copied to OUTDIR/bytes-build and
#   built there, offline, so that Cargo.lock and target/ land in the build
#   tree and a read-only source tree is never written.
#
# Never fails: without cargo, or when the offline build does not work (no
# librust-bytes-dev), it says so, removes any old OUTDIR/bench_bytes and
# exits 0, and run-core.sh runs without the bytes column.
set -u

src=${1:-}
out=${2:-}
if [ -z "$src" ] || [ -z "$out" ] || [ ! -f "$src/Cargo.toml" ]; then
	echo "usage: $0 SRCDIR OUTDIR   (SRCDIR: perf/bytes)" >&2
	exit 1
fi
if ! command -v cargo >/dev/null 2>&1; then
	echo "build-bytes: cargo not found: no bytes column" >&2
	rm -f "$out/bench_bytes"
	exit 0
fi
work=$out/bytes-build
mkdir -p "$work/src" "$work/.cargo" || exit 0
# cat, not cp: copies of read-only sources must stay writable
for f in Cargo.toml src/main.rs .cargo/config.toml; do
	if ! cmp -s "$src/$f" "$work/$f"; then
		rm -f "$work/$f"
		cat "$src/$f" >"$work/$f" || exit 0
	fi
done
if (cd "$work" && cargo build --release --offline --quiet \
	--target-dir "$PWD/target") >"$work/build.log" 2>&1; then
	cp "$work/target/release/bench_bytes" "$out/bench_bytes.tmp" &&
		mv -f "$out/bench_bytes.tmp" "$out/bench_bytes"
else
	echo "build-bytes: the offline cargo build failed (see $work/build.log;" \
		"apt-get install librust-bytes-dev): no bytes column" >&2
	rm -f "$out/bench_bytes"
fi
exit 0
