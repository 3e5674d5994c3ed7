// SPDX-License-Identifier: MIT
/*
 * ceph_aio.cc - the Ceph bridge's aio: the C++ aio calls over an IoCtx,
 * the C API's aio calls on their completion machinery (aio_op,
 * aio_submit, aio_done: one handle count per op in flight, so that
 * bl_rados_close() and bl_rados_aio_flush() can wait for the callbacks),
 * and the waitable completions.
 */
#include "config.h"

#include <chrono>
#include <climits>
#include <cstring>
#include <utility>

#include "ceph_priv.h"

using namespace bl_ceph_priv;

namespace bl {
namespace ceph {

namespace {

// The C++ aio writes: @l as a Ceph list sharing its bytes; the references
// go to the caller's @hold (empty, so that the move cannot fail) only once
// librados has queued the op.
template <typename F>
int aio_with_ceph_list(const struct bl_list *l, librados::AioCompletion *c,
		       list_ref *hold, F f) noexcept
{
	if (!c || !hold || bl_list_num_buffers(hold->list()) != 0)
		return -EINVAL;
	try {
		::ceph::bufferlist bl;
		list_ref mine;
		int e = to_ceph(l, &bl, &mine);

		if (e < 0)
			return e;
		e = f(bl);
		if (e < 0)
			return e;
		*hold = std::move(mine);
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

} // namespace

int aio_write(librados::IoCtx &io, const std::string &oid,
	      librados::AioCompletion *c, const struct bl_list *l,
	      uint64_t off, list_ref *hold) noexcept
{
	return aio_with_ceph_list(l, c, hold, [&](::ceph::bufferlist &bl) {
		return io.aio_write(oid, c, bl, bl.length(), off);
	});
}

int aio_write_full(librados::IoCtx &io, const std::string &oid,
		   librados::AioCompletion *c, const struct bl_list *l,
		   list_ref *hold) noexcept
{
	return aio_with_ceph_list(l, c, hold, [&](::ceph::bufferlist &bl) {
		return io.aio_write_full(oid, c, bl);
	});
}

int aio_append(librados::IoCtx &io, const std::string &oid,
	       librados::AioCompletion *c, const struct bl_list *l,
	       list_ref *hold) noexcept
{
	return aio_with_ceph_list(l, c, hold, [&](::ceph::bufferlist &bl) {
		return io.aio_append(oid, c, bl, bl.length());
	});
}

int aio_read(librados::IoCtx &io, const std::string &oid,
	     librados::AioCompletion *c, uint64_t off, size_t len,
	     ::ceph::bufferlist *pbl) noexcept
{
	if (!c || !pbl)
		return -EINVAL;
	return guarded([&] { return io.aio_read(oid, c, pbl, len, off); });
}

int aio_stat(librados::IoCtx &io, const std::string &oid,
	     librados::AioCompletion *c, uint64_t *size,
	     std::time_t *mtime) noexcept
{
	if (!c || !size || !mtime)
		return -EINVAL;
	return guarded([&] { return io.aio_stat(oid, c, size, mtime); });
}

int aio_remove(librados::IoCtx &io, const std::string &oid,
	       librados::AioCompletion *c) noexcept
{
	if (!c)
		return -EINVAL;
	return guarded([&] { return io.aio_remove(oid, c); });
}

} // namespace ceph
} // namespace bl

namespace bl_ceph_priv {

// The handle whose aio callback this thread is running, if any: a flush
// from there would wait for itself.
thread_local struct bl_rados *t_in_callback = nullptr;

void op_done(struct bl_rados *r)
{
	std::lock_guard<std::mutex> g(r->mu);
	// notify under the lock: bl_rados_close() may free r right after
	if (--r->inflight == 0)
		r->idle.notify_all();
}

void aio_done(librados::completion_t, void *arg) noexcept
{
	auto *op = static_cast<aio_op *>(arg);

	taken_over(op);
	struct bl_rados *r = op->r;
	in_callback_of mark(r);
	librados::AioCompletion *c = op->c;
	bl_rados_cb cb = op->cb;
	bl_rados_cb64 cb64 = op->cb64;
	void *cb_arg = op->arg;
	int64_t res = c->get_return_value();

	if (op->body) {
		res = op->body->finish(int(res));
	} else if (op->out) {
		res = bl__ceph_read_result(int(res), op->bl.length());
		// an int result cannot tell 2 GiB or more
		if (res > INT_MAX && !cb64)
			res = -EDOM;
		if (res >= 0) {
			int e = bl::ceph::from_ceph(std::move(op->bl), op->out);

			if (e < 0)
				res = e;
		}
	}
	if (res >= 0 && op->size)
		*op->size = op->st_size;
	if (res >= 0 && op->mtime)
		*op->mtime = int64_t(op->st_mtime);
	// the holder (and the write's Ceph segments) go before the user hears
	delete op;
	if (cb64)
		cb64(res, cb_arg);
	else if (cb)
		cb(int(res), cb_arg);
	c->release();
	op_done(r);
}

} // namespace bl_ceph_priv

namespace {

int aio_write_common(struct bl_rados *r, const char *oid,
		     const struct bl_list *l, uint64_t off, wkind k,
		     bl_rados_cb cb, void *arg)
{
	if (!r || !oid || !l)
		return -EINVAL;
	aio_op *op;
	std::string name;
	try {
		name = oid;
		op = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	// op->hold is dropped in aio_done, on a librados thread
	tmp_list shared;
	int e = 0;
	if (has_thread_local(l)) {
		e = bl_list_copy_shared(&shared.l, l);
		if (e >= 0)
			g_copied.fetch_add(bl_list_length(l),
					   std::memory_order_relaxed);
		l = &shared.l;
	}
	if (e >= 0)
		e = bl::ceph::to_ceph(l, &op->bl, &op->hold);
	if (e < 0) {
		delete op;
		return e;
	}
	return aio_submit(op, [&](aio_op *o) {
		// in here an exception (the lock's) is caught and @op freed
		alloc_hint h = hint_of(r);
		librados::AioCompletion *c = o->c;
		::ceph::bufferlist &bl = o->bl;
		unsigned len = bl.length();

		if (h.on()) {
			librados::ObjectWriteOperation wop;

			hinted_write_op(wop, h, bl, off, k);
			handoff(o);
			return r->io.aio_operate(name, c, &wop);
		}
		handoff(o);
		if (k == W_FULL)
			return r->io.aio_write_full(name, c, bl);
		if (k == W_APPEND)
			return r->io.aio_append(name, c, bl, len);
		return r->io.aio_write(name, c, bl, len, off);
	});
}

int aio_read_common(struct bl_rados *r, const char *oid, uint64_t off,
		    size_t len, struct bl_list *out, bl_rados_cb cb,
		    bl_rados_cb64 cb64, void *arg)
{
	if (!r || !oid || !out)
		return -EINVAL;
	if (len == 0) {
		if (cb64)
			cb64(0, arg);
		else if (cb)
			cb(0, arg);
		return 0;
	}
	aio_op *op;
	std::string name;
	try {
		name = oid;
		op = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	op->out = out;
	op->cb64 = cb64;
	return aio_submit(op, [&](aio_op *o) {
		librados::AioCompletion *c = o->c;

		handoff(o);
		return r->io.aio_read(name, c, &o->bl, len, off);
	});
}

} // namespace

extern "C" {

int bl_rados_aio_flush(struct bl_rados *r, int timeout_ms)
{
	if (!r)
		return -EINVAL;
	if (t_in_callback == r)
		return -EDEADLK;
	try {
		std::unique_lock<std::mutex> g(r->mu);
		auto idle = [r] { return r->inflight == 0; };

		if (timeout_ms < 0) {
			r->idle.wait(g, idle);
			return 0;
		}
		return r->idle.wait_for(g, std::chrono::milliseconds(timeout_ms),
					idle)
			       ? 0
			       : -ETIMEDOUT;
	} catch (...) {	// std::system_error from the lock
		return -EIO;
	}
}

int bl_rados_aio_write(struct bl_rados *r, const char *oid,
		       const struct bl_list *l, uint64_t off, bl_rados_cb cb,
		       void *arg)
{
	return aio_write_common(r, oid, l, off, W_AT, cb, arg);
}

int bl_rados_aio_write_full(struct bl_rados *r, const char *oid,
			    const struct bl_list *l, bl_rados_cb cb, void *arg)
{
	return aio_write_common(r, oid, l, 0, W_FULL, cb, arg);
}

int bl_rados_aio_append(struct bl_rados *r, const char *oid,
			const struct bl_list *l, bl_rados_cb cb, void *arg)
{
	return aio_write_common(r, oid, l, 0, W_APPEND, cb, arg);
}

int bl_rados_aio_read(struct bl_rados *r, const char *oid, uint64_t off,
		      size_t len, struct bl_list *out, bl_rados_cb cb,
		      void *arg)
{
	return aio_read_common(r, oid, off, len, out, cb, nullptr, arg);
}

int bl_rados_aio_read2(struct bl_rados *r, const char *oid, uint64_t off,
		       size_t len, struct bl_list *out, bl_rados_cb64 cb,
		       void *arg)
{
	return aio_read_common(r, oid, off, len, out, nullptr, cb, arg);
}

int bl_rados_aio_stat(struct bl_rados *r, const char *oid, uint64_t *size,
		      int64_t *mtime, bl_rados_cb cb, void *arg)
{
	if (!r || !oid)
		return -EINVAL;
	aio_op *op;
	std::string name;
	try {
		name = oid;
		op = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	op->size = size;
	op->mtime = mtime;
	return aio_submit(op, [&](aio_op *o) {
		librados::AioCompletion *c = o->c;

		handoff(o);
		return r->io.aio_stat(name, c, &o->st_size, &o->st_mtime);
	});
}

int bl_rados_aio_remove(struct bl_rados *r, const char *oid, bl_rados_cb cb,
			void *arg)
{
	if (!r || !oid)
		return -EINVAL;
	aio_op *op;
	std::string name;
	try {
		name = oid;
		op = new aio_op(r, cb, arg);
	} catch (...) {
		return -ENOMEM;
	}
	return aio_submit(op, [&](aio_op *o) {
		librados::AioCompletion *c = o->c;

		handoff(o);
		return r->io.aio_remove(name, c);
	});
}

struct bl_rados_completion *bl_rados_completion_create(void)
{
	try {
		return new bl_rados_completion;
	} catch (...) {
		errno = ENOMEM;
		return nullptr;
	}
}

void bl_rados_completion_cb64(int64_t res, void *arg)
{
	auto *c = static_cast<struct bl_rados_completion *>(arg);

	try {
		std::lock_guard<std::mutex> g(c->mu);

		c->res = res;
		c->done = true;
		// under the lock: a waiter may release @c once it sees done
		c->cv.notify_all();
	} catch (...) {
		// the lock failed: nothing to do on a librados thread
	}
}

void bl_rados_completion_cb(int res, void *arg)
{
	bl_rados_completion_cb64(res, arg);
}

int bl_rados_completion_wait(struct bl_rados_completion *c, int timeout_ms,
			     int64_t *res)
{
	if (!c)
		return -EINVAL;
	try {
		std::unique_lock<std::mutex> g(c->mu);
		auto done = [c] { return c->done; };

		if (timeout_ms < 0)
			c->cv.wait(g, done);
		else if (!c->cv.wait_for(g, std::chrono::milliseconds(timeout_ms),
					 done))
			return -ETIMEDOUT;
		if (res)
			*res = c->res;
		return 0;
	} catch (...) {	// std::system_error from the lock
		return -EIO;
	}
}

void bl_rados_completion_release(struct bl_rados_completion *c)
{
	delete c;
}

} // extern "C"
