/* SPDX-License-Identifier: MIT */
/*
 * ceph.h - object I/O with librados straight from and into struct bl_list,
 * from C (library libbufferlist_ceph, pkg-config bufferlist-ceph).
 *
 * Writes hand librados one Ceph segment per list segment, each pointing at
 * the list's own bytes (no copy); the bridge holds references to those
 * bytes until librados is done with them, so the caller may clear, append
 * to or destroy its list right after any call returns, also after an aio
 * call.  It must not write into the bytes themselves (bl_list_copy_in,
 * writes through bl_ptr_data ...) until the operation completes, and the
 * memory under static segments (bl_raw_create_static) must stay alive as
 * long as for any other reference.
 *
 * Reads return Ceph's own receive buffers as claimed raws (no copy): each
 * segment appended to @out holds one reference to a Ceph buffer, dropped
 * when the last slice of it goes, on whatever thread that happens.
 *
 * Errors: librados' negative errno, passed through (-ENOENT for a missing
 * object or pool; for writes -EMSGSIZE over the OSD's osd_max_write_size,
 * 90 MiB by default, and -EFBIG past its osd_max_object_size, 128 MiB:
 * write larger data as several writes, and larger objects as several
 * objects ...);
 * -ENOMEM when memory runs out; -EIO for any other failure inside the
 * C++ code (no exception ever leaves the library); -EINVAL for a NULL
 * handle or object name.  A failed call leaves the caller's list as it was.
 *
 * Threads: one struct bl_rados may be used from several threads at once
 * (librados serialises what needs it); a list belongs to one thread at a
 * time as always.  Aio callbacks run on a librados thread.
 */
#ifndef BUFFERLIST_CEPH_H
#define BUFFERLIST_CEPH_H

#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>

BL_BEGIN_DECLS

/* A connected cluster handle and one pool's I/O context. */
struct bl_rados;

/**
 * bl_rados_open() - connect to a cluster as client.admin and open @pool.
 * @conf: a ceph.conf path; NULL searches as the ceph tools do ($CEPH_CONF,
 *        then /etc/ceph/ceph.conf, ~/.ceph/config, ./ceph.conf).  Options
 *        in $CEPH_ARGS apply on top (e.g. --client_mount_timeout 10).
 * @err:  NULL, or where the negative errno of a failure goes (-ENOENT when
 *        the pool or the configuration file does not exist, -ETIMEDOUT
 *        when no monitor answers within client_mount_timeout ...).
 * Return: new (close with bl_rados_close()), or NULL with *@err set (when
 * @err is not NULL; errno is not set): -EINVAL (@pool is NULL), -ENOMEM,
 * -EIO, or librados' error (-ENOENT, -ETIMEDOUT, -EACCES, -EPERM ...).
 * *@err is 0 on success.
 */
BL_API struct bl_rados *bl_rados_open(const char *conf, const char *pool,
				      int *err);

/**
 * bl_rados_open2() - bl_rados_open() as client @id, with configuration
 * options set by the caller.
 * @conf:    as bl_rados_open().
 * @id:      the client's name, "NAME" or "client.NAME" (as the ceph tools'
 *           --id and --name); NULL: admin.  Its key is looked up in the
 *           keyring the configuration names.
 * @pool:    the pool to open.
 * @options: NULL, or pairs of option name and value, ended by a NULL name
 *           ({ "rados_osd_op_timeout", "10", NULL }), set after @conf and
 *           $CEPH_ARGS are read, so they win.  Borrowed for the call.
 *           rados_osd_op_timeout and rados_mon_op_timeout (seconds, 0 =
 *           none, the default) bound every operation of the handle, aio
 *           included, which then fails with -ETIMEDOUT: without them an
 *           operation on an OSD that stopped answering waits for it
 *           forever, and so does bl_rados_close().  client_mount_timeout
 *           bounds the connection itself (default 300 s).
 * @err:     as bl_rados_open().
 * Return: new (close with bl_rados_close()), or NULL with *@err set: the
 * errors of bl_rados_open(), -EINVAL (@options has a name without a
 * value, or librados refuses a value), -ENOENT (no such option; no key
 * for @id in the keyring), -EACCES or -EPERM (@id may not connect or
 * open @pool).
 */
BL_API struct bl_rados *bl_rados_open2(const char *conf, const char *id,
				       const char *pool,
				       const char *const *options, int *err);

/**
 * bl_rados_close() - waits until every aio callback issued through @r has
 * returned, then disconnects and frees @r.  NULL is a no-op.  Must not be
 * called from an aio callback of @r.  Lists filled by reads stay valid.
 * The wait is as long as librados takes to complete or time out what is
 * in flight: unbounded when the OSD stopped answering and the handle has
 * no rados_osd_op_timeout (bl_rados_open2()).  To bound it, call
 * bl_rados_aio_flush() with a timeout first; a handle whose flush timed
 * out may be left open (a process about to exit loses nothing).
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_close(struct bl_rados *r);

/**
 * bl_rados_aio_flush() - waits until every aio callback issued through @r
 * so far, and any issued while it waits, has returned ("aio flush"), for
 * at most @timeout_ms milliseconds (negative: no limit; 0: only looks).
 * Return: 0 (nothing in flight), or -errno: -EINVAL (@r is NULL),
 * -ETIMEDOUT (operations still in flight after @timeout_ms), -EDEADLK
 * (called from an aio callback of @r, which would wait for itself), -EIO
 * (the handle's lock failed).
 */
BL_API int bl_rados_aio_flush(struct bl_rados *r, int timeout_ms);

/**
 * bl_rados_write() - write all of @l at byte @off of object @oid (created
 * if missing; a gap before @off reads as zeros).
 * Shares: @l's bytes are referenced, not copied, until the call returns.
 * Return: 0, or -errno: -EINVAL (@r, @oid or @l is NULL), -E2BIG (@l is
 * longer than 4 GiB - 1), -EMSGSIZE (@l is longer than the OSD's
 * osd_max_write_size), -EFBIG (the object would grow past the OSD's
 * osd_max_object_size), -ENOMEM, -EIO, or librados' error (-ENOENT: the
 * pool is gone; -EDQUOT, -ENOSPC, -EACCES, -ETIMEDOUT ...).
 */
BL_API int bl_rados_write(struct bl_rados *r, const char *oid,
			  const struct bl_list *l, uint64_t off);

/**
 * bl_rados_write_full() - replace object @oid's contents with @l.
 * Shares, as bl_rados_write().
 * Return: as bl_rados_write().
 */
BL_API int bl_rados_write_full(struct bl_rados *r, const char *oid,
			       const struct bl_list *l);

/**
 * bl_rados_append() - append all of @l to the end of object @oid (created
 * if missing).  Shares, as bl_rados_write().
 * Return: as bl_rados_write().
 */
BL_API int bl_rados_append(struct bl_rados *r, const char *oid,
			   const struct bl_list *l);

/**
 * bl_rados_read() - appends bytes [@off, @off + @len) of object @oid to
 * @out (fewer when the object ends first, none when @off is at or past
 * its end).  @len 0 reads nothing and asks no server.  librados reads
 * at most 2 GiB - 1 in one operation, so a longer @len goes as several
 * reads of 1 GiB, one after the other: 2 GiB and more come back whole,
 * but not atomically (a write meanwhile may show in part of them).
 * Takes Ceph's buffers into @out (claimed raws, no copy).
 * Return: the bytes appended, or -errno: -EINVAL (@r, @oid or @out is
 * NULL), -ENOMEM, -EIO, or librados' error (-ENOENT: no such object or
 * pool; -ETIMEDOUT ...); on failure @out is unchanged.
 */
BL_API ssize_t bl_rados_read(struct bl_rados *r, const char *oid,
			     uint64_t off, size_t len, struct bl_list *out);

/**
 * bl_rados_stat() - size and modification time (seconds since the epoch)
 * of object @oid; either pointer may be NULL.
 * Return: 0, or -errno: -EINVAL (@r or @oid is NULL), -ENOMEM, -EIO, or
 * librados' error (-ENOENT: no such object; -ETIMEDOUT ...); on failure
 * *@size and *@mtime are not written.
 */
BL_API int bl_rados_stat(struct bl_rados *r, const char *oid, uint64_t *size,
			 int64_t *mtime);

/**
 * bl_rados_remove() - delete object @oid.
 * Return: 0, or -errno: -EINVAL (@r or @oid is NULL), -ENOMEM, -EIO, or
 * librados' error (-ENOENT: no such object; -ETIMEDOUT ...).
 */
BL_API int bl_rados_remove(struct bl_rados *r, const char *oid);

/*
 * Allocation hints: what the OSD should expect of the objects written
 * through a handle.  BlueStore sizes its checksum chunks and blobs by the
 * expected write size, so a 4 MiB hint turns a 4 MiB object's 1024
 * per-4 KiB checksums into one and saves the OSD CPU per byte; rados bench
 * sends the same hint with every write (see bl_rados_set_alloc_hint()).
 * The flags are librados' LIBRADOS_ALLOC_HINT_FLAG_* values.
 */
#define BL_RADOS_HINT_SEQUENTIAL_WRITE	0x001u
#define BL_RADOS_HINT_RANDOM_WRITE	0x002u
#define BL_RADOS_HINT_SEQUENTIAL_READ	0x004u
#define BL_RADOS_HINT_RANDOM_READ	0x008u
#define BL_RADOS_HINT_APPEND_ONLY	0x010u
#define BL_RADOS_HINT_IMMUTABLE		0x020u
#define BL_RADOS_HINT_SHORTLIVED	0x040u
#define BL_RADOS_HINT_LONGLIVED		0x080u
#define BL_RADOS_HINT_COMPRESSIBLE	0x100u
#define BL_RADOS_HINT_INCOMPRESSIBLE	0x200u
#define BL_RADOS_HINT_ALL		0x3ffu

/**
 * bl_rados_set_alloc_hint() - from now on every write through @r (sync
 * and aio: write, write_full, append) carries an allocation hint: the object
 * is expected to grow to @object_size bytes in writes of @write_size
 * bytes, with @flags (BL_RADOS_HINT_*).  The hint goes in the same OSD
 * operation as the write (librados' set_alloc_hint2), so it costs no
 * round trip.  All three 0 turns hints off again (the default).  Safe to
 * call while other threads write through @r: each write carries either
 * the old or the new hint, whole.
 * Return: 0, or -EINVAL (@r NULL, or a flag outside BL_RADOS_HINT_ALL),
 * -EIO (the handle's lock failed; the hint is unchanged).
 */
BL_API int bl_rados_set_alloc_hint(struct bl_rados *r, uint64_t object_size,
				   uint64_t write_size, uint32_t flags);

/**
 * typedef bl_rados_cb - an aio completion: runs once, on a librados
 * thread, with the result (bytes read for reads, 0 for writes and
 * removes, or a negative errno).  It may issue new aio on the same handle
 * but must not close it, and should not block for long: it holds up the
 * completions behind it.
 */
typedef void (*bl_rados_cb)(int res, void *arg);

/*
 * The aio calls return 0 when the operation was queued (then @cb runs
 * exactly once, possibly before the call returns; a NULL @cb is fire and
 * forget), or a negative errno when it was not (then @cb never runs and
 * nothing changed).  The result passed to @cb has the errnos of the
 * synchronous call.
 */

/**
 * bl_rados_aio_write() - bl_rados_write() in the background.
 * Shares: the bridge holds references to @l's bytes until the completion,
 * so @l itself may be cleared or reused as soon as the call returns.
 * Copies instead when @l holds a thread-local raw (bl_raw_set_thread_local()):
 * the references go on a librados thread, where such a raw may not be
 * touched, so @l's bytes go as one copy (bl_rados_copied_bytes()).
 * Return: 0 (queued), or -errno: -EINVAL (@r, @oid or @l is NULL), -E2BIG
 * (@l longer than 4 GiB - 1), -ENOMEM, -EIO, or librados' refusal.
 */
BL_API int bl_rados_aio_write(struct bl_rados *r, const char *oid,
			      const struct bl_list *l, uint64_t off,
			      bl_rados_cb cb, void *arg);

/**
 * bl_rados_aio_write_full() - bl_rados_write_full() in the background.
 * Shares, or copies thread-local raws, as bl_rados_aio_write().
 * Return: as bl_rados_aio_write().
 */
BL_API int bl_rados_aio_write_full(struct bl_rados *r, const char *oid,
				   const struct bl_list *l, bl_rados_cb cb,
				   void *arg);

/**
 * bl_rados_aio_append() - bl_rados_append() in the background.
 * Shares, or copies thread-local raws, as bl_rados_aio_write().
 * Return: as bl_rados_aio_write().
 */
BL_API int bl_rados_aio_append(struct bl_rados *r, const char *oid,
			       const struct bl_list *l, bl_rados_cb cb,
			       void *arg);

/**
 * bl_rados_aio_read() - bl_rados_read() in the background.  @out is
 * appended to before @cb runs (unchanged when the read fails) and must
 * not be touched by the caller until then.  @len 0 completes at once
 * with 0 (@cb runs before the call returns).
 * Return: 0 (queued), or -errno: -EINVAL (@r, @oid or @out is NULL),
 * -EDOM (@len over 2 GiB - 1, more than librados reads in one operation:
 * bl_rados_read() reads such ranges in pieces), -ENOMEM, -EIO, or
 * librados' refusal; @cb gets the bytes read, bl_rados_read()'s errors,
 * or -EDOM when 2 GiB or more were read (@out is then unchanged:
 * bl_rados_aio_read2() gives such results).
 */
BL_API int bl_rados_aio_read(struct bl_rados *r, const char *oid,
			     uint64_t off, size_t len, struct bl_list *out,
			     bl_rados_cb cb, void *arg);

/**
 * bl_rados_aio_stat() - bl_rados_stat() in the background: *@size and
 * *@mtime (either may be NULL) are written before @cb runs, only when the
 * stat succeeded; they must stay valid until then.
 * Return: 0 (queued), or -errno: -EINVAL (@r or @oid is NULL), -ENOMEM,
 * -EIO, or librados' refusal; @cb gets 0 or bl_rados_stat()'s errors.
 */
BL_API int bl_rados_aio_stat(struct bl_rados *r, const char *oid,
			     uint64_t *size, int64_t *mtime, bl_rados_cb cb,
			     void *arg);

/**
 * bl_rados_aio_remove() - bl_rados_remove() in the background.
 * Return: 0 (queued), or -errno: -EINVAL (@r or @oid is NULL), -ENOMEM,
 * -EIO, or librados' refusal.
 */
BL_API int bl_rados_aio_remove(struct bl_rados *r, const char *oid,
			       bl_rados_cb cb, void *arg);

/*
 * Extended attributes of an object: values are lists, shared on the way
 * in and Ceph's own buffers on the way out (claimed raws), as object data.
 */

/**
 * bl_rados_setxattr() - sets attribute @name of object @oid (created if
 * missing) to the bytes of @val (may be empty).
 * Shares: @val's bytes are referenced, not copied, until the call returns.
 * Return: 0, or -errno: -EINVAL (@r, @oid, @name or @val is NULL), -E2BIG,
 * -ENOMEM, -EIO, or librados' error (-ENAMETOOLONG, -EFBIG for a value
 * over the OSD's limits, -ETIMEDOUT ...).
 */
BL_API int bl_rados_setxattr(struct bl_rados *r, const char *oid,
			     const char *name, const struct bl_list *val);

/**
 * bl_rados_getxattr() - appends the value of attribute @name of object
 * @oid to @out.  Takes Ceph's buffers into @out (no copy).
 * Return: the value's length, or -errno: -EINVAL (a NULL argument),
 * -ENODATA (no such attribute), -ENOENT (no such object), -ENOMEM, -EIO,
 * or librados' error; on failure @out is unchanged.
 */
BL_API ssize_t bl_rados_getxattr(struct bl_rados *r, const char *oid,
				 const char *name, struct bl_list *out);

/**
 * bl_rados_rmxattr() - removes attribute @name of object @oid.
 * Return: 0, or -errno: -EINVAL (a NULL argument), -ENOENT (no such
 * object), -ENOMEM, -EIO, or librados' error (the OSD removes a missing
 * attribute without an error).
 */
BL_API int bl_rados_rmxattr(struct bl_rados *r, const char *oid,
			    const char *name);

/**
 * typedef bl_rados_xattr_cb - one attribute: its name and value, both
 * borrowed for the call (bl_list_append_list() keeps the value without a
 * copy).  0 goes on; anything else stops, and is returned.
 */
typedef int (*bl_rados_xattr_cb)(const char *name, const struct bl_list *val,
				 void *arg);

/**
 * bl_rados_getxattrs() - calls @cb for every attribute of object @oid, in
 * name order, on the caller's thread, after one round trip.
 * Return: 0, @cb's nonzero value, or -errno: -EINVAL (a NULL argument),
 * -ENOENT (no such object), -ENOMEM, -EIO, or librados' error.
 */
BL_API int bl_rados_getxattrs(struct bl_rados *r, const char *oid,
			      bl_rados_xattr_cb cb, void *arg);

/*
 * Namespaces and locator keys: the handle's I/O context has one of each,
 * used by every later call through it (objects, listing).  Setting them
 * is not synchronised with other calls: set them before the handle is
 * shared between threads, or while no other thread uses it.
 */

/* bl_rados_set_namespace()'s name for all namespaces (listing only). */
#define BL_RADOS_ALL_NAMESPACES "\001"

/**
 * bl_rados_set_namespace() - later calls through @r address objects in
 * namespace @nspace (NULL or "": the default namespace).  With
 * BL_RADOS_ALL_NAMESPACES, bl_rados_list() lists every namespace, and
 * object calls fail (librados refuses the name, -EINVAL).
 * Copies: @nspace is copied.
 * Return: 0, or -EINVAL (@r is NULL), -ENOMEM, -EIO.
 */
BL_API int bl_rados_set_namespace(struct bl_rados *r, const char *nspace);

/**
 * bl_rados_set_locator() - later object calls through @r place objects by
 * @key instead of by their name (objects with one key share a placement
 * group; NULL or "": by name, the default).
 * Copies: @key is copied.
 * Return: 0, or -EINVAL (@r is NULL), -ENOMEM, -EIO.
 */
BL_API int bl_rados_set_locator(struct bl_rados *r, const char *key);

/**
 * typedef bl_rados_list_cb - one listed object: its name, namespace and
 * locator key ("" when none), borrowed for the call.  Returns 0 to go on;
 * anything else stops the listing, and bl_rados_list() returns it.  It
 * may call the other functions of the handle (remove the object ...).
 */
typedef int (*bl_rados_list_cb)(const char *oid, const char *nspace,
				const char *locator, void *arg);

/**
 * bl_rados_list() - calls @cb, on the caller's thread, for every object
 * of @r's pool in @r's namespace (bl_rados_set_namespace(); every
 * namespace with BL_RADOS_ALL_NAMESPACES) whose name starts with @prefix
 * (NULL or "": every object), in librados' order (by placement, not by
 * name).  Objects created or removed while it runs may or may not be
 * seen.  The filter runs on the client: the whole pool is listed.
 * Return: 0 when every object was seen, @cb's nonzero value when it
 * stopped the listing, or -errno: -EINVAL (@r or @cb is NULL), -ENOMEM,
 * -EIO, or librados' error (-ETIMEDOUT with rados_osd_op_timeout ...).
 */
BL_API int bl_rados_list(struct bl_rados *r, const char *prefix,
			 bl_rados_list_cb cb, void *arg);

/**
 * bl_rados_cluster() - @r's librados cluster handle (a rados_t of
 * <rados/librados.h>), for what the bridge does not wrap: pool and
 * cluster calls, watch/notify ...  Borrowed: valid until bl_rados_close();
 * it must not be shut down.
 * Return: the handle, or NULL when @r is NULL.
 */
BL_API void *bl_rados_cluster(struct bl_rados *r);

/**
 * bl_rados_ioctx() - @r's librados I/O context (a rados_ioctx_t), the one
 * every call through @r uses: a namespace or locator set on it is the
 * handle's.  Borrowed: valid until bl_rados_close(); it must not be
 * destroyed.  (C++: librados::IoCtx::from_rados_ioctx_t() makes an IoCtx
 * of it for bl::ceph's functions.)
 * Return: the I/O context, or NULL when @r is NULL.
 */
BL_API void *bl_rados_ioctx(struct bl_rados *r);

/**
 * bl_rados_copied_bytes() - payload bytes the bridge itself copied on the
 * client side, summed over all handles since the process started.  Only
 * an aio write or a compound op step of a list holding thread-local raws
 * (bl_raw_set_thread_local()) copies: the bridge's references may go on a
 * librados thread, so those lists go as one copy in a shared raw.  What
 * librados does inside is not counted here.
 * Return: that count; it cannot fail.
 */
BL_API uint64_t bl_rados_copied_bytes(void);

/*
 * Object maps (omap): an object's sorted key/value store, beside its
 * data and attributes.  Keys are C strings; values are lists, shared on
 * the way in (no copy: librados gets one Ceph segment per list segment)
 * and Ceph's own buffers on the way out (claimed raws).  Replicated pools
 * only: an erasure-coded pool has no omap.  It refuses the omap writes
 * (set, remove keys, clear; alone, or as a step, which fails the whole op
 * and so changes nothing) with -EOPNOTSUPP, and its omap reads (alone or
 * as steps) find no key: they return 0 without a pair.
 */

/**
 * typedef bl_rados_omap_cb - one omap pair: @key and @val borrowed for the
 * call (bl_list_append_list() keeps the value without a copy).  0 goes on;
 * anything else stops, and is returned.
 */
typedef int (*bl_rados_omap_cb)(const char *key, const struct bl_list *val,
				void *arg);

/**
 * bl_rados_omap_set() - sets @n keys of object @oid's omap (the object is
 * created if missing): @keys[i] to the bytes of @vals[i] (may be empty).
 * A key given twice gets its last value.  @n 0 asks no server.
 * Shares: the values' bytes are referenced, not copied, until the call
 * returns.
 * Return: 0, or -errno: -EINVAL (@r or @oid is NULL, @keys or @vals is
 * NULL with @n > 0, or one of them holds a NULL), -E2BIG (a value is
 * longer than 4 GiB - 1), -ENOMEM, -EIO, or librados' error
 * (-EOPNOTSUPP: an erasure-coded pool; -ETIMEDOUT ...).
 */
BL_API int bl_rados_omap_set(struct bl_rados *r, const char *oid,
			     const char *const *keys,
			     const struct bl_list *const *vals, size_t n);

/**
 * bl_rados_omap_get() - calls @cb, on the caller's thread after one round
 * trip, for each of the @n @keys that object @oid's omap holds, in key
 * order (keys it does not hold are skipped).
 * Return: 0, @cb's nonzero value, or -errno: -EINVAL (@r, @oid or @cb is
 * NULL, @keys is NULL with @n > 0, or holds a NULL), -ENOENT (no such
 * object), -ENOMEM, -EIO, or librados' error (-ETIMEDOUT ...).
 */
BL_API int bl_rados_omap_get(struct bl_rados *r, const char *oid,
			     const char *const *keys, size_t n,
			     bl_rados_omap_cb cb, void *arg);

/**
 * bl_rados_omap_get_range() - calls @cb, on the caller's thread after one
 * round trip, for at most @max pairs of object @oid's omap, in key order,
 * whose keys sort after @start_after (NULL or "": from the first) and
 * start with @prefix (NULL or "": any key).  *@more (when @more is not
 * NULL) becomes 1 when the omap holds further keys after the last one
 * given (ask again with that key as @start_after), else 0; the OSD may
 * give fewer than @max pairs per call (osd_max_omap_entries_per_request).
 * Return: 0, @cb's nonzero value, or -errno: -EINVAL (@r, @oid or @cb is
 * NULL, or @max is 0), -ENOENT (no such object), -ENOMEM, -EIO, or
 * librados' error (-ETIMEDOUT ...).  *@more is written only on success.
 */
BL_API int bl_rados_omap_get_range(struct bl_rados *r, const char *oid,
				   const char *start_after,
				   const char *prefix, uint64_t max,
				   int *more, bl_rados_omap_cb cb, void *arg);

/**
 * bl_rados_omap_rm_keys() - removes @n @keys from object @oid's omap
 * (keys it does not hold are no error).  @n 0 asks no server.
 * Return: 0, or -errno: -EINVAL (@r or @oid is NULL, @keys is NULL with
 * @n > 0, or holds a NULL), -ENOENT (no such object), -ENOMEM, -EIO, or
 * librados' error (-EOPNOTSUPP ...).
 */
BL_API int bl_rados_omap_rm_keys(struct bl_rados *r, const char *oid,
				 const char *const *keys, size_t n);

/**
 * bl_rados_omap_clear() - removes every key of object @oid's omap.
 * Return: 0, or -errno: -EINVAL (@r or @oid is NULL), -ENOENT (no such
 * object), -ENOMEM, -EIO, or librados' error (-EOPNOTSUPP ...).
 */
BL_API int bl_rados_omap_clear(struct bl_rados *r, const char *oid);

/*
 * Compound operations, after librados' rados_write_op_* and
 * rados_read_op_*: steps added to an op run on one object atomically, in
 * the order added, in one round trip, when the op is submitted (sync or
 * aio).  A step that fails fails the whole op: a write op then changes
 * nothing, a read op fills none of its outputs.  Adding a step borrows or
 * shares its arguments as each function says and returns 0, or -EINVAL
 * (a NULL op or argument, or an op already submitted), -E2BIG or -ENOMEM,
 * and then the op is as it was.  An op is submitted once: whatever the
 * result, it is spent (steps and submissions fail with -EINVAL) and only
 * waits to be released, which may be right after an aio submission
 * returns: the bridge keeps what librados points at until the completion.
 * An op is used by one thread at a time.  A list step holding a
 * thread-local raw (bl_raw_set_thread_local()) keeps a copy instead
 * (bl_rados_copied_bytes()): an aio completion drops the op's references
 * on a librados thread.
 */

/*
 * A cmpext step whose bytes differ fails its op (and sets its *prval) with
 * -BL_RADOS_MAX_ERRNO - the offset of the first differing byte, relative
 * to the step's offset: librados' convention, kept as it is.
 * BL_RADOS_CMPEXT_MISMATCH(res) tells such a result from an errno,
 * BL_RADOS_CMPEXT_OFFSET(res) gives the offset.
 */
#define BL_RADOS_MAX_ERRNO 4095
#define BL_RADOS_CMPEXT_MISMATCH(res) ((res) <= -BL_RADOS_MAX_ERRNO)
#define BL_RADOS_CMPEXT_OFFSET(res) \
	((uint64_t)(-(int64_t)(res) - BL_RADOS_MAX_ERRNO))

struct bl_rados_write_op;
struct bl_rados_read_op;

/**
 * bl_rados_create_write_op() - a new, empty write operation.
 * Return: new (free with bl_rados_release_write_op()), or NULL (-ENOMEM,
 * errno set to ENOMEM).
 */
BL_API struct bl_rados_write_op *bl_rados_create_write_op(void);

/**
 * bl_rados_release_write_op() - frees @op and drops what it holds (the
 * bridge keeps what an aio submission still needs).  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_release_write_op(struct bl_rados_write_op *op);

/**
 * bl_rados_write_op_create() - step: create the object; with @exclusive
 * nonzero the op fails with -EEXIST when it exists already.
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_write_op_create(struct bl_rados_write_op *op,
				    int exclusive);

/**
 * bl_rados_write_op_write() - step: write all of @l at byte @off.
 * Shares: @l's bytes are referenced by @op (no copy) until it completes;
 * @l itself may change or go right after the call, its bytes may not be
 * written to.
 * Return: 0, or -EINVAL (@op or @l NULL, @op spent), -E2BIG (@l is longer
 * than 4 GiB - 1), -ENOMEM.
 */
BL_API int bl_rados_write_op_write(struct bl_rados_write_op *op,
				   const struct bl_list *l, uint64_t off);

/**
 * bl_rados_write_op_write_full() - step: replace the object's data with
 * @l.  Shares, as bl_rados_write_op_write().
 * Return: as bl_rados_write_op_write().
 */
BL_API int bl_rados_write_op_write_full(struct bl_rados_write_op *op,
					const struct bl_list *l);

/**
 * bl_rados_write_op_append() - step: append @l to the object's data.
 * Shares, as bl_rados_write_op_write().
 * Return: as bl_rados_write_op_write().
 */
BL_API int bl_rados_write_op_append(struct bl_rados_write_op *op,
				    const struct bl_list *l);

/**
 * bl_rados_write_op_truncate() - step: cut or extend (with zeros) the
 * object's data to @off bytes.
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_write_op_truncate(struct bl_rados_write_op *op,
				      uint64_t off);

/**
 * bl_rados_write_op_zero() - step: zero bytes [@off, @off + @len) of the
 * object's data (not past its end).
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_write_op_zero(struct bl_rados_write_op *op, uint64_t off,
				  uint64_t len);

/**
 * bl_rados_write_op_setxattr() - step: set attribute @name to @val.
 * Copies: @name.  Shares: @val, as bl_rados_write_op_write().
 * Return: 0, or -EINVAL (a NULL argument, @op spent), -E2BIG, -ENOMEM.
 */
BL_API int bl_rados_write_op_setxattr(struct bl_rados_write_op *op,
				      const char *name,
				      const struct bl_list *val);

/**
 * bl_rados_write_op_omap_set() - step: bl_rados_omap_set() of @n pairs.
 * Copies: the keys.  Shares: the values, as bl_rados_write_op_write().
 * Return: 0, or -EINVAL (@op NULL or spent, @keys or @vals NULL with @n >
 * 0, or holding a NULL), -E2BIG, -ENOMEM.
 */
BL_API int bl_rados_write_op_omap_set(struct bl_rados_write_op *op,
				      const char *const *keys,
				      const struct bl_list *const *vals,
				      size_t n);

/**
 * bl_rados_write_op_omap_rm_keys() - step: bl_rados_omap_rm_keys() of the
 * @n @keys (keys the omap does not hold are no error).
 * Copies: the keys.
 * Return: 0, or -EINVAL (@op NULL or spent, @keys NULL with @n > 0, or
 * holding a NULL), -ENOMEM.
 */
BL_API int bl_rados_write_op_omap_rm_keys(struct bl_rados_write_op *op,
					  const char *const *keys, size_t n);

/**
 * bl_rados_write_op_omap_clear() - step: bl_rados_omap_clear(), every key
 * of the omap removed.
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_write_op_omap_clear(struct bl_rados_write_op *op);

/**
 * bl_rados_write_op_cmpext() - step: compare the object's bytes at @off
 * with @cmp (bytes past the object's end compare as zeros); when they
 * differ the op fails, with -BL_RADOS_MAX_ERRNO - the offset of the first
 * difference (BL_RADOS_CMPEXT_MISMATCH()), and writes nothing.  On a
 * missing object an op of compares alone fails with -ENOENT; beside a
 * step that writes, the object compares as all zeros.
 * Shares: @cmp, as bl_rados_write_op_write().  @prval: NULL, or where the
 * step's result (0, the mismatch or a negative errno) is written when the
 * op completes; it must stay valid until then.
 * Return: 0, or -EINVAL (@op or @cmp NULL, @op spent), -E2BIG, -ENOMEM.
 */
BL_API int bl_rados_write_op_cmpext(struct bl_rados_write_op *op,
				    const struct bl_list *cmp, uint64_t off,
				    int *prval);

/**
 * bl_rados_write_op_assert_version() - step: the op fails unless the
 * object's version is @ver: with -ERANGE when the object is newer (its
 * version is above @ver), -EOVERFLOW when it is older.  An object's
 * version is librados' rados_get_last_version() of bl_rados_ioctx() after
 * a call on it.
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_write_op_assert_version(struct bl_rados_write_op *op,
					    uint64_t ver);

/**
 * bl_rados_write_op_operate() - runs @op's steps on object @oid of @r and
 * waits for the result.  @op is spent afterwards.
 * Return: 0, or -errno: -EINVAL (@op, @r or @oid NULL, @op spent),
 * -ENOMEM, -EIO, a cmpext mismatch (BL_RADOS_CMPEXT_MISMATCH()), or the
 * error of the step that failed, as librados and the OSD give it (-EEXIST:
 * exclusive create of an existing object; -ERANGE, -EOVERFLOW: version
 * assertion; -ENOENT; -EMSGSIZE, -EFBIG: bl_rados_write()'s limits;
 * -EOPNOTSUPP; -ETIMEDOUT ...).
 */
BL_API int bl_rados_write_op_operate(struct bl_rados_write_op *op,
				     struct bl_rados *r, const char *oid);

/**
 * bl_rados_aio_write_op_operate() - bl_rados_write_op_operate() in the
 * background: 0 when queued (then @cb runs once with the result, as the
 * other aio calls), or a negative errno when not (then @cb never runs;
 * @op is spent unless the error is -EINVAL).  @op may be released as soon
 * as the call returns.
 * Return: 0 (queued), or -errno: -EINVAL (@op, @r or @oid NULL, @op spent),
 * -ENOMEM, -EIO, or librados' refusal.
 */
BL_API int bl_rados_aio_write_op_operate(struct bl_rados_write_op *op,
					 struct bl_rados *r, const char *oid,
					 bl_rados_cb cb, void *arg);

/**
 * bl_rados_create_read_op() - a new, empty read operation.
 * Return: new (free with bl_rados_release_read_op()), or NULL (-ENOMEM,
 * errno set to ENOMEM).
 */
BL_API struct bl_rados_read_op *bl_rados_create_read_op(void);

/**
 * bl_rados_release_read_op() - frees @op; outputs of an aio submission
 * still in flight are filled all the same.  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_release_read_op(struct bl_rados_read_op *op);

/*
 * The read op's steps write their outputs and *@prval (when not NULL)
 * when the op completes: before bl_rados_read_op_operate() returns, or
 * before the aio callback runs, on its thread.  Until then the caller must
 * not touch them.  *@prval gets the step's result (0, or the errno that
 * failed the op), also when the op fails; the other outputs are written
 * only when it succeeds.
 */

/**
 * bl_rados_read_op_read() - step: append bytes [@off, @off + @len) of the
 * object (fewer at its end) to @out, as Ceph's buffers (claimed raws, no
 * copy).  @out unchanged when the op fails.  The answers of all the
 * steps of one op must stay under 2 GiB: librados' messenger aborts the
 * process on a larger answer (bl_rados_read() reads more in pieces).
 * Return: 0, or -EINVAL (@op or @out NULL, @op spent, @len 0), -ENOMEM.
 */
BL_API int bl_rados_read_op_read(struct bl_rados_read_op *op, uint64_t off,
				 size_t len, struct bl_list *out, int *prval);

/**
 * bl_rados_read_op_stat() - step: the object's size and modification
 * time (seconds since the epoch) into *@size and *@mtime (either may be
 * NULL).
 * Return: 0, or -EINVAL (@op NULL or spent), -ENOMEM.
 */
BL_API int bl_rados_read_op_stat(struct bl_rados_read_op *op, uint64_t *size,
				 int64_t *mtime, int *prval);

/**
 * bl_rados_read_op_getxattr() - step: append attribute @name's value to
 * @out (Ceph's buffers); a missing attribute fails the op with -ENODATA.
 * Copies: @name.
 * Return: 0, or -EINVAL (@op, @name or @out NULL, @op spent), -ENOMEM.
 */
BL_API int bl_rados_read_op_getxattr(struct bl_rados_read_op *op,
				     const char *name, struct bl_list *out,
				     int *prval);

/**
 * bl_rados_read_op_omap_get() - step: bl_rados_omap_get_range()'s pairs:
 * @cb runs for each when the op completes (on the thread that completes
 * it), and *@more (when not NULL) is set as there.  A nonzero value of @cb
 * stops the pairs and becomes *@prval; the op's own result stays 0.
 * Copies: @start_after and @prefix.
 * Return: 0, or -EINVAL (@op or @cb NULL, @op spent, @max 0), -ENOMEM.
 */
BL_API int bl_rados_read_op_omap_get(struct bl_rados_read_op *op,
				     const char *start_after,
				     const char *prefix, uint64_t max,
				     int *more, bl_rados_omap_cb cb,
				     void *arg, int *prval);

/**
 * bl_rados_read_op_omap_get_by_keys() - step: bl_rados_omap_get()'s pairs:
 * @cb runs, when the op completes (on the thread that completes it), for
 * each of the @n @keys that the omap holds, in key order.  A nonzero
 * value of @cb stops the pairs and becomes *@prval; the op's own result
 * stays 0.
 * Copies: the keys.
 * Return: 0, or -EINVAL (@op or @cb NULL, @op spent, @keys NULL with @n >
 * 0, or holding a NULL), -ENOMEM.
 */
BL_API int bl_rados_read_op_omap_get_by_keys(struct bl_rados_read_op *op,
					     const char *const *keys,
					     size_t n, bl_rados_omap_cb cb,
					     void *arg, int *prval);

/**
 * bl_rados_read_op_cmpext() - step: bl_rados_write_op_cmpext()'s
 * comparison; a mismatch fails the op.
 * Shares: @cmp, until the op completes.
 * Return: 0, or -EINVAL (@op or @cmp NULL, @op spent), -E2BIG, -ENOMEM.
 */
BL_API int bl_rados_read_op_cmpext(struct bl_rados_read_op *op,
				   const struct bl_list *cmp, uint64_t off,
				   int *prval);

/**
 * bl_rados_read_op_operate() - runs @op's steps on object @oid of @r and
 * waits for the result; the outputs are written before it returns.  @op
 * is spent afterwards.
 * Return: 0, or -errno: -EINVAL (@op, @r or @oid NULL, @op spent),
 * -ENOMEM (also when an output could not be filled: the outputs may then
 * be filled in part), -EIO, a cmpext mismatch, or the error of the step
 * that failed (-ENOENT: no such object; -ENODATA: no such attribute;
 * -ETIMEDOUT ...).
 */
BL_API int bl_rados_read_op_operate(struct bl_rados_read_op *op,
				    struct bl_rados *r, const char *oid);

/**
 * bl_rados_aio_read_op_operate() - bl_rados_read_op_operate() in the
 * background; the outputs are written before @cb runs.  @op may be
 * released as soon as the call returns.
 * Return: 0 (queued), or -errno: -EINVAL (@op, @r or @oid NULL, @op spent),
 * -ENOMEM, -EIO, or librados' refusal (@op is then spent).
 */
BL_API int bl_rados_aio_read_op_operate(struct bl_rados_read_op *op,
					struct bl_rados *r, const char *oid,
					bl_rados_cb cb, void *arg);

/*
 * Completions to wait on, one op each: pass bl_rados_completion_cb (or,
 * for bl_rados_aio_read2(), bl_rados_completion_cb64) as an aio call's
 * callback and the completion as its argument, then wait.
 */
struct bl_rados_completion;

/**
 * typedef bl_rados_cb64 - bl_rados_cb with a 64-bit result, for reads that
 * may return 2 GiB or more (bl_rados_aio_read2()).
 */
typedef void (*bl_rados_cb64)(int64_t res, void *arg);

/**
 * bl_rados_completion_create() - a new completion, not yet complete.
 * Return: new (free with bl_rados_completion_release()), or NULL
 * (-ENOMEM, errno set to ENOMEM).
 */
BL_API struct bl_rados_completion *bl_rados_completion_create(void);

/**
 * bl_rados_completion_cb() - a bl_rados_cb that marks the completion @c
 * complete with @res and wakes its waiters.  Call it only as an aio
 * callback, once per completion.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_completion_cb(int res, void *c);

/**
 * bl_rados_completion_cb64() - bl_rados_completion_cb() for a
 * bl_rados_cb64.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_completion_cb64(int64_t res, void *c);

/**
 * bl_rados_completion_wait() - waits until @c is complete, for at most
 * @timeout_ms milliseconds (negative: no limit; 0: only looks), then
 * writes the op's result to *@res (when not NULL).  Any number of threads
 * may wait; it may be called again once complete.
 * Return: 0 (complete), or -errno: -EINVAL (@c NULL), -ETIMEDOUT (not
 * complete after @timeout_ms; *@res not written), -EIO (the lock failed).
 */
BL_API int bl_rados_completion_wait(struct bl_rados_completion *c,
				    int timeout_ms, int64_t *res);

/**
 * bl_rados_completion_release() - frees @c.  Only once complete, or never
 * given to an aio call: its callback would use it.  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_rados_completion_release(struct bl_rados_completion *c);

/**
 * bl_rados_aio_read2() - bl_rados_aio_read() with a 64-bit result: @cb
 * gets the bytes read even when they are 2 GiB or more, where
 * bl_rados_aio_read()'s int result gives -EDOM.
 * Takes Ceph's buffers into @out (no copy), as bl_rados_aio_read().
 * Return: 0 (queued), or -errno: -EINVAL (@r, @oid or @out is NULL),
 * -EDOM (@len over 2 GiB - 1, as bl_rados_aio_read()), -ENOMEM, -EIO, or
 * librados' refusal; @cb gets the bytes read or bl_rados_read()'s errors.
 */
BL_API int bl_rados_aio_read2(struct bl_rados *r, const char *oid,
			      uint64_t off, size_t len, struct bl_list *out,
			      bl_rados_cb64 cb, void *arg);

BL_END_DECLS

#endif /* BUFFERLIST_CEPH_H */
