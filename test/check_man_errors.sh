#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_man_errors.sh - check_man.sh must fail on a page whose errnos
# differ from its header comments.  It runs check_man.sh on the tree of
# test/man-errors: a header of two functions and the page of both, whose
# ERRORS and RETURN VALUE differ from the comments in each of the ways
# check_man.sh looks for (an errno only in a comment, only in an entry
# that names the function, only in an entry for the whole page, only in
# RETURN VALUE).  Passes when check_man.sh exits 1 printing exactly the
# problems of test/man-errors/expected, one line each naming the
# function, the errno and the side that has it.
#
# Environment: top_srcdir (set by `make check`; default: the directory
# above this script).

top_srcdir=${top_srcdir:-$(dirname "$0")/..}
fixture=$top_srcdir/test/man-errors

out=$(top_srcdir=$fixture sh "$top_srcdir/test/check_man.sh" 2>&1)
rc=$?
got=$(printf '%s\n' "$out" | grep -v '^man: ' | LC_ALL=C sort)
want=$(LC_ALL=C sort "$fixture/expected")
if [ "$rc" -ne 1 ]; then
	printf '%s\n' "$out"
	echo "man-errors: FAIL (check_man.sh exited $rc, not 1)"
	exit 1
fi
if [ "$got" != "$want" ]; then
	echo "man-errors: FAIL: check_man.sh printed"
	printf '%s\n' "$got" | sed 's/^/    /'
	echo "instead of"
	printf '%s\n' "$want" | sed 's/^/    /'
	exit 1
fi
echo "man-errors: OK (check_man.sh fails on the fixture with the" \
	"$(printf '%s\n' "$want" | wc -l) expected problems)"
exit 0
