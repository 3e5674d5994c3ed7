/* SPDX-License-Identifier: MIT */
/*
 * blbench_target.c - opening a target from its --target SPEC: dir:PATH
 * (and the default directory), file:PATH[:SIZE], tcp:HOST:PORT, or
 * rados:POOL when blbench is built with the Ceph bridge (BL_HAVE_CEPH;
 * without it the spec is refused with a reason), and closing one.  It
 * calls each target's open function and nothing of the loop or of main.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <string.h>
#include "blbench_target.h"

static int open_local(struct blb_target **out, const char *spec,
		      const struct blb_opts *o, bool create, struct bl_uring *u,
		      char *err, size_t errlen)
{
	char dflt[PATH_MAX];

	if (!spec) {
		if (blb_default_dir(dflt, sizeof(dflt)) < 0)
			return blb_fail(err, errlen, -ENAMETOOLONG,
				    "the default directory");
		return blb_dir_open(out, dflt, true, o, create, u, err, errlen);
	}
	if (!strncmp(spec, "dir:", 4) && spec[4])
		return blb_dir_open(out, spec + 4, false, o, create, u, err,
				    errlen);
	if (!strncmp(spec, "file:", 5) && spec[5])
		return blb_file_open(out, spec + 5, o, create, u, err, errlen);
	return blb_fail(err, errlen, 0, "cannot open target %s: not dir:PATH or file:PATH[:SIZE]",
		    spec);
}

int blb_target_open_ring(struct blb_target **out, const char *spec,
			 const struct blb_opts *o, bool create,
			 struct bl_uring *u, char *err, size_t errlen)
{
	return open_local(out, spec, o, create, u, err, errlen);
}

int blb_target_open(struct blb_target **out, const char *spec,
		    const struct blb_opts *o, bool create, char *err,
		    size_t errlen)
{
	if (spec && !strncmp(spec, "tcp:", 4) && spec[4])
		return blb_tcp_open(out, spec + 4, o, create, err, errlen);
	if (spec && !strncmp(spec, "rados:", 6) && spec[6]) {
#ifdef BL_HAVE_CEPH
		return blb_rados_open(out, spec + 6, o, err, errlen);
#else
		return blb_fail(err, errlen, -ENOTSUP,
			    "cannot open target %s: blbench was built without the Ceph bridge",
			    spec);
#endif
	}
	return open_local(out, spec, o, create, NULL, err, errlen);
}

void blb_target_close(struct blb_target *t)
{
	if (t)
		t->ops->close(t);
}
