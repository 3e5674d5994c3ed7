#!/bin/sh
# make check: runs one part of a suite that runs in parts (Makefile.am,
# SPLIT_TESTS).  test/NAME.A+B.part runs test/NAME's cases tagged A or B
# (testutil.h tags every case with its name); NAME run as a whole leaves
# them to this part (BL_TEST_SPLIT, test/testutil.c).
part=${1##*/}
part=${part%.part}
prog=${part%%.*}
tags=$(printf '%s\n' "${part#*.}" | tr + ' ')
CK_INCLUDE_TAGS=$tags exec "${top_builddir:-.}/test/$prog"
