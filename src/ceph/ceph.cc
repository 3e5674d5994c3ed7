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
 * No exception leaves this file: every entry point catches std::bad_alloc
 * as -ENOMEM and anything else as -EIO.
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

namespace {

// Bytes this file copied: only an aio write of thread-local raws copies
// (aio_write_common), and the tests prove that no other path does.
std::atomic<uint64_t> g_copied{0};
std::atomic<long> g_live_ptrs{0};

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

void drop_ceph_ptr(void *, size_t, void *opaque)
{
	delete static_cast<::ceph::buffer::ptr *>(opaque);
	g_live_ptrs.fetch_sub(1, std::memory_order_relaxed);
}

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

template <typename F>
int noexcept_call(F f) noexcept
{
	try {
		return f();
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
	return noexcept_call([&] { return io.aio_read(oid, c, pbl, len, off); });
}

int aio_stat(librados::IoCtx &io, const std::string &oid,
	     librados::AioCompletion *c, uint64_t *size,
	     std::time_t *mtime) noexcept
{
	if (!c || !size || !mtime)
		return -EINVAL;
	return noexcept_call([&] { return io.aio_stat(oid, c, size, mtime); });
}

int aio_remove(librados::IoCtx &io, const std::string &oid,
	       librados::AioCompletion *c) noexcept
{
	if (!c)
		return -EINVAL;
	return noexcept_call([&] { return io.aio_remove(oid, c); });
}

} // namespace ceph
} // namespace bl

/* ---- the C API ------------------------------------------------------------ */

namespace {

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

} // namespace

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
	alloc_hint hint;	// under mu: a write takes it whole
};

namespace {

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

} // namespace

struct bl_rados_write_op {
	librados::ObjectWriteOperation op;
	bl::ceph::list_ref hold;	// the bytes of every list step
	bool spent = false;
};

struct bl_rados_read_op {
	librados::ObjectReadOperation op;
	std::unique_ptr<read_body> body{new read_body};	// null once spent
};

struct bl_rados_completion {
	std::mutex mu;
	std::condition_variable cv;
	bool done = false;
	int64_t res = 0;
};

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

// What a write call does with its list.
enum wkind { W_AT, W_FULL, W_APPEND };

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

// The handle whose aio callback this thread is running, if any: a flush
// from there would wait for itself.
thread_local struct bl_rados *t_in_callback = nullptr;

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

int bl_rados_setxattr(struct bl_rados *r, const char *oid, const char *name,
		      const struct bl_list *val)
{
	if (!r || !oid || !name)
		return -EINVAL;
	return with_ceph_list(val, [&](::ceph::bufferlist &bl) {
		return r->io.setxattr(oid, name, bl);
	});
}

ssize_t bl_rados_getxattr(struct bl_rados *r, const char *oid,
			  const char *name, struct bl_list *out)
{
	if (!r || !oid || !name || !out)
		return -EINVAL;
	try {
		::ceph::bufferlist bl;
		int e = r->io.getxattr(oid, name, bl);
		size_t n;

		if (e < 0)
			return e;
		n = bl.length();
		e = bl::ceph::from_ceph(std::move(bl), out);
		return e < 0 ? e : ssize_t(n);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int bl_rados_rmxattr(struct bl_rados *r, const char *oid, const char *name)
{
	if (!r || !oid || !name)
		return -EINVAL;
	try {
		return r->io.rmxattr(oid, name);
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

int bl_rados_getxattrs(struct bl_rados *r, const char *oid,
		       bl_rados_xattr_cb cb, void *arg)
{
	if (!r || !oid || !cb)
		return -EINVAL;
	try {
		std::map<std::string, ::ceph::bufferlist> attrs;
		int e = r->io.getxattrs(oid, attrs);

		if (e < 0)
			return e;
		for (auto &a : attrs) {
			tmp_list v;

			e = bl::ceph::from_ceph(std::move(a.second), &v.l);
			if (e < 0)
				return e;
			e = cb(a.first.c_str(), &v.l, arg);
			if (e)
				return e;
		}
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
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

} // extern "C"

/* ---- omap ------------------------------------------------------------------ */

namespace {

// @n keys, none NULL (a NULL array only with @n 0).
bool keys_ok(const char *const *keys, size_t n) noexcept
{
	if (n && !keys)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!keys[i])
			return false;
	return true;
}

// The pairs as librados' map, the values sharing the lists' bytes (held
// by @hold); a key given twice keeps its last value.
int omap_map(const char *const *keys, const struct bl_list *const *vals,
	     size_t n, std::map<std::string, ::ceph::bufferlist> &m,
	     bl::ceph::list_ref &hold, bool for_op)
{
	if (!keys_ok(keys, n) || (n && !vals))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!vals[i])
			return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		::ceph::bufferlist bl;
		int e = for_op ? to_ceph_shared(vals[i], &bl, &hold)
			       : bl::ceph::to_ceph(vals[i], &bl, &hold);

		if (e < 0)
			return e;
		m[keys[i]] = std::move(bl);
	}
	return 0;
}

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

} // namespace

extern "C" {

int bl_rados_omap_set(struct bl_rados *r, const char *oid,
		      const char *const *keys,
		      const struct bl_list *const *vals, size_t n)
{
	if (!r || !oid)
		return -EINVAL;
	return guarded([&] {
		std::map<std::string, ::ceph::bufferlist> m;
		bl::ceph::list_ref hold;
		int e = omap_map(keys, vals, n, m, hold, false);

		if (e < 0 || n == 0)
			return e;
		return r->io.omap_set(oid, m);
	});
}

int bl_rados_omap_get(struct bl_rados *r, const char *oid,
		      const char *const *keys, size_t n, bl_rados_omap_cb cb,
		      void *arg)
{
	if (!r || !oid || !cb || !keys_ok(keys, n))
		return -EINVAL;
	return guarded([&] {
		std::set<std::string> ks;
		std::map<std::string, ::ceph::bufferlist> vals;

		for (size_t i = 0; i < n; i++)
			ks.insert(keys[i]);
		int e = r->io.omap_get_vals_by_keys(oid, ks, &vals);
		return e < 0 ? e : deliver_omap(vals, cb, arg);
	});
}

int bl_rados_omap_get_range(struct bl_rados *r, const char *oid,
			    const char *start_after, const char *prefix,
			    uint64_t max, int *more, bl_rados_omap_cb cb,
			    void *arg)
{
	if (!r || !oid || !cb || max == 0)
		return -EINVAL;
	return guarded([&] {
		std::map<std::string, ::ceph::bufferlist> vals;
		bool m = false;
		int e = r->io.omap_get_vals2(oid, start_after ? start_after : "",
					     prefix ? prefix : "", max, &vals,
					     &m);
		if (e < 0)
			return e;
		if (more)
			*more = m;
		return deliver_omap(vals, cb, arg);
	});
}

int bl_rados_omap_rm_keys(struct bl_rados *r, const char *oid,
			  const char *const *keys, size_t n)
{
	if (!r || !oid || !keys_ok(keys, n))
		return -EINVAL;
	if (n == 0)
		return 0;
	return guarded([&] {
		std::set<std::string> ks;

		for (size_t i = 0; i < n; i++)
			ks.insert(keys[i]);
		return r->io.omap_rm_keys(oid, ks);
	});
}

int bl_rados_omap_clear(struct bl_rados *r, const char *oid)
{
	if (!r || !oid)
		return -EINVAL;
	return guarded([&] { return r->io.omap_clear(oid); });
}

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

/* ---- completions ----------------------------------------------------------- */

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


uint64_t bl_rados_copied_bytes(void)
{
	return g_copied.load(std::memory_order_relaxed);
}

} // extern "C"
