/* SPDX-License-Identifier: MIT */
/*
 * list_copy.c - copying bytes out of and into a range of a list
 * (copy_out, copy_in, zero), the list layer's only writes into segments'
 * bytes: static raws get private copies before anything is written.
 * Moving and sharing segments without copying their bytes is list.c's.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */

int bl_list_copy_out(const struct bl_list *l, size_t off, size_t len,
		     void *dst)
{
	struct bl__chunk_hdr *c;
	char *out = dst;
	struct pos p;
	uint32_t i;

	if (!dst && len)
		return -EINVAL;
	if (!range_ok(l, off, len))
		return -ERANGE;
	if (!len)
		return 0;
	locate(l, off, &p);
	bl__count_copy(len);
	for (c = p.c, i = p.i; len; pos_next(&c, &i)) {
		const struct bl_seg *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so;

		if (n > len)
			n = len;
		memcpy(out, s->data + so, n);
		out += n;
		len -= n;
	}
	return 0;
}

static void free_table(struct bl_raw **priv, struct bl_raw **stack_priv,
		       unsigned n)
{
	if (priv && priv != stack_priv)
		bl__free(bl__allocator_current(), priv, n * sizeof(*priv),
			 sizeof(void *));
}

/*
 * Writes @src (NULL: zeros) over [off, off + len).  Static raws are
 * read-only: their segments first get private copies, all allocated before
 * anything is written so that a failure changes nothing.  @src may lie in
 * the very bytes written (the caller passing the list's own memory): one
 * run is then written with memmove, several from a copy of @src made
 * first, since a run written early could be what a later one reads.
 */
static int write_range(struct bl_list *l, size_t off, size_t len,
		       const void *src)
{
	struct bl__chunk_hdr *c;
	const char *in = src;
	struct bl_raw **priv = NULL, *stack_priv[8];
	unsigned nstatic = 0, nruns = 0, k;
	uintptr_t sb = (uintptr_t)src, se = sb + len;
	bool overlap = false;
	char *bounce = NULL;
	struct pos p;
	uint32_t i;
	size_t left;

	if (!range_ok(l, off, len))
		return -ERANGE;
	if (!len)
		return 0;
	locate(l, off, &p);
	for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
		const struct bl_seg *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so < left ? s->len - so : left;
		uintptr_t db = (uintptr_t)(s->data + so);

		nstatic += bl__raw_readonly(s->raw);
		/* a static run is written in its private copy: no overlap */
		if (src && !bl__raw_readonly(s->raw) && db < se && sb < db + n)
			overlap = true;
		nruns++;
		left -= n;
	}
	if (overlap && nruns > 1) {
		bounce = bl__alloc(bl__allocator_current(), len, 16);
		if (!bounce)
			return -ENOMEM;
		memcpy(bounce, src, len);
		bl__count_copy(len);
		in = bounce;
		overlap = false;
	}
	if (nstatic) {
		priv = stack_priv;
		if (nstatic > 8) {
			priv = bl__alloc(bl__allocator_current(),
					 nstatic * sizeof(*priv), sizeof(void *));
			if (!priv) {
				if (bounce)
					bl__free(bl__allocator_current(),
						 bounce, len, 16);
				return -ENOMEM;
			}
		}
		k = 0;
		for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
			const struct bl_seg *s = &slots(c)[i];
			size_t so = c == p.c && i == p.i ? p.inner : 0;
			size_t n = s->len - so < left ? s->len - so : left;

			left -= n;
			if (!bl__raw_readonly(s->raw))
				continue;
			priv[k] = bl_raw_create_in(bl_raw_pool(s->raw), s->len);
			if (!priv[k]) {
				while (k--)
					bl__raw_put(priv[k]);
				free_table(priv, stack_priv, nstatic);
				if (bounce)
					bl__free(bl__allocator_current(),
						 bounce, len, 16);
				return -ENOMEM;
			}
			memcpy(bl__raw_data(priv[k]), s->data, s->len);
			bl__count_copy(s->len);
			k++;
		}
	}
	k = 0;
	for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
		struct bl_seg *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so < left ? s->len - so : left;

		if (bl__raw_readonly(s->raw)) {
			bl__raw_put(s->raw);
			s->raw = priv[k++];
			s->data = bl__raw_data(s->raw);
		}
		if (in) {
			if (overlap)	/* one run: @src may be its bytes */
				memmove(s->data + so, in, n);
			else
				memcpy(s->data + so, in, n);
			in += n;
		} else {
			memset(s->data + so, 0, n);
		}
		bl_raw_invalidate_crc(s->raw);
		left -= n;
	}
	free_table(priv, stack_priv, nstatic);
	if (bounce)
		bl__free(bl__allocator_current(), bounce, len, 16);
	if (src)
		bl__count_copy(len);
	return 0;
}

int bl_list_copy_in(struct bl_list *l, size_t off, size_t len,
		    const void *src)
{
	if (!src && len)
		return -EINVAL;	/* write_range() would write zeros */
	return write_range(l, off, len, src);
}

int bl_list_zero(struct bl_list *l, size_t off, size_t len)
{
	return write_range(l, off, len, NULL);
}
