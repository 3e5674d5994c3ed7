/* SPDX-License-Identifier: MIT */
/*
 * tu_fs.c - the suites' temporary directories: one per test case (or per
 * TCase), made in a fixture and removed by a teardown that runs in the
 * parent, so that a test that failed half way leaves nothing behind.
 */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

void tu_tdir_make(char *dir, size_t size, const char *tmpl)
{
	ck_assert_uint_lt(strlen(tmpl), size);
	strcpy(dir, tmpl);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void tu_tdir_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[PATH_MAX + 256];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

int tu_tmp_open(const char *dir, char *path, size_t size)
{
	int fd;

	snprintf(path, size, "%s/f-XXXXXX", dir);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	return fd;
}
