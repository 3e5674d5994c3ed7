#!/bin/sh
# Installs the Debian packages libbufferlist needs, only those missing.
# This is the one list: README's commands and .ci/run both call it.
#
#   scripts/install-deps.sh [--bench] [--fuzz] [--ceph] [--valgrind] [--all]
#
# Without a flag: what building and `make check` need, nothing else (what
# the README's Quick start installs).  Each flag adds one group; they
# combine, and --all is every group.
set -e

# build: compiler, autotools and the libraries we link
BUILD="gcc make autoconf automake libtool pkgconf liburing-dev liblz4-dev"
# make check: the Check library, the lz4 command (test_lz4_interop and
# examples/lz4_cli decode each other's frames with it), groff, mandoc and
# lexgrog (man-db) for test/check_man.sh, which renders the manual
CHECK="check lz4 groff-base mandoc man-db"
# --bench: the peers we compare against in the same run (the Rust bytes
# crate is built offline from librust-bytes-dev, with cargo from rustup or
# Debian's cargo); g++ for the Ceph bufferlist benchmarks
BENCH="g++ libevent-dev librados-dev libradospp-dev fio librust-bytes-dev"
# --fuzz: clang's libFuzzer for make fuzz / check-fuzz
FUZZ="clang libclang-rt-14-dev"
# --ceph: the bridge (libbufferlist_ceph, blbench's rados: target) and a
# throw-away one-node cluster for make check-ceph and make bench-rados
# (about 80 packages, 250 MB)
CEPH="g++ librados-dev libradospp-dev ceph-mon ceph-osd ceph-mgr ceph-common"
# --valgrind: make check-valgrind and make bench-callgrind
VALGRIND="valgrind"

want="$BUILD $CHECK"
for arg in "$@"; do
	case $arg in
	--bench) want="$want $BENCH" ;;
	--fuzz) want="$want $FUZZ" ;;
	--ceph) want="$want $CEPH" ;;
	--valgrind) want="$want $VALGRIND" ;;
	--all) want="$want $BENCH $FUZZ $CEPH $VALGRIND" ;;
	-h|--help)
		sed -n '2,9s/^# \{0,1\}//p' "$0"
		exit 0 ;;
	*)
		echo "install-deps: unknown option '$arg' (--bench, --fuzz, --ceph, --valgrind, --all)" >&2
		exit 2 ;;
	esac
done

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
