/* SPDX-License-Identifier: MIT */
/*
 * fixture.h - the header of test/check_man_errors.sh's fixture: two
 * functions whose comments list their errnos as the convention says
 * (docs/ARCHITECTURE.md, "Errors, written twice"), against a page
 * (man/man3/bl_fixture_open.3) whose ERRORS list differs from them.
 */
#ifndef BUFFERLIST_FIXTURE_H
#define BUFFERLIST_FIXTURE_H

#include <bufferlist/common.h>

/**
 * bl_fixture_open() - opens @path.
 * Return: a descriptor, or -errno: -EINVAL (@path is NULL), -ENOMEM.
 */
BL_API int bl_fixture_open(const char *path);

/**
 * bl_fixture_close() - closes @fd.
 * Return: 0, or -EBADF (@fd is not open).
 */
BL_API int bl_fixture_close(int fd);

#endif /* BUFFERLIST_FIXTURE_H */
