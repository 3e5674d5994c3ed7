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
 * thread-safe (one owner at a time, like a list).
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

} // namespace ceph
} // namespace bl

#endif /* BUFFERLIST_CEPH_HPP */
