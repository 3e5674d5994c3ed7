#!/bin/sh
# README's Quick start, from a fresh clone on Debian 12 (as root, or with
# sudo): installs what building and `make check` need and is missing
# (scripts/install-deps.sh), bootstraps, configures and builds in the tree,
# then runs a short real benchmark: blbench writing at most 64 objects of
# 4 MiB for at most 3 seconds into its default target (dir:, $BLBENCH_DIR,
# else /var/tmp/blbench-$USER), removing them when it ends.
#
#   scripts/quickstart.sh            build and run blbench
#   scripts/quickstart.sh --check    the same, then make check in parallel
#
# Run again, it redoes only what changed.  .ci/run runs the README's line.
set -e
cd "$(dirname "$0")/.."

check=
case ${1:-} in
"") ;;
--check) check=1 ;;
*)
	echo "usage: scripts/quickstart.sh [--check]" >&2
	exit 2 ;;
esac
[ $# -le 1 ] || { echo "usage: scripts/quickstart.sh [--check]" >&2; exit 2; }

jobs=$(nproc 2>/dev/null || echo 2)
scripts/install-deps.sh
[ -x configure ] || ./bootstrap
[ -f Makefile ] || ./configure -q
make -j"$jobs"
./blbench 3 write --max-objects 64
[ -z "$check" ] || make -j"$jobs" check
