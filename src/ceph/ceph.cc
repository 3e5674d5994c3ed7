// SPDX-License-Identifier: MIT
/*
 * ceph.cc - the zero-copy bridge between struct bl_list and
 * ceph::bufferlist / librados (Ceph 16 "pacific" client headers).
 *
 * Writes: Ceph cannot hold our references itself.  The one way to hand it
 * foreign memory with a release hook, buffer::claim_buffer(len, buf,
 * deleter), needs Ceph's deleter class, which no -dev package ships; and
 * buffer::raw cannot be subclassed from the shipped headers either.  So
 * each segment goes in as buffer::create_static (Ceph never frees or
 * writes it) and a list_ref keeps the bytes alive on our side until
 * librados has finished with the operation: the end of the call for the
 * synchronous functions, our completion callback for aio.  Once the OSD
 * has answered, nothing in librados reads the data again (a resend only
 * happens before the answer), so dropping the references there is safe.
 *
 * Reads: every ceph::buffer::ptr of the returned bufferlist is copied as a
 * ptr object (one atomic increment of the Ceph raw's count, no byte
 * copied) onto the heap, and that copy is the opaque argument of a claimed
 * raw whose free callback deletes it.  ptr::c_str() is a plain pointer
 * computation in pacific; bufferlist::c_str() would rebuild a
 * multi-segment list and is never called here.
 *
 * The one exception is an aio write of thread-local raws
 * (bl_raw_set_thread_local(3)): its holder is dropped on a librados
 * thread, where such a raw may not be touched, so those bytes go as a copy
 * in one shared raw, counted by bl_rados_copied_bytes().
 *
 * No exception leaves the bridge: every entry point catches
 * std::bad_alloc as -ENOMEM and anything else as -EIO.
 *
 * This file holds the conversions, the handle and the synchronous calls;
 * ceph_aio.cc the aio calls and completions, ceph_omap.cc attributes and
 * omap, ceph_op.cc the compound ops; ceph_priv.h what they share.  Calls
 * go from ceph_op.cc to the other three and from those two to this one,
 * never back (test/check_calls.sh).
 */
#include "config.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <condition_variable>
#include <map>
#include <memory>
#include <set>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <utility>
#include <vector>
#include <sys/uio.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include <bufferlist/ceph.hpp>
#include <bufferlist/ptr.h>
#include <bufferlist/raw.h>
#include "ceph_int.h"
#include "ceph_priv.h"

using namespace bl_ceph_priv;

namespace bl_ceph_priv {

// Bytes the bridge copied: only an aio write of thread-local raws copies
// (aio_write_common), and the tests prove that no other path does.
std::atomic<uint64_t> g_copied{0};
std::atomic<long> g_live_ptrs{0};

} // namespace bl_ceph_priv

namespace {

void drop_ceph_ptr(void *, size_t, void *opaque)
{
	delete static_cast<::ceph::buffer::ptr *>(opaque);
	g_live_ptrs.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace

extern "C" long bl__ceph_live_ptrs(void)
{
	return g_live_ptrs.load(std::memory_order_relaxed);
}

/*
 * librados gives a read's byte count as an int, so 2 GiB or more comes
 * back negative; the answer's own (32-bit) length is the truth: a
 * negative result that is that length cut to an int is a success.
 */
extern "C" int64_t bl__ceph_read_result(int rv, uint64_t got)
{
	if (rv < 0 && rv != int(uint32_t(got)))
		return rv;
	return int64_t(got);
}

namespace bl {
namespace ceph {

list_ref::list_ref() noexcept
{
	bl_list_init(&l_);
}

list_ref::~list_ref()
{
	bl_list_clear(&l_);
}

list_ref::list_ref(list_ref &&o) noexcept
{
	bl_list_init(&l_);
	bl_list_swap(&l_, &o.l_);
}

list_ref &list_ref::operator=(list_ref &&o) noexcept
{
	if (this != &o) {
		bl_list_clear(&l_);
		bl_list_swap(&l_, &o.l_);
	}
	return *this;
}

void list_ref::reset() noexcept
{
	bl_list_clear(&l_);
}

size_t list_ref::length() const noexcept
{
	return bl_list_length(&l_);
}


int to_ceph(const struct bl_list *l, ::ceph::bufferlist *out,
	    list_ref *hold) noexcept
{
	if (!l || !out || !hold)
		return -EINVAL;
	if (bl_list_length(l) > UINT_MAX - out->length())
		return -E2BIG;
	try {
		tmp_list held;
		::ceph::bufferlist bl;
		struct iovec iov[64];
		size_t off = 0;
		int n, e;

		// Our own references first: the iovecs below borrow from them.
		e = bl_list_append_list(&held.l, l);
		if (e < 0)
			return e;
		while ((n = bl_list_to_iovec(&held.l, off, iov, 64)) > 0) {
			for (int i = 0; i < n; i++) {
				char *p = static_cast<char *>(iov[i].iov_base);
				size_t len = iov[i].iov_len;

				off += len;
				while (len) {
					size_t c = len < k_seg_max ? len
								   : k_seg_max;

					bl.push_back(::ceph::buffer::create_static(
						unsigned(c), p));
					p += c;
					len -= c;
				}
			}
		}
		if (n < 0)
			return n;
		if (bl_list_is_empty(&hold->l_) &&
		    bl_list_num_buffers(&hold->l_) == 0) {
			bl_list_swap(&hold->l_, &held.l);
		} else {
			e = bl_list_claim_append(&hold->l_, &held.l);
			if (e < 0)
				return e;
		}
		// moves Ceph's nodes: cannot fail once we got here
		out->claim_append(bl);
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int from_ceph(::ceph::bufferlist &&in, struct bl_list *out) noexcept
{
	if (!out)
		return -EINVAL;
	try {
		tmp_list got;
		int e;

		for (const auto &p : in.buffers()) {
			if (p.length() == 0)
				continue;
			auto *cp = new ::ceph::buffer::ptr(p);
			struct bl_raw *r = bl_raw_claim(cp->c_str(), cp->length(),
							drop_ceph_ptr, cp);
			struct bl_ptr bp;

			if (!r) {
				delete cp;
				return -ENOMEM;
			}
			g_live_ptrs.fetch_add(1, std::memory_order_relaxed);
			bl_ptr_from_raw(&bp, r);
			e = bl_list_append_ptr_move(&got.l, &bp);
			if (e < 0) {
				bl_ptr_release(&bp);
				return e;
			}
		}
		e = bl_list_claim_append(out, &got.l);
		if (e < 0)
			return e;
		in.clear();
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int write(librados::IoCtx &io, const std::string &oid,
	  const struct bl_list *l, uint64_t off) noexcept
{
	return with_ceph_list(l, [&](::ceph::bufferlist &bl) {
		return io.write(oid, bl, bl.length(), off);
	});
}

int write_full(librados::IoCtx &io, const std::string &oid,
	       const struct bl_list *l) noexcept
{
	return with_ceph_list(l, [&](::ceph::bufferlist &bl) {
		return io.write_full(oid, bl);
	});
}

int append(librados::IoCtx &io, const std::string &oid,
	   const struct bl_list *l) noexcept
{
	return with_ceph_list(l, [&](::ceph::bufferlist &bl) {
		return io.append(oid, bl, bl.length());
	});
}

ssize_t read(librados::IoCtx &io, const std::string &oid, uint64_t off,
	     size_t len, struct bl_list *out) noexcept
{
	if (!out)
		return -EINVAL;
	if (len == 0)
		return 0;
	if (len > size_t(SSIZE_MAX))	// no object is that long
		len = size_t(SSIZE_MAX);
	try {
		tmp_list got;
		size_t n = 0;
		int e;

		// librados refuses a read over INT_MAX (-EDOM) and its
		// messenger aborts on an answer of 2 GiB or more: a longer
		// read goes as several, until one comes back short.
		while (n < len) {
			size_t want = len - n > size_t(INT_MAX) ? k_read_chunk
							       : len - n;
			::ceph::bufferlist bl;

			e = io.read(oid, bl, want, off + n);
			if (e < 0)
				return e;
			size_t m = bl.length();

			e = from_ceph(std::move(bl), &got.l);
			if (e < 0)
				return e;
			n += m;
			if (m < want)
				break;
		}
		e = bl_list_claim_append(out, &got.l);
		return e < 0 ? e : ssize_t(n);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int stat(librados::IoCtx &io, const std::string &oid, uint64_t *size,
	 std::time_t *mtime) noexcept
{
	try {
		uint64_t sz = 0;
		std::time_t mt = 0;
		int e = io.stat(oid, &sz, &mt);

		if (e < 0)
			return e;
		if (size)
			*size = sz;
		if (mtime)
			*mtime = mt;
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int remove(librados::IoCtx &io, const std::string &oid) noexcept
{
	try {
		return io.remove(oid);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

} // namespace ceph
} // namespace bl

/* ---- the C API ------------------------------------------------------------ */

namespace {

// The IoCtx's reference, then the C handle's, then the client (whose
// shutdown joins librados' threads: no callback code runs past this).
void free_handle(struct bl_rados *r) noexcept
{
	if (!r)
		return;
	r->io.close();
	if (r->ioc)
		rados_ioctx_destroy(r->ioc);
	if (r->cluster)
		rados_shutdown(r->cluster);
	delete r;
}

} // namespace

namespace bl_ceph_priv {

alloc_hint hint_of(struct bl_rados *r)
{
	std::lock_guard<std::mutex> g(r->mu);
	return r->hint;
}

// The hint and the write as one compound OSD operation, as rados bench
// sends them.  ObjectWriteOperation shares @bl's buffers (no byte copy),
// and librados moves the ops out of @op when it is submitted, so @op may
// go as soon as operate()/aio_operate() returns.
void hinted_write_op(librados::ObjectWriteOperation &op, const alloc_hint &h,
		     ::ceph::bufferlist &bl, uint64_t off, wkind k)
{
	op.set_alloc_hint2(h.object_size, h.write_size, h.flags);
	if (k == W_FULL)
		op.write_full(bl);
	else if (k == W_APPEND)
		op.append(bl);
	else
		op.write(off, bl);
}

// Gives each pair of @vals to @cb as a list over Ceph's buffers.
int deliver_omap(std::map<std::string, ::ceph::bufferlist> &vals,
		 bl_rados_omap_cb cb, void *arg)
{
	for (auto &kv : vals) {
		tmp_list v;
		int e = bl::ceph::from_ceph(std::move(kv.second), &v.l);

		if (e < 0)
			return e;
		e = cb(kv.first.c_str(), &v.l, arg);
		if (e)
			return e;
	}
	return 0;
}

bool has_thread_local(const struct bl_list *l) noexcept
{
	struct bl_list_seg_iter it;
	const struct bl_seg *seg;

	BL_LIST_FOREACH_SEG(l, it, seg)
		if (bl_raw_is_thread_local(seg->raw))
			return true;
	return false;
}

/*
 * An op's references may be dropped on a librados thread (an aio
 * submission moves them there), where a thread-local raw may not be
 * touched: such a list goes to Ceph as a copy in one shared raw, as the
 * aio writes do.  @to_ceph gets @l, or that copy.
 */
int to_ceph_shared(const struct bl_list *l, ::ceph::bufferlist *out,
		   bl::ceph::list_ref *hold) noexcept
{
	if (!l || !has_thread_local(l))
		return bl::ceph::to_ceph(l, out, hold);
	tmp_list shared;
	int e = bl_list_copy_shared(&shared.l, l);

	if (e < 0)
		return e;
	e = bl::ceph::to_ceph(&shared.l, out, hold);
	if (e >= 0)
		g_copied.fetch_add(bl_list_length(l), std::memory_order_relaxed);
	return e;
}

} // namespace bl_ceph_priv

namespace {

// The synchronous writes of the C API: with no hint, the plain C++ calls.
int sync_write(struct bl_rados *r, const char *oid, const struct bl_list *l,
	       uint64_t off, wkind k)
{
	alloc_hint h;

	try {
		h = hint_of(r);
	} catch (...) {	// std::system_error from the lock
		return -EIO;
	}
	if (!h.on())
		return k == W_FULL ? bl::ceph::write_full(r->io, oid, l)
		       : k == W_APPEND ? bl::ceph::append(r->io, oid, l)
				       : bl::ceph::write(r->io, oid, l, off);
	return with_ceph_list(l, [&](::ceph::bufferlist &bl) {
		librados::ObjectWriteOperation op;

		hinted_write_op(op, h, bl, off, k);
		return r->io.operate(oid, &op);
	});
}

} // namespace

extern "C" {

struct bl_rados *bl_rados_open2(const char *conf, const char *id,
				const char *pool, const char *const *options,
				int *err)
{
	struct bl_rados *r = nullptr;
	int e = 0;

	if (!pool)
		e = -EINVAL;
	for (size_t i = 0; e == 0 && options && options[i]; i += 2)
		if (!options[i + 1])
			e = -EINVAL;
	if (e < 0)
		goto fail;
	try {
		r = new bl_rados;
		// rados_create2 takes the full name, rados_create the id
		if (id && !std::strncmp(id, "client.", 7))
			e = rados_create2(&r->cluster, "ceph", id, 0);
		else
			e = rados_create(&r->cluster, id);	// NULL: admin
		if (e < 0)
			r->cluster = nullptr;
		if (e >= 0)
			e = rados_conf_read_file(r->cluster, conf);
		if (e >= 0)
			e = rados_conf_parse_env(r->cluster, nullptr);
		// the caller's options last: the timeouts must be in place
		// before connect() creates the Objecter, which reads them once
		for (size_t i = 0; e >= 0 && options && options[i]; i += 2)
			e = rados_conf_set(r->cluster, options[i],
					   options[i + 1]);
		if (e >= 0)
			e = rados_connect(r->cluster);
		if (e >= 0) {
			e = rados_ioctx_create(r->cluster, pool, &r->ioc);
			if (e < 0)
				r->ioc = nullptr;
		}
		if (e >= 0)
			librados::IoCtx::from_rados_ioctx_t(r->ioc, r->io);
	} catch (const std::bad_alloc &) {
		e = -ENOMEM;
	} catch (...) {
		e = -EIO;
	}
	if (e >= 0) {
		if (err)
			*err = 0;
		return r;
	}
	free_handle(r);
fail:
	if (err)
		*err = e;
	return nullptr;
}

struct bl_rados *bl_rados_open(const char *conf, const char *pool, int *err)
{
	return bl_rados_open2(conf, nullptr, pool, nullptr, err);
}

void bl_rados_close(struct bl_rados *r)
{
	if (!r)
		return;
	{
		std::unique_lock<std::mutex> g(r->mu);
		r->idle.wait(g, [r] { return r->inflight == 0; });
	}
	free_handle(r);
}

int bl_rados_write(struct bl_rados *r, const char *oid,
		   const struct bl_list *l, uint64_t off)
{
	if (!r || !oid)
		return -EINVAL;
	return sync_write(r, oid, l, off, W_AT);
}

int bl_rados_write_full(struct bl_rados *r, const char *oid,
			const struct bl_list *l)
{
	if (!r || !oid)
		return -EINVAL;
	return sync_write(r, oid, l, 0, W_FULL);
}

int bl_rados_append(struct bl_rados *r, const char *oid,
		    const struct bl_list *l)
{
	if (!r || !oid)
		return -EINVAL;
	return sync_write(r, oid, l, 0, W_APPEND);
}

ssize_t bl_rados_read(struct bl_rados *r, const char *oid, uint64_t off,
		      size_t len, struct bl_list *out)
{
	if (!r || !oid)
		return -EINVAL;
	try {
		return bl::ceph::read(r->io, oid, off, len, out);
	} catch (...) {
		return -ENOMEM;
	}
}

int bl_rados_stat(struct bl_rados *r, const char *oid, uint64_t *size,
		  int64_t *mtime)
{
	std::time_t mt = 0;
	int e;

	if (!r || !oid)
		return -EINVAL;
	try {
		e = bl::ceph::stat(r->io, oid, size, &mt);
	} catch (...) {
		return -ENOMEM;
	}
	if (e >= 0 && mtime)
		*mtime = int64_t(mt);
	return e;
}

int bl_rados_remove(struct bl_rados *r, const char *oid)
{
	if (!r || !oid)
		return -EINVAL;
	try {
		return bl::ceph::remove(r->io, oid);
	} catch (...) {
		return -ENOMEM;
	}
}

int bl_rados_set_alloc_hint(struct bl_rados *r, uint64_t object_size,
			    uint64_t write_size, uint32_t flags)
{
	if (!r || (flags & ~uint32_t(BL_RADOS_HINT_ALL)))
		return -EINVAL;
	try {
		std::lock_guard<std::mutex> g(r->mu);

		r->hint.object_size = object_size;
		r->hint.write_size = write_size;
		r->hint.flags = flags;
	} catch (...) {	// std::system_error from the lock
		return -EIO;
	}
	return 0;
}

int bl_rados_set_namespace(struct bl_rados *r, const char *nspace)
{
	if (!r)
		return -EINVAL;
	try {
		rados_ioctx_set_namespace(r->ioc, nspace);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
	return 0;
}

int bl_rados_set_locator(struct bl_rados *r, const char *key)
{
	if (!r)
		return -EINVAL;
	try {
		rados_ioctx_locator_set_key(r->ioc, key);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
	return 0;
}

void *bl_rados_cluster(struct bl_rados *r)
{
	return r ? r->cluster : nullptr;
}

void *bl_rados_ioctx(struct bl_rados *r)
{
	return r ? r->ioc : nullptr;
}

int bl_rados_list(struct bl_rados *r, const char *prefix, bl_rados_list_cb cb,
		  void *arg)
{
	if (!r || !cb)
		return -EINVAL;
	size_t plen = prefix ? std::strlen(prefix) : 0;
	try {
		// the iterator lists page by page: the names of the current
		// page only are held, whatever the pool's size
		for (auto it = r->io.nobjects_begin(); it != r->io.nobjects_end();
		     ++it) {
			const std::string &oid = it->get_oid();

			if (plen && oid.compare(0, plen, prefix) != 0)
				continue;
			int e = cb(oid.c_str(), it->get_nspace().c_str(),
				   it->get_locator().c_str(), arg);
			if (e)
				return e;
		}
		return 0;
	} catch (const std::system_error &x) {
		// what librados' iterator throws for rados_nobjects_list_next's
		// error (-ETIMEDOUT, -ENOENT for a pool that went ...)
		int e = x.code().value();
		return e > 0 ? -e : -EIO;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

uint64_t bl_rados_copied_bytes(void)
{
	return g_copied.load(std::memory_order_relaxed);
}

} // extern "C"
