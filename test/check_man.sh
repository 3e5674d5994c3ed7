#!/bin/sh
# SPDX-License-Identifier: MIT
#
# check_man.sh - the manual (man/) must document the exported API as the
# headers declare it, and must render cleanly:
#   a. every function that the version scripts (src/libbufferlist.map and
#      src/libbufferlist_ceph.map) export and that a checked header declares
#      has a page man/man3/<function>.3 (but the bl__ ones, exported only
#      for the headers' inline functions);
#   b. every function a man3 page names in its NAME section is declared in a
#      header, and the page's SYNOPSIS, rendered to text, contains that
#      declaration (from BL_API to the `;`, BL_API removed; for a function
#      defined with BL_API_INLINE, its head and a `;`), compared after
#      whitespace normalisation; an alias page's target names the alias;
#   c. every page renders without a warning (groff -ww; mandoc -Tlint as
#      well when mandoc is installed), its .TH names the file, lexgrog (of
#      man-db, when installed) can read its NAME section for whatis(1), and
#      a man3 page has the sections of the convention, in order;
#   d. an alias page is exactly one `.so man3/<page>.3` line naming a page
#      that exists and is not itself an alias;
#   e. every page is listed in a man/*.am fragment (so that `make install`
#      installs it, or, for pages installed only in some configurations,
#      distributes it) and every page listed there exists;
#   f. the errnos of each function's header comment are those its page
#      lists under ERRORS (the convention: docs/ARCHITECTURE.md, "Errors,
#      written twice"): each errno the comment names is in an entry that
#      applies to the function, each entry naming the function is in its
#      comment, and each entry for the whole page, and each errno of
#      RETURN VALUE, is in the comment of one of the page's functions.
# Prints every problem and exits 1 if there is any.
#
# Usage: check_man.sh [HEADER...]
# Check a covers the HEADERs named (names in include/bufferlist without
# ".h": pool raw ...); without arguments, every header.  Checks b to e
# cover every page.
#
# Environment: top_srcdir (set by `make check`; default: the directory
# above this script); GROFF, MANDOC, LEXGROG (the programs; MANDOC=: or
# LEXGROG=: skips that check).

top_srcdir=${top_srcdir:-$(dirname "$0")/..}
GROFF=${GROFF:-groff}
MANDOC=${MANDOC:-mandoc}
LEXGROG=${LEXGROG:-lexgrog}
hdrdir=$top_srcdir/include/bufferlist
mandir=$top_srcdir/man

# The sections of a man3 page, in order; those marked * are required.
SECTIONS3='*NAME *SYNOPSIS *DESCRIPTION OWNERSHIP *RETURN_VALUE ERRORS NOTES EXAMPLE *SEE_ALSO'

if ! command -v "$GROFF" >/dev/null 2>&1; then
	echo "man: $GROFF not found: install groff-base (scripts/install-deps.sh)" >&2
	exit 1
fi
have_mandoc=
command -v "$MANDOC" >/dev/null 2>&1 && [ "$MANDOC" != : ] && have_mandoc=1
have_lexgrog=
command -v "$LEXGROG" >/dev/null 2>&1 && [ "$LEXGROG" != : ] && have_lexgrog=1

if [ $# -gt 0 ]; then
	headers="$*"
else
	headers=
	for h in "$hdrdir"/*.h; do
		h=${h##*/}
		h=${h%.h}
		headers="$headers $h"
	done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bl_man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
: >"$tmp/problems"

problem()
{
	printf '%s\n' "$*" >>"$tmp/problems"
}

# One declaration per line, whitespace normalised: runs of blanks become
# one space, and none is kept next to * ( ) , ; [ ].
normalize()
{
	sed -e 's/[[:space:]][[:space:]]*/ /g' \
	    -e 's/ *\([][*(),;]\) */\1/g' -e 's/^ //' -e 's/ $//'
}

# 1. Declarations of every header: "header<TAB>name<TAB>declaration".
for f in "$hdrdir"/*.h; do
	[ -f "$f" ] || continue
	h=${f##*/}
	awk -v h="${h%.h}" '
	/^BL_API_INLINE[ \t]/ {	# a definition: its head, then ";"
		s = $0
		while (!index(s, "{") && (getline l) > 0)
			s = s " " l
		s = substr(s, 1, index(s, "{") - 1) ";"
		sub(/^BL_API_INLINE[ \t]+/, "", s)
	}
	/^BL_API[ \t]/ {
		s = $0
		while (!index(s, ";") && (getline l) > 0)
			s = s " " l
		s = substr(s, 1, index(s, ";"))
		sub(/^BL_API[ \t]+/, "", s)
	}
	/^BL_API(_INLINE)?[ \t]/ {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", s)
		gsub(/[ \t]+/, " ", s)
		d = s
		if (index(s, "("))
			s = substr(s, 1, index(s, "(") - 1)
		else
			sub(/[;[].*$/, "", s)
		sub(/[ \t]+$/, "", s)
		if (match(s, /[A-Za-z_][A-Za-z0-9_]*$/))
			print h "\t" substr(s, RSTART, RLENGTH) "\t" d
	}' "$f"
done >"$tmp/decls.raw"
while IFS='	' read -r h name decl; do
	printf '%s\t%s\t%s\n' "$h" "$name" "$(printf '%s\n' "$decl" | normalize)"
done <"$tmp/decls.raw" >"$tmp/decls"

# The errnos of each function's header comment: "name<TAB>ERRNO" for
# each -ERRNO from the "Return:" of the comment above its declaration (a
# comment above a group of declarations is each one's) to its end, and
# each bare ERRNO of the sentence after "errno set" or "with errno";
# "name<TAB>=other" where it reads "Return: as other()", "-errno: as
# other()", "the errors of other()" or "those of other()", whose errnos
# it has too;
# "name<TAB>" for every function.
for f in "$hdrdir"/*.h; do
	[ -f "$f" ] || continue
	awk '
	/^\/\*/ { c = ""; inc = 1 }
	inc { c = c " " $0; if (index($0, "*/")) inc = 0; next }
	/^BL_API(_INLINE)?[ \t]/ {
		s = $0
		while (!index(s, "(") && !index(s, ";") && (getline l) > 0)
			s = s " " l
		if (!index(s, "("))
			next
		s = substr(s, 1, index(s, "(") - 1)
		sub(/[ \t]+$/, "", s)
		if (!match(s, /[A-Za-z_][A-Za-z0-9_]*$/))
			next
		fn = substr(s, RSTART, RLENGTH)
		print fn "\t"
		t = c
		gsub(/[ \t*\/]+/, " ", t)
		t = index(t, "Return:") ? substr(t, index(t, "Return:")) : ""
		u = t
		while (match(u, /-E[A-Z][A-Z0-9]+/)) {
			print fn "\t" substr(u, RSTART + 1, RLENGTH - 1)
			u = substr(u, RSTART + RLENGTH)
		}
		if (match(t, /(errno set|with errno)/)) {
			u = substr(t, RSTART + RLENGTH)
			# to the end of the sentence
			if (match(u, /\. [A-Z]/))
				u = substr(u, 1, RSTART)
			while (match(u, /(^|[^A-Za-z0-9_-])E[A-Z][A-Z0-9]+/)) {
				e = substr(u, RSTART, RLENGTH)
				sub(/^[^E]/, "", e)
				if (e != "EOF")
					print fn "\t" e
				u = substr(u, RSTART + RLENGTH)
			}
		}
		u = t
		re = "(Return: as|-errno: as|errors of|those of) bl_[a-z0-9_]+[(][)]"
		while (match(u, re)) {
			e = substr(u, RSTART, RLENGTH - 2)
			sub(/.* /, "", e)
			print fn "\t=" e
			u = substr(u, RSTART + RLENGTH)
		}
	}' "$f"
done >"$tmp/herr.raw"
# resolve "=other" (a chain of two at most)
for pass in 1 2; do
	awk -F'\t' '
	NR == FNR { if ($2 != "" && $2 !~ /^=/) e[$1] = e[$1] " " $2; next }
	{ print }
	$2 ~ /^=/ { n = split(e[substr($2, 2)], w, " ")
		for (i = 1; i <= n; i++) print $1 "\t" w[i] }' \
		"$tmp/herr.raw" "$tmp/herr.raw" >"$tmp/herr.new"
	mv "$tmp/herr.new" "$tmp/herr.raw"
done
grep -v '	=' "$tmp/herr.raw" | LC_ALL=C sort -u >"$tmp/herr"

# 2. Functions the version scripts export (C names only: the C++ API of
# ceph.hpp is exported by a wildcard and has no section 3 pages).
for map in "$top_srcdir/src/libbufferlist.map" \
	   "$top_srcdir/src/libbufferlist_ceph.map"; do
	if [ ! -f "$map" ]; then
		problem "$map: missing"
		continue
	fi
	awk '
	{ sub(/#.*$/, ""); text = text " " $0 }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", text)
		gsub(/extern[ \t]*"C[+][+]"[ \t]*[{][^}]*[}]/, " ", text)
		gsub(/[{};:]/, " & ", text)
		n = split(text, t, /[ \t]+/)
		for (i = 1; i <= n; i++) {
			if (t[i] == "{") { depth++; g = 1 }
			else if (t[i] == "}") { depth--; g = 0 }
			else if (t[i] == "global" && t[i + 1] == ":") g = 1
			else if (t[i] == "local" && t[i + 1] == ":") g = 0
			else if (depth > 0 && g && t[i] ~ /^[A-Za-z_][A-Za-z0-9_]*$/)
				print t[i]
		}
	}' "$map"
done | LC_ALL=C sort -u >"$tmp/exported"

# a. Each exported function of a checked header has a page.
nsyms=0
while read -r sym; do
	h=$(awk -F'\t' -v s="$sym" '$2 == s { print $1; exit }' "$tmp/decls")
	if [ -z "$h" ]; then
		problem "$sym: exported, but no header declares it with BL_API"
		continue
	fi
	case " $headers " in *" $h "*) ;; *) continue ;; esac
	# bl__: exported only for the headers' inline functions, not API
	case $sym in bl__*) continue ;; esac
	nsyms=$((nsyms + 1))
	[ -f "$mandir/man3/$sym.3" ] ||
		problem "man/man3/$sym.3: missing ($sym is declared in $h.h)"
done <"$tmp/exported"
for h in $headers; do
	[ -f "$hdrdir/$h.h" ] || problem "$h: no such header $hdrdir/$h.h"
done

# The sections of a page source, in order, blanks as _.
sections()
{
	sed -n 's/^\.SH[ \t]*//p' "$1" | tr -d '"' | sed 's/[ \t][ \t]*/_/g'
}

# Text of section $2 of the rendered page $1 (headings start in column 0).
section_text()
{
	awk -v want="$2" '
		/^[^ \t]/ { on = ($0 == want); next }
		on' "$1"
}

npages=0
for page in "$mandir"/man[1-9]/*.[1-9]; do
	[ -f "$page" ] || continue
	npages=$((npages + 1))
	rel=${page#"$mandir"/}
	base=${rel##*/}
	sec=${base##*.}
	name=${base%.*}

	# d. aliases (read by the shell itself: most pages are aliases, and
	# a process per test per page made this the slowest part)
	first= second=
	{ IFS= read -r first; IFS= read -r second; } <"$page"
	case $first in .so*) alias=1 ;; *) alias= ;; esac
	[ -n "$alias" ] || ! grep -q '^\.so' "$page" || alias=1
	if [ -n "$alias" ]; then
		target=${first#.so }
		case $target in
		man[1-9]/*.[1-9]) ok=1 ;;
		*) ok= ;;
		esac
		case ${target#man?/} in
		*[!A-Za-z0-9_.]*) ok= ;;
		esac
		if [ -z "$ok" ] || [ -n "$second" ] ||
		   [ "$(wc -l <"$page")" -ne 1 ]; then
			problem "man/$rel: an alias must be exactly one line \`.so man$sec/PAGE.$sec'"
			continue
		fi
		if [ ! -f "$mandir/$target" ]; then
			problem "man/$rel: .so target man/$target does not exist"
			continue
		fi
		if grep -q '^\.so' "$mandir/$target"; then
			problem "man/$rel: .so target man/$target is itself an alias"
			continue
		fi
		sed -n '/^\.SH[ \t]*"*NAME/,/^\.SH/p' "$mandir/$target" |
			sed 's/\\%//g' | grep -q "\\(^\\|[ ,]\\)$name\\([ ,]\\|\$\\)" ||
			problem "man/$rel: man/$target does not name $name in its NAME section"
		continue
	fi

	# c. .TH, sections, warnings
	th=$(sed -n 's/^\.TH[ \t]*//p' "$page" | head -n 1)
	set -- $th
	upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
	if [ "${1:-}" != "$upper" ] || [ "${2:-}" != "$sec" ]; then
		problem "man/$rel: .TH should begin \`.TH $upper $sec', not \`.TH $th'"
	fi
	if [ "$sec" = 3 ]; then
		got=$(sections "$page" | tr '\n' ' ')
		# every section known and in order, the required ones present
		rest=" $(printf '%s' "$SECTIONS3" | tr -d '*') "
		for s in $got; do
			case "$rest" in
			*" $s "*) rest=" ${rest#*" $s "}" ;;
			*) problem "man/$rel: section $s unknown or out of order" \
				"(allowed, in order: $(printf '%s' "$SECTIONS3" | tr -d '*'))" ;;
			esac
		done
		for s in $SECTIONS3; do
			case "$s" in \**) ;; *) continue ;; esac
			s=${s#\*}
			case " $got " in *" $s "*) ;; *) problem "man/$rel: no $s section" ;; esac
		done
		grep -q '^\.BR bufferlist (7)' "$page" ||
			problem "man/$rel: SEE ALSO does not refer to bufferlist (7)"
	fi
	LC_ALL=C "$GROFF" -man -Tutf8 -ww -z "$page" >"$tmp/warn" 2>&1
	if [ -s "$tmp/warn" ]; then
		problem "man/$rel: groff warns:"
		sed 's/^/    /' "$tmp/warn" >>"$tmp/problems"
	fi
	if [ -n "$have_mandoc" ]; then
		"$MANDOC" -Tlint -W warning "$page" >"$tmp/warn" 2>&1
		if [ -s "$tmp/warn" ]; then
			problem "man/$rel: mandoc -Tlint warns:"
			sed 's/^/    /' "$tmp/warn" >>"$tmp/problems"
		fi
	fi
	# the NAME line must give whatis(1) its entries
	if [ -n "$have_lexgrog" ] && ! "$LEXGROG" "$page" >/dev/null 2>&1; then
		problem "man/$rel: lexgrog cannot parse its NAME section (whatis, apropos)"
	fi
	[ "$sec" = 3 ] || continue

	# b. NAME against the headers, SYNOPSIS against the declarations
	names=$(sed -n '/^\.SH[ \t]*"*NAME/,/^\.SH/{/^\.SH/d;p;}' "$page" |
		tr '\n' ' ' | sed -e 's/\\-.*//' -e 's/\\%//g' | tr ',' ' ')
	case " $names " in
	*" $name "*) ;;
	*) problem "man/$rel: the NAME section does not name $name" ;;
	esac
	LC_ALL=C "$GROFF" -man -Tutf8 -P-cbou "$page" 2>/dev/null >"$tmp/page.txt"
	section_text "$tmp/page.txt" SYNOPSIS | tr '\n' ' ' | normalize >"$tmp/synopsis"
	for fn in $names; do
		decl=$(awk -F'\t' -v s="$fn" '$2 == s { print $3; exit }' "$tmp/decls")
		if [ -z "$decl" ]; then
			problem "man/$rel: names $fn, which no header declares with BL_API"
			continue
		fi
		grep -qF -- "$decl" "$tmp/synopsis" ||
			problem "man/$rel: SYNOPSIS lacks the declaration of $fn:" \
				"$(awk -F'\t' -v s="$fn" '$2 == s { print $3; exit }' \
				   "$tmp/decls.raw")"
	done

	# f. ERRORS and RETURN VALUE against the header comments
	awk -v page="man/$rel" -v names="$names" '
	NR == FNR { if ($2 != "") h[$1, $2] = 1; next }
	function qual(t,   n) {	# names of the functions a body opens with
		q = ""
		gsub(/\\%/, "", t)
		for (;;) {
			sub(/^([ \t(,:]|and[ \t]|only[ \t)]|\.BR[ \t])+/, "", t)
			if (match(t, /^\\fB[a-z0-9_]+\\fR\(\)\)?/) ||
			    match(t, /^[a-z0-9_]+ \(\)\)?/)) {
				n = substr(t, 1, RLENGTH)
				sub(/^\\fB/, "", n)
				sub(/[\\ ].*$/, "", n)
				q = q " " n
				t = substr(t, RLENGTH + 1)
			} else
				return q
		}
	}
	function flush(   n, w, i, k, qq, j, q2, parts) {
		if (tag == "") { body = ""; return }
		# an entry may give each function its own cause (after a .br,
		# or on a line that opens with the function and a colon)
		q2 = sq
		if (q2 == "") {
			k = split(body, parts, "\001")
			for (j = 1; j <= k; j++) {
				if (qual(parts[j]) == "") {
					q2 = ""
					break
				}
				q2 = q2 q
			}
		}
		n = split(tag, w, /[^A-Z0-9]+/)
		for (i = 1; i <= n; i++) {
			if (w[i] !~ /^E[A-Z][A-Z0-9]+$/)
				continue
			if (skip && q2 == "")
				cb_page[w[i]] = 1
			else if (q2 == "")
				page_e[w[i]] = 1
			k = split(q2, qq, " ")
			for (j = 1; j <= k; j++)
				if (skip)
					cb_fn[qq[j], w[i]] = 1
				else
					fn_e[qq[j], w[i]] = 1
		}
		tag = ""; body = ""
	}
	FNR == 1 {
		nf = split(names, fns, " ")
		names = ""
		for (i = 1; i <= nf; i++) {
			on[fns[i]] = 1
			names = names (i > 1 ? ", " : "") fns[i]
		}
	}
	/^\.SH/ { flush(); sec = $0; sub(/^\.SH[ \t]*/, "", sec); gsub(/"/, "", sec)
		skip = 0; sq = ""; next }
	sec == "ERRORS" && /^\.SS/ {
		flush(); skip = ($0 ~ /Passed to/); sq = ""
		t = $0; gsub(/\\%/, "", t)
		if (match(t, /by bl_[a-z0-9_]+\(\)/))
			sq = substr(t, RSTART + 3, RLENGTH - 5)
		next
	}
	sec == "ERRORS" {
		has_errors = 1
		if ($0 == ".TP") { flush(); want = 1; next }
		if (want) { tag = $0; want = 0; next }
		if (tag == "")
			next
		if ($0 == ".br")
			body = body "\001"
		else if ($0 ~ /^\.BR \\%bl_[a-z0-9_]+ \(\):$/ && body != "")
			body = body "\001 " $0
		else
			body = body " " $0
		next
	}
	sec == "RETURN VALUE" {
		t = $0
		while (match(t, /\\-E[A-Z][A-Z0-9]+/)) {
			rv[substr(t, RSTART + 2, RLENGTH - 2)] = 1
			t = substr(t, RSTART + RLENGTH)
		}
	}
	END {
		flush()
		if (!has_errors)
			for (e in rv) page_e[e] = 1
		for (k in fn_e) {
			split(k, w, SUBSEP)
			if (!(w[1] in on))
				print page ": ERRORS names " w[1] \
					", which its NAME section does not"
			else if (!((w[1], w[2]) in h))
				print page ": " w[1] ": " w[2] \
					" is in ERRORS, not in its header comment"
		}
		for (e in page_e) {
			for (i = 1; i <= nf; i++)
				if ((fns[i], e) in h) break
			if (i > nf)
				print page ": " e " is in ERRORS, not in the header" \
					" comment of " (nf > 1 ? "any of " : "") names
		}
		for (e in rv) {
			for (i = 1; i <= nf; i++)
				if ((fns[i], e) in h) break
			if (i > nf && has_errors)
				print page ": " e " is in RETURN VALUE, not in the" \
					" header comment of " (nf > 1 ? "any of " : "") names
		}
		for (k in h) {
			split(k, w, SUBSEP)
			if ((w[1] in on) && !(w[2] in page_e) &&
			    !((w[1], w[2]) in fn_e) && !(w[2] in cb_page) &&
			    !((w[1], w[2]) in cb_fn))
				print page ": " w[1] ": " w[2] \
					" is in its header comment, not in ERRORS"
		}
	}' "$tmp/herr" "$page" | LC_ALL=C sort >>"$tmp/problems"
done

# e. the pages and the fragments that install them
for am in "$mandir"/*.am; do
	[ -f "$am" ] || continue
	grep -o 'man/man[1-9]/[^[:space:]\\]*' "$am"
done | sed 's|^man/||' | LC_ALL=C sort -u >"$tmp/listed"
(cd "$mandir" && for p in man[1-9]/*.[1-9]; do
	[ -f "$p" ] && printf '%s\n' "$p"
done) | LC_ALL=C sort >"$tmp/present"
LC_ALL=C comm -23 "$tmp/present" "$tmp/listed" | while read -r p; do
	problem "man/$p: not listed in any man/*.am fragment (not installed)"
done
LC_ALL=C comm -13 "$tmp/present" "$tmp/listed" | while read -r p; do
	problem "man/$p: listed in man/*.am but missing"
done

unchecked=
for f in "$hdrdir"/*.h; do
	h=${f##*/}
	h=${h%.h}
	case " $headers " in *" $h "*) ;; *) unchecked="$unchecked $h" ;; esac
done
[ -z "$unchecked" ] || echo "man: pending, not checked for missing pages:$unchecked"
if [ -s "$tmp/problems" ]; then
	cat "$tmp/problems"
	echo "man: FAIL ($(grep -c '^man/\|^[a-z_0-9]*:' "$tmp/problems") problems;" \
		"$npages pages, $nsyms functions checked)"
	exit 1
fi
echo "man: $npages pages OK, $nsyms functions of$(echo " $headers" |
	sed 's/  */ /g') documented"
exit 0
