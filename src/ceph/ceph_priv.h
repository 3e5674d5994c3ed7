/* SPDX-License-Identifier: MIT */
/*
 * ceph_priv.h - what the files of the Ceph bridge share: the handle and op
 * structures, the aio machinery, the helpers of each layer.  Not
 * installed; nothing here is exported (-fvisibility=hidden and the
 * version script keep it local).  C++ only.
 */
#ifndef BUFFERLIST_CEPH_PRIV_H
#define BUFFERLIST_CEPH_PRIV_H

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

#include <bufferlist/ceph.hpp>
#include <bufferlist/ptr.h>
#include <bufferlist/raw.h>
#include "ceph_int.h"

namespace bl_ceph_priv {

// Bytes the bridge copied: only an aio write of thread-local raws copies
// (aio_write_common), and the tests prove that no other path does.
extern std::atomic<uint64_t> g_copied;
// Ceph buffers held by claimed raws (bl__ceph_live_ptrs()).
extern std::atomic<long> g_live_ptrs;

// Ceph's lengths and offsets are unsigned 32-bit; 2 GiB segments also stay
// clear of the signed int lengths some Ceph paths use.
constexpr size_t k_seg_max = size_t(1) << 31;
// A read longer than librados takes in one goes in pieces of this size.
constexpr size_t k_read_chunk = size_t(1) << 30;

// A list on the stack that always gets cleared.
struct tmp_list {
	struct bl_list l;
	tmp_list() noexcept { bl_list_init(&l); }
	~tmp_list() { bl_list_clear(&l); }
	tmp_list(const tmp_list &) = delete;
	tmp_list &operator=(const tmp_list &) = delete;
};

/*
 * The synchronous calls' frame: @l as a Ceph list sharing its bytes (held
 * on our side until @f returns), exceptions mapped to -errno.
 */
template <typename F>
int with_ceph_list(const struct bl_list *l, F f) noexcept
{
	try {
		::ceph::bufferlist bl;
		bl::ceph::list_ref hold;
		int e = bl::ceph::to_ceph(l, &bl, &hold);

		return e < 0 ? e : f(bl);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

/*
 * An aio op goes from the submitting thread to a librados thread through
 * librados' own locks, which ThreadSanitizer cannot see (Debian's Ceph is
 * not instrumented): without saying so, everything the callback does with
 * the op would be reported as a race.  handoff() is the last thing the
 * submitter does with an op, taken_over() the first thing the callback
 * does; both are nothing outside TSan builds.
 */
inline void handoff(const void *op)
{
#if defined(__SANITIZE_THREAD__)
	__tsan_release(const_cast<void *>(op));
#else
	(void)op;
#endif
}

inline void taken_over(const void *op)
{
#if defined(__SANITIZE_THREAD__)
	__tsan_acquire(const_cast<void *>(op));
#else
	(void)op;
#endif
}

// bl_rados_set_alloc_hint()'s three values; all 0 = no hint.
struct alloc_hint {
	uint64_t object_size = 0, write_size = 0;
	uint32_t flags = 0;
	bool on() const { return object_size || write_size || flags; }
};

static_assert(BL_RADOS_HINT_SEQUENTIAL_WRITE ==
		      LIBRADOS_ALLOC_HINT_FLAG_SEQUENTIAL_WRITE &&
	      BL_RADOS_HINT_RANDOM_WRITE == LIBRADOS_ALLOC_HINT_FLAG_RANDOM_WRITE &&
	      BL_RADOS_HINT_SEQUENTIAL_READ ==
		      LIBRADOS_ALLOC_HINT_FLAG_SEQUENTIAL_READ &&
	      BL_RADOS_HINT_RANDOM_READ == LIBRADOS_ALLOC_HINT_FLAG_RANDOM_READ &&
	      BL_RADOS_HINT_APPEND_ONLY == LIBRADOS_ALLOC_HINT_FLAG_APPEND_ONLY &&
	      BL_RADOS_HINT_IMMUTABLE == LIBRADOS_ALLOC_HINT_FLAG_IMMUTABLE &&
	      BL_RADOS_HINT_SHORTLIVED == LIBRADOS_ALLOC_HINT_FLAG_SHORTLIVED &&
	      BL_RADOS_HINT_LONGLIVED == LIBRADOS_ALLOC_HINT_FLAG_LONGLIVED &&
	      BL_RADOS_HINT_COMPRESSIBLE ==
		      LIBRADOS_ALLOC_HINT_FLAG_COMPRESSIBLE &&
	      BL_RADOS_HINT_INCOMPRESSIBLE ==
		      LIBRADOS_ALLOC_HINT_FLAG_INCOMPRESSIBLE,
	      "BL_RADOS_HINT_* are librados' values, passed through as they are");

// A read op's step: what librados fills in, and where the caller wants it.
enum rkind { R_READ, R_STAT, R_XATTR, R_OMAP, R_CMPEXT };

struct read_step {
	rkind k;
	int rval = 0;			// librados writes the step's result here
	int *prval = nullptr;
	::ceph::bufferlist bl;		// read, getxattr: the answer
	struct bl_list *out = nullptr;
	uint64_t st_size = 0;		// stat
	std::time_t st_mtime = 0;
	uint64_t *size = nullptr;
	int64_t *mtime = nullptr;
	std::map<std::string, ::ceph::bufferlist> vals;	// omap
	bool more = false;
	int *pmore = nullptr;
	bl_rados_omap_cb cb = nullptr;
	void *arg = nullptr;

	explicit read_step(rkind kk) : k(kk) {}
};

// Gives each pair of @vals to @cb as a list over Ceph's buffers.
int deliver_omap(std::map<std::string, ::ceph::bufferlist> &vals,
		 bl_rados_omap_cb cb, void *arg);

/*
 * What a read op's librados steps point at: the steps live on the heap
 * (librados keeps their addresses) and go with the body, which an aio
 * submission moves into its aio_op so that the op itself may be released.
 */
struct read_body {
	std::vector<std::unique_ptr<read_step>> steps;
	bl::ceph::list_ref hold;	// cmpext bytes
	::ceph::bufferlist outbl;	// librados' own out list, unused

	// The op's result from librados' @res, outputs written on success.
	int finish(int res) noexcept
	{
		if (res > 0)
			res = 0;
		for (auto &sp : steps) {
			read_step &st = *sp;
			int rv = st.rval > 0 ? 0 : st.rval;

			if (res == 0 && rv == 0) {
				try {
					rv = finish_step(st);
				} catch (const std::bad_alloc &) {
					rv = -ENOMEM;
				} catch (...) {
					rv = -EIO;
				}
				// a callback's own nonzero value is the step's
				if (rv < 0 && st.k != R_OMAP)
					res = rv;
				else if (rv == -ENOMEM || rv == -EIO)
					res = rv;
			}
			if (st.prval)
				*st.prval = rv;
		}
		return res;
	}

	static int finish_step(read_step &st)
	{
		switch (st.k) {
		case R_READ:
		case R_XATTR:
			return bl::ceph::from_ceph(std::move(st.bl), st.out);
		case R_STAT:
			if (st.size)
				*st.size = st.st_size;
			if (st.mtime)
				*st.mtime = int64_t(st.st_mtime);
			return 0;
		case R_OMAP:
			if (st.pmore)
				*st.pmore = st.more;
			return deliver_omap(st.vals, st.cb, st.arg);
		case R_CMPEXT:
			break;
		}
		return 0;
	}
};

// What a write call does with its list.
enum wkind { W_AT, W_FULL, W_APPEND };


} // namespace bl_ceph_priv

/*
 * The cluster and the pool are librados' C handles, so that a caller can
 * have them (bl_rados_cluster(), bl_rados_ioctx()); the C++ IoCtx the
 * bridge works through is the same I/O context (from_rados_ioctx_t takes
 * a reference of its own), so both see one namespace and locator.
 */
struct bl_rados {
	rados_t cluster = nullptr;
	rados_ioctx_t ioc = nullptr;
	librados::IoCtx io;
	std::mutex mu;
	// aio operations whose completion callback has not returned yet
	std::condition_variable idle;
	unsigned long inflight = 0;
	bl_ceph_priv::alloc_hint hint;	// under mu: a write takes it whole
};

struct bl_rados_write_op {
	librados::ObjectWriteOperation op;
	bl::ceph::list_ref hold;	// the bytes of every list step
	bool spent = false;
};

struct bl_rados_read_op {
	librados::ObjectReadOperation op;
	std::unique_ptr<bl_ceph_priv::read_body> body{new bl_ceph_priv::read_body};	// null once spent
};

struct bl_rados_completion {
	std::mutex mu;
	std::condition_variable cv;
	bool done = false;
	int64_t res = 0;
};

namespace bl_ceph_priv {

// The handle whose aio callback this thread is running, if any: a flush
// from there would wait for itself.
extern thread_local struct bl_rados *t_in_callback;

struct in_callback_of {
	struct bl_rados *prev;
	explicit in_callback_of(struct bl_rados *r) noexcept
		: prev(t_in_callback)
	{
		t_in_callback = r;
	}
	~in_callback_of() { t_in_callback = prev; }
};

// One aio operation, from submission until its callback has run.
struct aio_op {
	struct bl_rados *r;
	librados::AioCompletion *c = nullptr;
	bl::ceph::list_ref hold;	// writes: the caller's bytes
	::ceph::bufferlist bl;		// writes: what librados got; reads: the answer
	struct bl_list *out = nullptr;	// reads
	uint64_t st_size = 0;		// stat: librados' answer ...
	std::time_t st_mtime = 0;
	uint64_t *size = nullptr;	// ... and where the caller wants it
	int64_t *mtime = nullptr;
	std::unique_ptr<read_body> body;	// read ops
	bl_rados_cb cb;
	bl_rados_cb64 cb64 = nullptr;	// reads with a 64-bit result
	void *arg;

	aio_op(struct bl_rados *rr, bl_rados_cb f, void *a) : r(rr), cb(f), arg(a) {}
};

alloc_hint hint_of(struct bl_rados *r);

// The hint and the write as one compound OSD operation.
void hinted_write_op(librados::ObjectWriteOperation &op, const alloc_hint &h,
		     ::ceph::bufferlist &bl, uint64_t off, wkind k);

// Drops an aio op's count on @r, waking bl_rados_close() at 0.
void op_done(struct bl_rados *r);

// The librados completion callback of every aio op of the C API.
void aio_done(librados::completion_t, void *arg) noexcept;

// Queues @op with @submit(op), which calls handoff(op) just before its
// librados call and touches @op no more; on failure @op is deleted here
// and the callback never runs.  Whatever in @submit can throw comes before
// its librados call: an exception means librados queued nothing.
template <typename F>
int aio_submit(aio_op *op, F submit)
{
	struct bl_rados *r = op->r;
	int e;

	try {
		op->c = librados::Rados::aio_create_completion(op, aio_done);
	} catch (...) {
		op->c = nullptr;
	}
	if (!op->c) {
		delete op;
		return -ENOMEM;
	}
	{
		std::lock_guard<std::mutex> g(r->mu);
		r->inflight++;
	}
	// from here the callback may run (and free op) at any moment
	librados::AioCompletion *c = op->c;
	try {
		e = submit(op);
	} catch (const std::bad_alloc &) {
		e = -ENOMEM;
	} catch (...) {
		e = -EIO;
	}
	if (e < 0) {
		// librados refused before queueing: no callback will come
		delete op;
		c->release();
		op_done(r);
		return e;
	}
	return 0;
}

// Does @l hold a thread-local raw?
bool has_thread_local(const struct bl_list *l) noexcept;

/*
 * An op's references may be dropped on a librados thread (an aio
 * submission moves them there), where a thread-local raw may not be
 * touched: such a list goes to Ceph as a copy in one shared raw, as the
 * aio writes do.  @to_ceph gets @l, or that copy.
 */
int to_ceph_shared(const struct bl_list *l, ::ceph::bufferlist *out,
		   bl::ceph::list_ref *hold) noexcept;

// @n keys, none NULL (a NULL array only with @n 0).
bool keys_ok(const char *const *keys, size_t n) noexcept;

// The pairs as librados' map, the values sharing the lists' bytes.
int omap_map(const char *const *keys, const struct bl_list *const *vals,
	     size_t n, std::map<std::string, ::ceph::bufferlist> &m,
	     bl::ceph::list_ref &hold, bool for_op);

// Exceptions of a call into librados as -errno.
template <typename F>
int guarded(F f) noexcept
{
	try {
		return f();
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

} // namespace bl_ceph_priv

#endif /* BUFFERLIST_CEPH_PRIV_H */
