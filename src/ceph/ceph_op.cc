// SPDX-License-Identifier: MIT
/*
 * ceph_op.cc - the Ceph bridge's compound operations, after librados'
 * rados_write_op_* and rados_read_op_*: steps gathered on a librados op,
 * the lists they share held by the op (or, once submitted by aio, by its
 * aio_op) until it completes.
 */
#include "config.h"

#include <cstring>
#include <utility>

#include "ceph_priv.h"

using namespace bl_ceph_priv;

extern "C" {

/* ---- compound write operations ------------------------------------------- */

struct bl_rados_write_op *bl_rados_create_write_op(void)
{
	try {
		return new bl_rados_write_op;
	} catch (...) {
		errno = ENOMEM;
		return nullptr;
	}
}

void bl_rados_release_write_op(struct bl_rados_write_op *op)
{
	delete op;
}

} // extern "C"

namespace {

// A step of a write op: @f adds it to librados' op; the list steps give
// their Ceph list, sharing the list's bytes, held by the op.
template <typename F>
int wstep(struct bl_rados_write_op *op, F f) noexcept
{
	if (!op || op->spent)
		return -EINVAL;
	return guarded([&] {
		f(op->op);
		return 0;
	});
}

template <typename F>
int wstep_list(struct bl_rados_write_op *op, const struct bl_list *l, F f) noexcept
{
	if (!op || !l || op->spent)
		return -EINVAL;
	return guarded([&] {
		::ceph::bufferlist bl;
		int e = to_ceph_shared(l, &bl, &op->hold);

		if (e < 0)
			return e;
		f(op->op, bl);
		return 0;
	});
}

} // namespace

extern "C" {

int bl_rados_write_op_create(struct bl_rados_write_op *op, int exclusive)
{
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		o.create(exclusive != 0);
	});
}

int bl_rados_write_op_write(struct bl_rados_write_op *op,
			    const struct bl_list *l, uint64_t off)
{
	return wstep_list(op, l, [&](librados::ObjectWriteOperation &o,
				     ::ceph::bufferlist &bl) {
		o.write(off, bl);
	});
}

int bl_rados_write_op_write_full(struct bl_rados_write_op *op,
				 const struct bl_list *l)
{
	return wstep_list(op, l, [&](librados::ObjectWriteOperation &o,
				     ::ceph::bufferlist &bl) {
		o.write_full(bl);
	});
}

int bl_rados_write_op_append(struct bl_rados_write_op *op,
			     const struct bl_list *l)
{
	return wstep_list(op, l, [&](librados::ObjectWriteOperation &o,
				     ::ceph::bufferlist &bl) {
		o.append(bl);
	});
}

int bl_rados_write_op_truncate(struct bl_rados_write_op *op, uint64_t off)
{
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		o.truncate(off);
	});
}

int bl_rados_write_op_zero(struct bl_rados_write_op *op, uint64_t off,
			   uint64_t len)
{
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		o.zero(off, len);
	});
}

int bl_rados_write_op_setxattr(struct bl_rados_write_op *op, const char *name,
			       const struct bl_list *val)
{
	if (!name)
		return -EINVAL;
	return wstep_list(op, val, [&](librados::ObjectWriteOperation &o,
				       ::ceph::bufferlist &bl) {
		o.setxattr(name, bl);
	});
}

int bl_rados_write_op_omap_set(struct bl_rados_write_op *op,
			       const char *const *keys,
			       const struct bl_list *const *vals, size_t n)
{
	if (!op || op->spent)
		return -EINVAL;
	return guarded([&] {
		std::map<std::string, ::ceph::bufferlist> m;
		int e = omap_map(keys, vals, n, m, op->hold, true);

		if (e < 0)
			return e;
		op->op.omap_set(m);
		return 0;
	});
}

int bl_rados_write_op_omap_rm_keys(struct bl_rados_write_op *op,
				   const char *const *keys, size_t n)
{
	if (!keys_ok(keys, n))
		return -EINVAL;
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		std::set<std::string> ks;

		for (size_t i = 0; i < n; i++)
			ks.insert(keys[i]);
		o.omap_rm_keys(ks);
	});
}

int bl_rados_write_op_omap_clear(struct bl_rados_write_op *op)
{
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		o.omap_clear();
	});
}

int bl_rados_write_op_cmpext(struct bl_rados_write_op *op,
			     const struct bl_list *cmp, uint64_t off,
			     int *prval)
{
	return wstep_list(op, cmp, [&](librados::ObjectWriteOperation &o,
				       ::ceph::bufferlist &bl) {
		o.cmpext(off, bl, prval);
	});
}

int bl_rados_write_op_assert_version(struct bl_rados_write_op *op,
				     uint64_t ver)
{
	return wstep(op, [&](librados::ObjectWriteOperation &o) {
		o.assert_version(ver);
	});
}

int bl_rados_write_op_operate(struct bl_rados_write_op *op,
			      struct bl_rados *r, const char *oid)
{
	if (!op || !r || !oid || op->spent)
		return -EINVAL;
	op->spent = true;
	int e = guarded([&] { return r->io.operate(oid, &op->op); });
	op->hold.reset();
	return e;
}

int bl_rados_aio_write_op_operate(struct bl_rados_write_op *op,
				  struct bl_rados *r, const char *oid,
				  bl_rados_cb cb, void *arg)
{
	if (!op || !r || !oid || op->spent)
		return -EINVAL;
	aio_op *a;
	std::string name;
	try {
		name = oid;
		a = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	op->spent = true;
	// the bytes go with the aio op: @op may be released at once
	a->hold = std::move(op->hold);
	return aio_submit(a, [&](aio_op *o) {
		librados::AioCompletion *c = o->c;

		handoff(o);
		return r->io.aio_operate(name, c, &op->op);
	});
}

/* ---- compound read operations -------------------------------------------- */

struct bl_rados_read_op *bl_rados_create_read_op(void)
{
	try {
		return new bl_rados_read_op;
	} catch (...) {
		errno = ENOMEM;
		return nullptr;
	}
}

void bl_rados_release_read_op(struct bl_rados_read_op *op)
{
	delete op;
}

} // extern "C"

namespace {

// A step of a read op: a new read_step @set fills, then @add hands to
// librados' op; nothing is kept when either throws.
template <typename S, typename A>
int rstep(struct bl_rados_read_op *op, rkind k, S set, A add) noexcept
{
	if (!op || !op->body)
		return -EINVAL;
	return guarded([&] {
		std::unique_ptr<read_step> st(new read_step(k));
		int e = set(*st);

		if (e < 0)
			return e;
		op->body->steps.reserve(op->body->steps.size() + 1);
		add(op->op, *st);
		op->body->steps.push_back(std::move(st));	// reserved: no throw
		return 0;
	});
}

} // namespace

extern "C" {

int bl_rados_read_op_read(struct bl_rados_read_op *op, uint64_t off,
			  size_t len, struct bl_list *out, int *prval)
{
	if (!out || len == 0)
		return -EINVAL;
	return rstep(op, R_READ,
		     [&](read_step &st) {
			     st.out = out;
			     st.prval = prval;
			     return 0;
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     o.read(off, len, &st.bl, &st.rval);
		     });
}

int bl_rados_read_op_stat(struct bl_rados_read_op *op, uint64_t *size,
			  int64_t *mtime, int *prval)
{
	return rstep(op, R_STAT,
		     [&](read_step &st) {
			     st.size = size;
			     st.mtime = mtime;
			     st.prval = prval;
			     return 0;
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     o.stat(&st.st_size, &st.st_mtime, &st.rval);
		     });
}

int bl_rados_read_op_getxattr(struct bl_rados_read_op *op, const char *name,
			      struct bl_list *out, int *prval)
{
	if (!name || !out)
		return -EINVAL;
	return rstep(op, R_XATTR,
		     [&](read_step &st) {
			     st.out = out;
			     st.prval = prval;
			     return 0;
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     o.getxattr(name, &st.bl, &st.rval);
		     });
}

int bl_rados_read_op_omap_get(struct bl_rados_read_op *op,
			      const char *start_after, const char *prefix,
			      uint64_t max, int *more, bl_rados_omap_cb cb,
			      void *arg, int *prval)
{
	if (!cb || max == 0)
		return -EINVAL;
	return rstep(op, R_OMAP,
		     [&](read_step &st) {
			     st.pmore = more;
			     st.cb = cb;
			     st.arg = arg;
			     st.prval = prval;
			     return 0;
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     o.omap_get_vals2(start_after ? start_after : "",
					      prefix ? prefix : "", max, &st.vals,
					      &st.more, &st.rval);
		     });
}

int bl_rados_read_op_omap_get_by_keys(struct bl_rados_read_op *op,
				      const char *const *keys, size_t n,
				      bl_rados_omap_cb cb, void *arg,
				      int *prval)
{
	if (!cb || !keys_ok(keys, n))
		return -EINVAL;
	return rstep(op, R_OMAP,
		     [&](read_step &st) {
			     st.cb = cb;
			     st.arg = arg;
			     st.prval = prval;
			     return 0;
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     std::set<std::string> ks;

			     for (size_t i = 0; i < n; i++)
				     ks.insert(keys[i]);
			     o.omap_get_vals_by_keys(ks, &st.vals, &st.rval);
		     });
}

int bl_rados_read_op_cmpext(struct bl_rados_read_op *op,
			    const struct bl_list *cmp, uint64_t off,
			    int *prval)
{
	if (!cmp)
		return -EINVAL;
	::ceph::bufferlist bl;
	return rstep(op, R_CMPEXT,
		     [&](read_step &st) {
			     st.prval = prval;
			     return to_ceph_shared(cmp, &bl,
						   &op->body->hold);
		     },
		     [&](librados::ObjectReadOperation &o, read_step &st) {
			     o.cmpext(off, bl, &st.rval);
		     });
}

int bl_rados_read_op_operate(struct bl_rados_read_op *op, struct bl_rados *r,
			     const char *oid)
{
	if (!op || !r || !oid || !op->body)
		return -EINVAL;
	std::unique_ptr<read_body> body(std::move(op->body));
	int e = guarded([&] {
		return r->io.operate(oid, &op->op, &body->outbl);
	});
	return body->finish(e);
}

int bl_rados_aio_read_op_operate(struct bl_rados_read_op *op,
				 struct bl_rados *r, const char *oid,
				 bl_rados_cb cb, void *arg)
{
	if (!op || !r || !oid || !op->body)
		return -EINVAL;
	aio_op *a;
	std::string name;
	try {
		name = oid;
		a = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	// the steps go with the aio op: @op may be released at once
	a->body = std::move(op->body);
	return aio_submit(a, [&](aio_op *o) {
		librados::AioCompletion *c = o->c;
		::ceph::bufferlist *outbl = &o->body->outbl;

		handoff(o);
		return r->io.aio_operate(name, c, &op->op, outbl);
	});
}

} // extern "C"
