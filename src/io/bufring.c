/* SPDX-License-Identifier: MIT */
/*
 * bufring.c - provided-buffer rings for pooled receives: lending a filled
 * buffer out as a raw, taking it back from whatever thread releases it,
 * and the public bl_uring_bufring_* API.
 *
 * Provided-buffer rings: each buffer, once filled, becomes a claimed raw
 * (bl_raw_claim: one small header allocation per received chunk) whose
 * free callback gives the buffer back.  The ring's own thread puts it
 * straight back into the kernel's ring; any other thread pushes its id on
 * a lock-free stack (one CAS) that the ring's thread empties into the
 * kernel's ring before it reaps completions or arms receives.  The stack
 * is only ever emptied whole (exchange), which makes it ABA-safe.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static __thread char tls_token;

/* Unique per live thread, cheap (a TLS address), comparable from anywhere. */
static inline uintptr_t self_token(void)
{
	return (uintptr_t)&tls_token;
}

/* ---- lending and returning buffers -------------------------------------- */

static void br_free(struct bl_uring_bufring *br)
{
	if (br->ring)
		munmap(br->ring, br->ring_bytes);
	munmap(br->base, br->map_bytes);
	bl__free(br->al, br, br->asize, _Alignof(struct bl_uring_bufring));
}

void bl__uring_br_unref(struct bl_uring_bufring *br)
{
	if (atomic_fetch_sub_explicit(&br->refs, 1, memory_order_acq_rel) == 1)
		br_free(br);
}

/* Owner thread: buffer @id is the kernel's (or the free stack's) again. */
void bl__uring_br_put_back(struct bl_uring_bufring *br, unsigned id)
{
	if (!br->u)
		return;		/* unregistered: nobody will lend it again */
	if (br->ring) {
		io_uring_buf_ring_add(br->ring, br->base + (size_t)id * br->buf_size,
				      (unsigned)br->buf_size, (unsigned short)id,
				      (int)br->mask, 0);
		io_uring_buf_ring_advance(br->ring, 1);
	} else {
		br->free_ids[br->nfree++] = id;
	}
}

/* Owner thread: moves what other threads returned back into the ring. */
void bl__uring_br_drain(struct bl_uring_bufring *br)
{
	int h, k = 0;

	if (atomic_load_explicit(&br->ret_head, memory_order_relaxed) < 0)
		return;
	h = atomic_exchange_explicit(&br->ret_head, -1, memory_order_acquire);
	if (!br->u)
		return;
	while (h >= 0) {
		int nx = br->ret_next[h];

		if (br->ring)
			io_uring_buf_ring_add(br->ring,
					      br->base + (size_t)h * br->buf_size,
					      (unsigned)br->buf_size,
					      (unsigned short)h, (int)br->mask, k++);
		else
			br->free_ids[br->nfree++] = (unsigned)h;
		h = nx;
	}
	if (k)
		io_uring_buf_ring_advance(br->ring, k);
}

/*
 * A ring buffer's raw lost its last reference, on any thread.  On the
 * ring's thread the buffer goes straight back (no atomic besides the
 * ring's tail store); elsewhere one CAS pushes it on the return stack.
 * Either way one atomic decrement drops the buffer's share of br.
 */
static void br_release(void *data, size_t len, void *opaque)
{
	struct bl_uring_bufring *br = opaque;
	unsigned id = (unsigned)(((char *)data - br->base) / br->buf_size);

	(void)len;
	if (br->owner == self_token() && !br->handle_gone) {
		bl__uring_br_put_back(br, id);
	} else {
		int old = atomic_load_explicit(&br->ret_head,
					       memory_order_relaxed);

		do {
			br->ret_next[id] = old;
		} while (!atomic_compare_exchange_weak_explicit(
				 &br->ret_head, &old, (int)id,
				 memory_order_release, memory_order_relaxed));
	}
	bl__uring_br_unref(br);
}

/*
 * Lends buffer @id holding @n received bytes as a slice appended to @out
 * (empty: no chunk allocation).  Costs one raw header allocation and one
 * atomic increment.  On failure the buffer goes back at once.
 */
int bl__uring_br_chunk(struct bl_uring_bufring *br, unsigned id, size_t n,
		    struct bl_list *out)
{
	char *data = br->base + (size_t)id * br->buf_size;
	struct bl_raw *r = bl_raw_claim(data, br->buf_size, br_release, br);
	struct bl_ptr p;

	if (!r) {
		bl__uring_br_put_back(br, id);
		return -ENOMEM;
	}
	atomic_fetch_add_explicit(&br->refs, 1, memory_order_relaxed);
	VALGRIND_MAKE_MEM_DEFINED(data, n);
	p.raw = r;
	p.off = 0;
	p.len = n;
	if (bl_list_append_ptr_move(out, &p)) {
		bl_raw_put(r);
		return -ENOMEM;
	}
	return 0;
}

static bool raw_is_pooled(const struct bl_raw *r)
{
	return bl__raw_claim_fn(r) == br_release;
}

/* ---- buffer rings -------------------------------------------------------- */

struct bl_uring_bufring *bl_uring_bufring_create(struct bl_uring *u,
						 unsigned nbufs,
						 size_t buf_size,
						 unsigned short bgid)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t page = (size_t)sysconf(_SC_PAGESIZE), asize;
	struct bl_uring_bufring *br;
	int err, ret;

	if (!u || !bl__is_pow2(nbufs) || nbufs > 32768 || !buf_size ||
	    buf_size > UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if (u->destroying) {
		errno = ECANCELED;
		return NULL;
	}
	asize = sizeof(*br) + nbufs * sizeof(int) +
		(u->ring ? 0 : nbufs * sizeof(unsigned));
	br = bl__alloc(al, asize, _Alignof(struct bl_uring_bufring));
	if (!br) {
		errno = ENOMEM;
		return NULL;
	}
	memset(br, 0, sizeof(*br));
	br->al = al;
	br->asize = asize;
	br->nbufs = nbufs;
	br->mask = nbufs - 1;
	br->buf_size = buf_size;
	br->bgid = bgid;
	br->owner = self_token();
	atomic_init(&br->refs, 1);
	atomic_init(&br->ret_head, -1);
	br->map_bytes = bl__align_up(nbufs * buf_size, page);
	br->base = mmap(NULL, br->map_bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (br->base == MAP_FAILED) {
		err = errno;
		goto fail_struct;
	}
	if (u->ring) {
		struct io_uring_buf_reg reg;

		br->ring_bytes = bl__align_up(nbufs * sizeof(struct io_uring_buf),
					      page);
		br->ring = mmap(NULL, br->ring_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (br->ring == MAP_FAILED) {
			err = errno;
			goto fail_base;
		}
		memset(&reg, 0, sizeof(reg));
		reg.ring_addr = (uint64_t)(uintptr_t)br->ring;
		reg.ring_entries = nbufs;
		reg.bgid = bgid;
		ret = io_uring_register_buf_ring(u->ring, &reg, 0);
		if (ret) {
			err = ret < 0 ? -ret : EINVAL;
			goto fail_ring;
		}
		io_uring_buf_ring_init(br->ring);
		for (unsigned i = 0; i < nbufs; i++)
			io_uring_buf_ring_add(br->ring,
					      br->base + (size_t)i * buf_size,
					      (unsigned)buf_size,
					      (unsigned short)i, (int)br->mask,
					      (int)i);
		io_uring_buf_ring_advance(br->ring, (int)nbufs);
	} else {
		br->free_ids = (unsigned *)(br->ret_next + nbufs);
		for (unsigned i = 0; i < nbufs; i++)
			br->free_ids[i] = nbufs - 1 - i;
		br->nfree = nbufs;
	}
	br->u = u;
	br->next = u->bufrings;
	u->bufrings = br;
	return br;
fail_ring:
	munmap(br->ring, br->ring_bytes);
fail_base:
	munmap(br->base, br->map_bytes);
fail_struct:
	bl__free(al, br, asize, _Alignof(struct bl_uring_bufring));
	errno = err;
	return NULL;
}

unsigned bl_uring_bufring_available(const struct bl_uring_bufring *br)
{
	unsigned out = atomic_load_explicit(
			       &((struct bl_uring_bufring *)br)->refs,
			       memory_order_relaxed) - 1;

	/*
	 * Buffers released on other threads count as available: the ring's
	 * thread puts them back before it arms or reaps anything.
	 */
	return out < br->nbufs ? br->nbufs - out : 0;
}

/* Off the kernel's table; the memory stays while buffers are lent out. */
static void br_unregister(struct bl_uring_bufring *br)
{
	if (br->ring)
		io_uring_unregister_buf_ring(br->u->ring, br->bgid);
	br->u = NULL;
}

void bl__uring_bufrings_destroy(struct bl_uring *u)
{
	while (u->bufrings) {
		struct bl_uring_bufring *br = u->bufrings;

		u->bufrings = br->next;
		br_unregister(br);
		/* as bl_uring_bufring_destroy(): the ring owned the handle */
		br->handle_gone = true;
		if (!br->op_pins)
			bl__uring_br_unref(br);
	}
}

void bl_uring_bufring_destroy(struct bl_uring_bufring *br)
{
	struct bl_uring *u;

	if (!br)
		return;
	u = br->u;
	if (u) {
		struct bl_uring_bufring **pp = &u->bufrings;

		while (*pp != br)
			pp = &(*pp)->next;
		*pp = br->next;
		br_unregister(br);
	}
	br->handle_gone = true;
	if (!br->op_pins)
		bl__uring_br_unref(br);
}

/*
 * bl_list_detach_pooled() is the list's own reshape (bl__list_reshape):
 * ring slices are the segments it does not keep, and a run of them grows
 * while the next one is a ring slice too, so neighbours share one raw.
 * The copies belong to the list, so they go in the list's pool (the ring's
 * raws are the default pool's).
 */
static bool detach_keep(const struct bl_seg *s, bool last, void *ctx)
{
	return !raw_is_pooled(s->raw);
}

static bool detach_more(size_t run_len, const struct bl_seg *next, bool last,
			void *ctx)
{
	return raw_is_pooled(next->raw);
}

ssize_t bl_list_detach_pooled(struct bl_list *l)
{
	static const struct bl__reshape rs = {
		.keep = detach_keep, .more = detach_more,
		.align = BL_CACHELINE, .in_list_pool = true,
	};

	return bl__list_reshape(l, &rs);
}
