/* SPDX-License-Identifier: MIT */
/*
 * regbuf.c - the registered-buffer pool: buffers registered with
 * io_uring_register_buffers and handed out as raws, which bl_uring_read and
 * bl_uring_write then use with READ_FIXED / WRITE_FIXED.
 *
 * Registered buffers: a regpool's raws are claimed raws too; the raw's
 * free callback and opaque pointer identify the pool, and the buffer index
 * is the data's offset in the pool's mapping, so no side table and no
 * field in struct bl_raw is needed.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void rp_unref(struct bl_uring_regpool *p)
{
	if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
		munmap(p->base, p->map_bytes);
		pthread_mutex_destroy(&p->lock);
		bl__free(p->al, p, p->asize, _Alignof(struct bl_uring_regpool));
	}
}

static void rp_release(void *data, size_t len, void *opaque)
{
	struct bl_uring_regpool *p = opaque;

	(void)len;
	pthread_mutex_lock(&p->lock);
	p->free_ids[p->nfree++] =
		(unsigned)(((char *)data - p->base) / p->stride);
	pthread_mutex_unlock(&p->lock);
	rp_unref(p);
}

int bl_raw_buf_index(const struct bl_raw *r)
{
	struct bl_uring_regpool *p;

	if (!r || bl__raw_claim_fn(r) != rp_release)
		return -1;
	p = bl__raw_claim_arg(r);
	if (!atomic_load_explicit(&p->registered, memory_order_acquire))
		return -1;
	return (int)((bl__raw_data(r) - p->base) / p->stride);
}

struct bl_uring_regpool *bl_uring_regpool_create(struct bl_uring *u,
						 unsigned nbufs,
						 size_t buf_size)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t page = (size_t)sysconf(_SC_PAGESIZE), asize;
	struct bl_uring_regpool *p;
	int err;

	/* the kernel's limits (io_uring_register(2)): 16384 buffers of at most 1 GiB */
	if (!u || !nbufs || nbufs > 16384 || !buf_size ||
	    buf_size > ((size_t)1 << 30)) {
		errno = EINVAL;
		return NULL;
	}
	if (u->destroying || u->regpool) {
		errno = u->destroying ? ECANCELED : EEXIST;
		return NULL;
	}
	asize = sizeof(*p) + nbufs * sizeof(unsigned);
	p = bl__alloc(al, asize, _Alignof(struct bl_uring_regpool));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, sizeof(*p));
	p->al = al;
	p->asize = asize;
	p->nbufs = nbufs;
	p->buf_size = buf_size;
	p->stride = bl__align_up(buf_size, page);
	p->map_bytes = p->stride * nbufs;
	atomic_init(&p->refs, 1);
	atomic_init(&p->registered, false);
	/* anonymous memory: the kernel refuses file-backed pages (EFAULT) */
	p->base = mmap(NULL, p->map_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->base == MAP_FAILED) {
		err = errno;
		goto fail;
	}
	if (u->ring) {
		struct iovec *iov = malloc(nbufs * sizeof(*iov));
		int ret;

		if (!iov) {
			err = ENOMEM;
			goto fail_map;
		}
		for (unsigned i = 0; i < nbufs; i++) {
			iov[i].iov_base = p->base + (size_t)i * p->stride;
			iov[i].iov_len = buf_size;
		}
		ret = io_uring_register_buffers(u->ring, iov, nbufs);
		free(iov);
		if (ret) {
			err = ret < 0 ? -ret : EINVAL;
			goto fail_map;
		}
		atomic_store(&p->registered, true);
	}
	pthread_mutex_init(&p->lock, NULL);
	for (unsigned i = 0; i < nbufs; i++)
		p->free_ids[i] = nbufs - 1 - i;
	p->nfree = nbufs;
	p->u = u;
	u->regpool = p;
	return p;
fail_map:
	munmap(p->base, p->map_bytes);
fail:
	bl__free(al, p, asize, _Alignof(struct bl_uring_regpool));
	errno = err;
	return NULL;
}

struct bl_raw *bl_uring_regpool_get(struct bl_uring_regpool *p)
{
	struct bl_raw *r;
	unsigned id;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&p->lock);
	if (!p->nfree) {
		pthread_mutex_unlock(&p->lock);
		errno = ENOBUFS;
		return NULL;
	}
	id = p->free_ids[--p->nfree];
	pthread_mutex_unlock(&p->lock);
	r = bl_raw_claim(p->base + (size_t)id * p->stride, p->buf_size,
			 rp_release, p);
	if (!r) {
		pthread_mutex_lock(&p->lock);
		p->free_ids[p->nfree++] = id;
		pthread_mutex_unlock(&p->lock);
		errno = ENOMEM;
		return NULL;
	}
	atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return r;
}

size_t bl__uring_regpool_room(struct bl_uring *u)
{
	struct bl_uring_regpool *p = u->regpool;
	size_t room = 0;

	if (!p || !u->ring ||
	    !atomic_load_explicit(&p->registered, memory_order_relaxed))
		return 0;
	/* raws come back from any thread: nfree only under the lock */
	pthread_mutex_lock(&p->lock);
	if (p->nfree)
		room = p->buf_size;
	pthread_mutex_unlock(&p->lock);
	return room;
}

/* Off the kernel's table; raws still out stay valid. */
static void rp_unregister(struct bl_uring_regpool *p)
{
	if (atomic_load(&p->registered))
		io_uring_unregister_buffers(p->u->ring);
	atomic_store_explicit(&p->registered, false, memory_order_release);
	p->u->regpool = NULL;
	p->u = NULL;
}

void bl__uring_regpool_destroy(struct bl_uring *u)
{
	if (u->regpool)
		bl_uring_regpool_destroy(u->regpool);
}

void bl_uring_regpool_destroy(struct bl_uring_regpool *p)
{
	if (!p)
		return;
	if (p->u)
		rp_unregister(p);
	rp_unref(p);
}
