#!/bin/sh
# make installcheck (and so make distcheck): the documents arrive in
# $(docdir) with their relative links working.
#
#   check_installed_docs.sh DOCDIR FILE...
#
# Each FILE (a path in the source tree: README.md, docs/..., examples/...)
# must be installed at DOCDIR/FILE, and every relative Markdown link
# ](target) in an installed .md file must name something installed.
set -u
[ $# -ge 2 ] || { echo "usage: $0 DOCDIR FILE..." >&2; exit 2; }
docdir=$1
shift
fail=0
for f in "$@"; do
	if [ ! -f "$docdir/$f" ]; then
		echo "installed docs: $docdir/$f is missing" >&2
		fail=1
	fi
done
for f in "$@"; do
	case $f in *.md) ;; *) continue ;; esac
	[ -f "$docdir/$f" ] || continue
	dir=$(dirname "$docdir/$f")
	for link in $(grep -o '\](\([^)#][^)]*\))' "$docdir/$f" |
		sed 's/^](//; s/)$//; s/#.*//'); do
		case $link in *://*|mailto:*) continue ;; esac
		if [ ! -e "$dir/$link" ]; then
			echo "installed docs: $f links to $link, which is not installed" >&2
			fail=1
		fi
	done
done
[ $fail -eq 0 ] && echo "installed docs: $# files in $docdir, every relative link resolves"
exit $fail
