// SPDX-License-Identifier: MIT
/*
 * ceph.hpp - the zero-copy bridge between struct bl_list and
 * ceph::bufferlist, for C++ code that uses librados itself
 * (library libbufferlist_ceph, pkg-config bufferlist-ceph; include
 * <rados/librados.hpp> or <rados/buffer.h> from libradospp-dev).
 *
 * Every function here is noexcept: failures come back as a negative errno
 * (-ENOMEM when memory runs out, -EIO for any other exception, librados'
 * own -errno passed through), and a failed call leaves its arguments as
 * they were.  The C API in ceph.h is built on these.
 */
#ifndef BUFFERLIST_CEPH_HPP
#define BUFFERLIST_CEPH_HPP

#include <cstdint>
#include <ctime>
#include <string>
#include <sys/types.h>
#include <rados/buffer.h>
#include <rados/librados.hpp>
#include <bufferlist/common.h>
#include <bufferlist/list.h>
#include <bufferlist/ceph.h>

namespace bl {
namespace ceph {

class list_ref;

/**
 * to_ceph() - appends to @out one Ceph segment per segment of @l (split
 * where one is longer than 2 GiB, since Ceph's lengths are 32-bit), each
 * made with ceph::buffer::create_static over @l's own bytes: no byte is
 * copied.  Ceph never frees those bytes; @hold gains a reference to every
 * segment of @l (shares) and must be kept until librados is done with
 * @out (for aio: until the completion).  @l itself may change or go away
 * right after the call.
 * Return: 0; -ENOMEM; -E2BIG when @out would exceed Ceph's 32-bit length;
 * -EINVAL for a NULL argument.  On failure @out and @hold are unchanged.
 */
BL_API int to_ceph(const struct bl_list *l, ::ceph::bufferlist *out,
		   list_ref *hold) noexcept;

/**
 * list_ref - keeps the bytes of lists alive: it holds one reference to
 * every segment of the lists given to to_ceph() (shared, no copy) and
 * drops them when destroyed or reset().  Movable, not copyable; not
 * thread-safe (one owner at a time, like a list).  It serves librados'
 * own ops as well: to_ceph() each list into the ceph::bufferlist a step
 * of a librados::ObjectWriteOperation takes (write_full, omap_set,
 * setxattr ...) and keep the list_ref until the op is done (operate()
 * returned, or the aio completion); a read op's answers go into lists
 * with from_ceph().  No byte is copied either way.
 */
class BL_API list_ref {
public:
	list_ref() noexcept;
	~list_ref();
	list_ref(list_ref &&o) noexcept;
	list_ref &operator=(list_ref &&o) noexcept;
	list_ref(const list_ref &) = delete;
	list_ref &operator=(const list_ref &) = delete;

	/** drops every reference held. */
	void reset() noexcept;
	/** bytes held. */
	size_t length() const noexcept;
	/** the held segments (borrowed, valid until reset or destruction). */
	const struct bl_list *list() const noexcept { return &l_; }

private:
	friend int to_ceph(const struct bl_list *, ::ceph::bufferlist *,
			   list_ref *) noexcept;
	struct bl_list l_;
};

/**
 * from_ceph() - appends the bytes of @in to @out without copying: each
 * ceph::buffer::ptr of @in becomes a claimed raw (bl_raw_claim) whose free
 * callback drops that Ceph buffer; empty ptrs are skipped.  Takes: @in
 * ends empty.  The Ceph buffers are released when the last slice of them
 * in any list goes, on that thread.
 * Return: 0, -ENOMEM or -EINVAL; on failure @in and @out are unchanged.
 */
BL_API int from_ceph(::ceph::bufferlist &&in, struct bl_list *out) noexcept;

/*
 * Object calls over an open IoCtx, synchronous, with the semantics of the
 * C functions of the same names in ceph.h (bl_rados_write ...): writes
 * share @l's bytes for the duration of the call, reads append Ceph's
 * buffers to @out.  Return: as there.
 */
BL_API int write(librados::IoCtx &io, const std::string &oid,
		 const struct bl_list *l, uint64_t off) noexcept;
BL_API int write_full(librados::IoCtx &io, const std::string &oid,
		      const struct bl_list *l) noexcept;
BL_API int append(librados::IoCtx &io, const std::string &oid,
		  const struct bl_list *l) noexcept;
BL_API ssize_t read(librados::IoCtx &io, const std::string &oid,
		    uint64_t off, size_t len, struct bl_list *out) noexcept;
BL_API int stat(librados::IoCtx &io, const std::string &oid, uint64_t *size,
		std::time_t *mtime) noexcept;
BL_API int remove(librados::IoCtx &io, const std::string &oid) noexcept;

/*
 * The same in the background, with the caller's librados::AioCompletion
 * @c (its callback or wait_for_complete() tells the end; the caller
 * releases it).  Return: 0 when librados queued the op, or a negative
 * errno (-EINVAL for a NULL argument, and the errors of the synchronous
 * call) when it did not; then @c never completes and nothing changed.
 *
 * Writes share @l's bytes: @hold must be empty (-EINVAL otherwise) and
 * takes references to them when the op is queued; keep it until @c is
 * complete, then destroy or reset() it.  @l itself may change or go right
 * after the call.
 */
BL_API int aio_write(librados::IoCtx &io, const std::string &oid,
		     librados::AioCompletion *c, const struct bl_list *l,
		     uint64_t off, list_ref *hold) noexcept;
BL_API int aio_write_full(librados::IoCtx &io, const std::string &oid,
			  librados::AioCompletion *c, const struct bl_list *l,
			  list_ref *hold) noexcept;
BL_API int aio_append(librados::IoCtx &io, const std::string &oid,
		      librados::AioCompletion *c, const struct bl_list *l,
		      list_ref *hold) noexcept;
/*
 * aio_read() fills *@pbl (kept alive by the caller until @c is complete);
 * from_ceph(std::move(*pbl), out) then moves the bytes into a list without
 * a copy.  aio_stat() writes *@size and *@mtime (both required) before @c
 * completes successfully.
 */
BL_API int aio_read(librados::IoCtx &io, const std::string &oid,
		    librados::AioCompletion *c, uint64_t off, size_t len,
		    ::ceph::bufferlist *pbl) noexcept;
BL_API int aio_stat(librados::IoCtx &io, const std::string &oid,
		    librados::AioCompletion *c, uint64_t *size,
		    std::time_t *mtime) noexcept;
BL_API int aio_remove(librados::IoCtx &io, const std::string &oid,
		      librados::AioCompletion *c) noexcept;

/**
 * unique_list - owns one struct bl_list: the list is initialised empty
 * and cleared by the destructor, so no path (an early return, an
 * exception) leaks its references.  Move-only: a move leaves the source
 * empty and usable.  Converts to struct bl_list * for the C calls
 * (bl_rados_read(r, oid, 0, n, l)); the pointer is borrowed.  Not
 * thread-safe (one owner at a time, like a list).  Header-only: it calls
 * libbufferlist's own functions.
 */
class unique_list {
public:
	unique_list() noexcept { bl_list_init(&l_); }
	~unique_list() { bl_list_clear(&l_); }
	unique_list(unique_list &&o) noexcept
	{
		bl_list_init(&l_);
		bl_list_swap(&l_, &o.l_);
	}
	unique_list &operator=(unique_list &&o) noexcept
	{
		if (this != &o) {
			bl_list_clear(&l_);
			bl_list_swap(&l_, &o.l_);
		}
		return *this;
	}
	unique_list(const unique_list &) = delete;
	unique_list &operator=(const unique_list &) = delete;

	struct bl_list *get() noexcept { return &l_; }
	const struct bl_list *get() const noexcept { return &l_; }
	operator struct bl_list *() noexcept { return &l_; }
	operator const struct bl_list *() const noexcept { return &l_; }
	size_t length() const noexcept { return bl_list_length(&l_); }
	/** drops every segment (bl_list_clear()). */
	void clear() noexcept { bl_list_clear(&l_); }

private:
	struct bl_list l_;
};

} // namespace ceph
} // namespace bl

#endif /* BUFFERLIST_CEPH_HPP */
