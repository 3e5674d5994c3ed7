/* SPDX-License-Identifier: MIT */
/*
 * test_accessors.c - the getters that give back what the library holds
 * say what their headers promise: bl_allocator_get() the allocator in
 * force (the default one, an installed one, the default again), as a
 * copy; bl_pool_stats_all() one snapshot per pool, the same as
 * bl_pool_get_stats(), never more than asked for, and the count of pools
 * whatever was asked; bl_msgr_conn_fd() the socket the connection was
 * made over, which the connection closes when it ends unless keep_fd.
 */
#include "testutil.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- bl_allocator_get --------------------------------------------------- */

struct counting {
	unsigned allocs, frees;
	struct bl_allocator dflt;	/* where the blocks come from */
};

static void *count_alloc(void *opaque, size_t size, size_t align)
{
	struct counting *c = opaque;

	c->allocs++;
	return c->dflt.alloc(c->dflt.opaque, size, align);
}

static void count_free(void *opaque, void *ptr, size_t size, size_t align)
{
	struct counting *c = opaque;

	c->frees++;
	c->dflt.free(c->dflt.opaque, ptr, size, align);
}

START_TEST(allocator_get_gives_a_default_that_allocates)
{
	struct bl_allocator a;
	void *p;

	bl_allocator_set(NULL);
	memset(&a, 0, sizeof(a));
	bl_allocator_get(&a);
	ck_assert_ptr_nonnull(a.alloc);
	ck_assert_ptr_nonnull(a.free);
	p = a.alloc(a.opaque, 100, 64);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % 64, 0);
	memset(p, 0xa5, 100);
	a.free(a.opaque, p, 100, 64);
}
END_TEST

START_TEST(allocator_get_gives_the_installed_one_then_the_default_again)
{
	struct counting c = { 0, 0, { NULL, NULL, NULL } };
	struct bl_allocator mine, got, dflt, again;
	struct bl_raw *r;

	bl_allocator_set(NULL);
	bl_allocator_get(&dflt);
	c.dflt = dflt;
	mine = (struct bl_allocator){ count_alloc, count_free, &c };
	bl_allocator_set(&mine);
	bl_allocator_get(&got);
	ck_assert(got.alloc == count_alloc);
	ck_assert(got.free == count_free);
	ck_assert_ptr_eq(got.opaque, &c);
	/* it is the one in force: a raw made now comes from it */
	r = bl_raw_create(64);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_ge(c.allocs, 1);
	bl_allocator_set(NULL);
	bl_allocator_get(&again);
	ck_assert(again.alloc == dflt.alloc);
	ck_assert(again.free == dflt.free);
	ck_assert_ptr_eq(again.opaque, dflt.opaque);
	/* the raw goes back to the allocator that made it */
	bl_raw_put(r);
	ck_assert_uint_eq(c.frees, c.allocs);
}
END_TEST

START_TEST(allocator_get_copies_so_changing_the_copy_changes_nothing)
{
	struct counting c = { 0, 0, { NULL, NULL, NULL } };
	struct bl_allocator got, after;
	struct bl_raw *r;

	bl_allocator_set(NULL);
	bl_allocator_get(&got);
	c.dflt = got;
	got.alloc = count_alloc;
	got.free = count_free;
	got.opaque = &c;
	bl_allocator_get(&after);
	ck_assert(after.alloc == c.dflt.alloc);
	ck_assert_ptr_eq(after.opaque, c.dflt.opaque);
	r = bl_raw_create(64);
	ck_assert_ptr_nonnull(r);
	bl_raw_put(r);
	ck_assert_uint_eq(c.allocs, 0);
}
END_TEST

/* ---- bl_pool_stats_all -------------------------------------------------- */

static int find_pool(const struct bl_pool_stats *st, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return i;
	return -1;
}

START_TEST(pool_stats_all_has_each_pool_as_get_stats_sees_it)
{
	struct bl_pool_stats st[BL_POOL_MAX], one;
	struct bl_pool *p = bl_pool_create("accessors", NULL);
	struct bl_raw *r;
	int n, i;

	ck_assert_ptr_nonnull(p);
	bl_pool_cache_enable(false);	/* the counts move at once */
	r = bl_raw_create_in(p, 1000);
	ck_assert_ptr_nonnull(r);
	n = bl_pool_stats_all(st, BL_POOL_MAX);
	ck_assert_int_ge(n, 2);		/* the default pool and ours */
	ck_assert_int_le(n, BL_POOL_MAX);
	i = find_pool(st, n, "accessors");
	ck_assert_int_ge(i, 0);
	ck_assert_int_ge(find_pool(st, n, bl_pool_name(bl_pool_default())), 0);
	bl_pool_get_stats(p, &one);
	ck_assert_str_eq(one.name, st[i].name);
	ck_assert_int_eq(one.raws, st[i].raws);
	ck_assert_int_eq(one.bytes, st[i].bytes);
	ck_assert_int_eq(one.bytes_used, st[i].bytes_used);
	ck_assert_int_eq(st[i].raws, 1);
	ck_assert_int_ge(st[i].bytes, 1000);
	bl_raw_put(r);
	ck_assert_int_eq(bl_pool_stats_all(st, BL_POOL_MAX), n);
	ck_assert_int_eq(st[i].raws, 0);
	ck_assert_int_eq(st[i].bytes, 0);
	bl_pool_cache_enable(true);
}
END_TEST

START_TEST(pool_stats_all_writes_at_most_max_and_counts_all)
{
	struct bl_pool_stats st[BL_POOL_MAX + 1];
	int n;

	ck_assert_ptr_nonnull(bl_pool_create("accessors-a", NULL));
	ck_assert_ptr_nonnull(bl_pool_create("accessors-b", NULL));
	n = bl_pool_stats_all(st, BL_POOL_MAX);
	ck_assert_int_ge(n, 3);
	/* one entry asked for: one written, the count still all of them */
	memset(st, 0x5a, sizeof(st));
	ck_assert_int_eq(bl_pool_stats_all(st, 1), n);
	ck_assert_int_lt((int)strnlen(st[0].name, BL_POOL_NAME_MAX),
			 BL_POOL_NAME_MAX);
	for (size_t b = 0; b < sizeof(st[1]); b++)
		ck_assert_uint_eq(((unsigned char *)&st[1])[b], 0x5a);
	/* none asked for (nothing written, so no array needed), or less */
	ck_assert_int_eq(bl_pool_stats_all(NULL, 0), n);
	ck_assert_int_eq(bl_pool_stats_all(NULL, -1), n);
}
END_TEST

/* ---- bl_msgr_conn_fd ---------------------------------------------------- */

static void on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	(void)c;
	(void)err;
	(void)reason;
	*(bool *)arg = true;
}

/* A connection over one end of a socket pair, closed and run to its end:
 * whether its descriptor is still open afterwards. */
static bool fd_open_after_close(bool keep_fd)
{
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn *c;
	struct bl_uring *u;
	bool closed = false, open_after;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	u = bl_uring_create(NULL);
	ck_assert_ptr_nonnull(u);
	memset(&o, 0, sizeof(o));
	o.on_close = on_close;
	o.arg = &closed;
	o.keep_fd = keep_fd;
	c = bl_msgr_conn_new(u, sv[0], &o);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(bl_msgr_conn_fd(c), sv[0]);
	bl_msgr_conn_close(c, 0, NULL);
	for (int i = 0; i < 1000 && !closed; i++)
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
	ck_assert(closed);
	open_after = fcntl(sv[0], F_GETFD) != -1;
	if (open_after)
		close(sv[0]);
	else
		ck_assert_int_eq(errno, EBADF);
	close(sv[1]);
	bl_uring_destroy(u);
	return open_after;
}

START_TEST(msgr_conn_fd_is_the_socket_the_connection_closes)
{
	ck_assert(!fd_open_after_close(false));
}
END_TEST

START_TEST(msgr_conn_fd_is_the_socket_keep_fd_leaves_open)
{
	ck_assert(fd_open_after_close(true));
}
END_TEST

int main(void)
{
	const TTest *allocator_tests[] = {
		allocator_get_gives_a_default_that_allocates,
		allocator_get_gives_the_installed_one_then_the_default_again,
		allocator_get_copies_so_changing_the_copy_changes_nothing,
		NULL
	};
	const TTest *pool_stats_tests[] = {
		pool_stats_all_has_each_pool_as_get_stats_sees_it,
		pool_stats_all_writes_at_most_max_and_counts_all,
		NULL
	};
	const TTest *msgr_fd_tests[] = {
		msgr_conn_fd_is_the_socket_the_connection_closes,
		msgr_conn_fd_is_the_socket_keep_fd_leaves_open,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("allocator", allocator_tests),
		TU_GROUP("pool_stats", pool_stats_tests),
		TU_GROUP("msgr_fd", msgr_fd_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("accessors", groups));
}
