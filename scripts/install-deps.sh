#!/bin/sh
# Installs the Debian packages libbufferlist needs, only those missing.
# This is the one list: README's commands and .ci/run both call it.
set -e

# build: compiler, autotools and the libraries we link
BUILD="gcc g++ make autoconf automake libtool pkgconf check liburing-dev liblz4-dev"
# tests: the lz4 command (interoperability), hexdump -C (bsdextrautils),
# valgrind, groff and mandoc (test/check_man.sh renders the manual)
TEST="lz4 bsdextrautils valgrind groff-base mandoc"
# benchmarks: the peers we compare against in the same run (the Rust bytes
# crate is built offline from librust-bytes-dev, with cargo from rustup or
# Debian's cargo)
BENCH="libevent-dev librados-dev libradospp-dev fio librust-bytes-dev"
# hardening: clang's libFuzzer for make fuzz / check-fuzz
FUZZ="clang libclang-rt-14-dev"
# Ceph: a throw-away one-node cluster for make check-ceph and the rados target
# (about 80 packages, 250 MB: only with --ceph, so the quick start stays light)
CEPH="ceph-mon ceph-osd ceph-mgr ceph-common"
[ "${1:-}" = --ceph ] || CEPH=""

missing=""
for p in $BUILD $TEST $BENCH $FUZZ $CEPH; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
echo "install-deps: installing$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
