#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check-package.sh - the Debian packages, built and used as a user would
# (`make check-package` runs it on the tarball `make dist` made):
#   1. unpacks the tarball and runs `dpkg-buildpackage -us -uc -b` in it
#      (debian/ comes with the tarball), then lintian, which must report
#      no error (its warnings are printed);
#   2. checks what each package holds: the library, the headers, the .pc,
#      the man pages (man3, man7 in -dev, man1 in the tools);
#   3. installs them, into the machine (BL_PKG_INSTALL=system, root only:
#      dpkg -i, purged on exit) or into a scratch root (the default:
#      dpkg-deb -x, nothing outside the work directory changes);
#   4. compiles README.md's first program (cut out of the README, so the
#      two cannot drift) with `pkg-config --cflags --libs bufferlist`
#      against the installed -dev package, runs it and compares its output
#      with the README's; links a program against the Ceph bridge's -dev
#      package the same way; runs `blbench --version` from the tools;
#   5. builds the RPM packages from the same tarball with `rpmbuild -ta`
#      (bufferlist.spec comes with it) and checks what each holds, so the
#      spec is proven on every run, not only on an RPM distribution.
#      Debian's rpm database knows none of the build dependencies dpkg
#      installed, so rpmbuild runs with --nodeps; BL_PKG_RPM=0 skips it.
#
# Usage: check-package.sh TOP_SRCDIR TARBALL WORKDIR
# Environment: BL_PKG_NOCHECK=1 builds with DEB_BUILD_OPTIONS=nocheck
# (CI, which ran make check already); BL_PKG_INSTALL=system|scratch.
# Missing packaging tools (dpkg-dev, debhelper, lintian, fakeroot) and
# build dependencies are installed with apt-get when running as root;
# otherwise their absence is an error naming them.
set -eu

top_srcdir=$1
tarball=$2
work=$3
mode=${BL_PKG_INSTALL:-scratch}
t0=$(date +%s)

say() { echo "check-package: $*"; }
die() { echo "check-package: FAIL: $*" >&2; exit 1; }

case $mode in
system) [ "$(id -u)" -eq 0 ] || die "BL_PKG_INSTALL=system needs root" ;;
scratch) ;;
*) die "BL_PKG_INSTALL=$mode: system or scratch" ;;
esac
[ -f "$tarball" ] || die "no tarball $tarball"
command -v dpkg >/dev/null || die "not a Debian system (no dpkg)"

# apt-get install what is missing of "$@" (package names), root only.
need() {
	missing=
	for p in "$@"; do
		dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing:$missing (apt-get install$missing)"
	fi
	say "installing$missing"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends $missing >"$work/apt.log" 2>&1 ||
		{ tail -n 20 "$work/apt.log"; die "apt-get install$missing"; }
}

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
need dpkg-dev debhelper lintian fakeroot pkgconf

# --- 1. build -------------------------------------------------------------
tar -xzf "$tarball" -C "$work"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'libbufferlist-*')
[ -d "$src/debian" ] || die "the tarball has no debian/"
profile=
if [ "${BL_PKG_NOCHECK:-0}" = 1 ]; then
	DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}"
	export DEB_BUILD_OPTIONS
	profile=-Pnocheck
	say "DEB_BUILD_OPTIONS=nocheck: make check does not run in the build"
fi
# build dependencies: the unmet ones, versions and alternatives dropped
unmet=$(cd "$src" && dpkg-checkbuilddeps $profile 2>&1 |
	sed -n 's/.*Unmet build dependencies: //p' |
	sed -e 's/([^)]*)//g' -e 's/<[^>]*>//g' -e 's/|[^ ]*//g') || true
[ -z "$unmet" ] || need $unmet
jobs=$(nproc 2>/dev/null || echo 1)
say "dpkg-buildpackage -us -uc -b $profile -J$jobs (log: $work/build.log)"
t1=$(date +%s)
if ! (cd "$src" && dpkg-buildpackage -us -uc -b $profile -J"$jobs") \
		>"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	die "dpkg-buildpackage failed"
fi
say "built in $(($(date +%s) - t1)) s"
if grep -n 'dpkg-gensymbols: warning' "$work/build.log"; then
	die "dpkg-gensymbols complained (debian/*.symbols)"
fi

changes=$(ls "$work"/libbufferlist_*.changes)
t1=$(date +%s)
rc=0
lintian --fail-on error --tag-display-limit 0 "$changes" \
	>"$work/lintian.log" 2>&1 || rc=$?
grep -E '^[EW]: ' "$work/lintian.log" | sed 's/^/  lintian: /' || true
[ $rc -eq 0 ] || die "lintian reports errors ($work/lintian.log)"
say "lintian: $(grep -c '^E: ' "$work/lintian.log" || true) errors," \
	"$(grep -c '^W: ' "$work/lintian.log" || true) warnings" \
	"($(($(date +%s) - t1)) s)"

# --- 2. contents ----------------------------------------------------------
deb() { ls "$work"/"$1"_*.deb; }
holds() {	# holds PACKAGE PATH-REGEX...
	d=$(deb "$1")
	dpkg-deb -c "$d" | awk '{ print $6 }' >"$work/contents"
	shift
	for re in "$@"; do
		grep -Eq "$re" "$work/contents" || die "${d##*/} lacks $re"
	done
}
holds libbufferlist0 '/libbufferlist\.so\.0$'
holds libbufferlist-dev '/usr/include/bufferlist\.h$' \
	'/usr/include/bufferlist/list\.h$' '/libbufferlist\.a$' \
	'/libbufferlist\.so$' '/pkgconfig/bufferlist\.pc$' \
	'/man3/bl_list_init\.3\.gz$' '/man3/bl_fd_dio_align\.3\.gz$' \
	'/man7/bufferlist\.7\.gz$'
holds bufferlist-tools '/usr/bin/blbench$' '/usr/bin/msgbench$' \
	'/man1/blbench\.1\.gz$' '/man1/msgbench\.1\.gz$'
holds libbufferlist-ceph0 '/libbufferlist_ceph\.so\.0$'
holds libbufferlist-ceph-dev '/usr/include/bufferlist/ceph\.h$' \
	'/usr/include/bufferlist/ceph\.hpp$' '/pkgconfig/bufferlist-ceph\.pc$' \
	'/man3/bl_rados_open\.3\.gz$'
if dpkg-deb -c "$(deb libbufferlist-dev)" | grep -q 'ceph\.h\|bl_rados_'; then
	die "libbufferlist-dev holds a file of the Ceph bridge"
fi
say "contents: libraries, headers, .pc files and man pages where expected"

# --- 3. install -----------------------------------------------------------
pkgs="libbufferlist0 libbufferlist-dev bufferlist-tools libbufferlist-ceph0
libbufferlist-ceph-dev"
debs=
for p in $pkgs; do debs="$debs $(deb "$p")"; done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
if [ $mode = system ]; then
	for p in $pkgs; do
		if dpkg -s "$p" >/dev/null 2>&1; then
			die "$p is installed already: not touching it"
		fi
	done
	trap 'dpkg --purge $pkgs >"$work/purge.log" 2>&1 ||
		echo "check-package: purge failed ($work/purge.log)" >&2' EXIT
	dpkg -i $debs >"$work/install.log" 2>&1 ||
		{ cat "$work/install.log"; die "dpkg -i"; }
	root=
	pc() { pkg-config "$@"; }
	run() { "$@"; }
	blbench=blbench
	say "installed into the machine (purged on exit)"
else
	root=$work/root
	for d in $debs; do dpkg-deb -x "$d" "$root"; done
	# the .pc files name /usr: moved to the scratch root
	pc() { PKG_CONFIG_PATH=$root/usr/lib/$ma/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
		pkg-config --define-variable=prefix="$root/usr" "$@"; }
	run() { LD_LIBRARY_PATH=$root/usr/lib/$ma "$@"; }
	blbench=$root/usr/bin/blbench
	say "installed into $root (dpkg-deb -x)"
fi

# --- 4. use ---------------------------------------------------------------
# README.md's "A first program": its C block, and the output its console
# block shows after `$ ./hello`.
readme=$top_srcdir/README.md
awk '/^## A first program/ { s = 1; next } s && /^## / { exit }
	s && /^```c$/ { c = 1; next } c && /^```$/ { exit } c { print }' \
	"$readme" >"$work/hello.c"
awk '/^## A first program/ { s = 1; next } s && /^## / { exit }
	s && /^\$ \.\/hello$/ { o = 1; next } o && /^```$/ { exit } o { print }' \
	"$readme" >"$work/hello.want"
[ -s "$work/hello.c" ] || die "no C block under README.md's 'A first program'"
[ -s "$work/hello.want" ] || die "no output of ./hello in README.md"
flags=$(pc --cflags --libs bufferlist) || die "pkg-config bufferlist"
say "cc hello.c $flags"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$work/hello" "$work/hello.c" $flags ||
	die "README's first program does not compile against the -dev package"
lib=$(run ldd "$work/hello" | awk '/libbufferlist\.so/ { print $3 }')
case $mode:$lib in
system:/lib/*|system:/usr/lib/*|scratch:"$root"/*) ;;
*) die "hello links ${lib:-nothing}, not the package's library" ;;
esac
(cd "$work" && run ./hello) >"$work/hello.out" 2>&1 ||
	{ cat "$work/hello.out"; die "README's first program failed"; }
diff -u "$work/hello.want" "$work/hello.out" ||
	die "README's first program printed something else than README.md says"
say "README's first program: built with pkg-config, ran, printed what README.md shows"

cat >"$work/bridge.c" <<'EOF'
#include <stdio.h>
#include <bufferlist/ceph.h>

int main(void)
{
	printf("%llu\n", (unsigned long long)bl_rados_copied_bytes());
	return 0;
}
EOF
flags=$(pc --cflags --libs bufferlist-ceph) || die "pkg-config bufferlist-ceph"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$work/bridge" "$work/bridge.c" $flags ||
	die "a program does not link against libbufferlist-ceph-dev"
[ "$(run "$work/bridge")" = 0 ] || die "the bridge program failed"
say "Ceph bridge: linked with pkg-config bufferlist-ceph, ran"

version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' \
	"$top_srcdir/configure.ac")
out=$(run "$blbench" --version) || die "blbench --version failed"
[ $mode = scratch ] || [ "$(command -v blbench)" = /usr/bin/blbench ] ||
	die "blbench on PATH is $(command -v blbench), not the package's"
case $out in
*" $version"*) ;;
*) die "blbench --version says '$out', not $version" ;;
esac
say "blbench --version: $out"

# --- 5. RPM ---------------------------------------------------------------
if [ "${BL_PKG_RPM:-1}" = 1 ]; then
	need rpm
	top=$work/rpm
	mkdir -p "$top"
	say "rpmbuild -ta --nodeps --nocheck (log: $work/rpmbuild.log)"
	t1=$(date +%s)
	rpmbuild -ta --nodeps --nocheck --define "_topdir $top" \
		--define "_smp_mflags -j$jobs" "$tarball" \
		>"$work/rpmbuild.log" 2>&1 ||
		{ tail -n 60 "$work/rpmbuild.log"; die "rpmbuild failed"; }
	rpmholds() {	# rpmholds PACKAGE PATH-REGEX...
		r=$(ls "$top"/RPMS/*/"$1-$version"-*.rpm 2>/dev/null) ||
			die "rpmbuild made no $1-$version package"
		rpm -qlp "$r" >"$work/contents" 2>/dev/null ||
			die "rpm -qlp ${r##*/}"
		shift
		for re in "$@"; do
			grep -Eq "$re" "$work/contents" || die "${r##*/} lacks $re"
		done
	}
	rpmholds libbufferlist '/libbufferlist\.so\.0$'
	rpmholds libbufferlist-devel '/usr/include/bufferlist\.h$' \
		'/libbufferlist\.so$' '/pkgconfig/bufferlist\.pc$' \
		'/man3/bl_list_init\.3' '/man7/bufferlist\.7'
	rpmholds libbufferlist-static '/libbufferlist\.a$'
	rpmholds bufferlist-tools '/usr/bin/blbench$' '/usr/bin/msgbench$' \
		'/man1/blbench\.1'
	rpmholds libbufferlist-ceph '/libbufferlist_ceph\.so\.0$'
	rpmholds libbufferlist-ceph-devel '/usr/include/bufferlist/ceph\.h$' \
		'/pkgconfig/bufferlist-ceph\.pc$'
	say "rpm: 6 packages of $version built in $(($(date +%s) - t1)) s," \
		"contents where expected"
fi
say "ok ($(($(date +%s) - t0)) s)"
