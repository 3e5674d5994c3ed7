// SPDX-License-Identifier: MIT
/*
 * test_ceph_cpp.cc - the Ceph bridge without a cluster: to_ceph() and
 * from_ceph() between struct bl_list and in-memory ceph::bufferlists
 * (pointer identity proves that no byte moved, reference counts on both
 * sides prove who holds what, a failing allocator proves failed calls
 * change nothing), list_ref's and unique_list's moves, completions,
 * compound ops holding their lists' bytes, the 64-bit read result, and
 * the argument checks of the C API and the C++ aio calls.  Runs in `make
 * check`; inside `make check-ceph`'s cluster (CEPH_CONF, BL_CEPH_POOL) it
 * also runs the C++ aio calls and librados' own compound ops carrying our
 * lists against it; test/test_ceph.c and
 * test/test_ceph_ops.c do the C API's I/O.
 */
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>
#include <sys/mman.h>
#include <sys/uio.h>

#include <bufferlist/ceph.hpp>
#include <bufferlist/pool.h>
#include <bufferlist/ptr.h>
#include <bufferlist/raw.h>
#include "ceph_int.h"
// last: check.h defines a macro named fail, which <ios> uses as a name
#include <check.h>

// From test/testutil.h, which is C only (it includes list_int.h).
extern "C" {
void tu_alloc_install(uint64_t fail_at, int sticky);
void tu_alloc_uninstall(void);
void tu_append_segmented(struct bl_list *l, const void *data, size_t len,
			 size_t max_seg, int own_raws, uint64_t *rng);
void tu_fill(void *buf, size_t len, uint64_t *rng);
uint64_t tu_seed(const char *who);
int tu_run(Suite *s);
}

static uint64_t g_rng;

static uint64_t copied_now()
{
	struct bl_stats s;

	bl_stats_get(&s);
	return s.copied_bytes;
}

// n segments, each its own raw, of random sizes in [1, max_seg]
static std::vector<char> make_list(struct bl_list *l, size_t len,
				   size_t max_seg)
{
	std::vector<char> want(len);

	tu_fill(want.data(), len, &g_rng);
	tu_append_segmented(l, want.data(), len, max_seg, 1, &g_rng);
	return want;
}

static std::vector<struct iovec> segments(const struct bl_list *l)
{
	std::vector<struct iovec> v(bl_list_num_buffers(l) + 1);
	int n = bl_list_to_iovec(l, 0, v.data(), int(v.size()));

	ck_assert_int_ge(n, 0);
	v.resize(size_t(n));
	return v;
}

static std::vector<char> flatten(const ::ceph::bufferlist &bl)
{
	std::vector<char> v;

	for (const auto &p : bl.buffers())
		v.insert(v.end(), p.c_str(), p.c_str() + p.length());
	return v;
}

static std::vector<char> flatten(const struct bl_list *l)
{
	std::vector<char> v(bl_list_length(l));

	if (!v.empty())
		ck_assert_int_eq(bl_list_copy_out(l, 0, v.size(), v.data()), 0);
	return v;
}

/* ---- to_ceph -------------------------------------------------------------- */

START_TEST(test_to_ceph_points_at_our_segments_without_copying)
{
	struct bl_list l;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;

	bl_list_init(&l);
	std::vector<char> want = make_list(&l, 300000, 7001);
	std::vector<struct iovec> seg = segments(&l);
	uint64_t c0 = copied_now();

	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);
	ck_assert_uint_eq(out.length(), want.size());
	ck_assert_uint_eq(out.get_num_buffers(), seg.size());
	size_t i = 0;
	for (const auto &p : out.buffers()) {
		// the very bytes of our segment, not a copy of them
		ck_assert_ptr_eq(p.c_str(), seg[i].iov_base);
		ck_assert_uint_eq(p.length(), seg[i].iov_len);
		i++;
	}
	ck_assert(flatten(out) == want);
	ck_assert_uint_eq(hold.length(), want.size());
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_to_ceph_hold_keeps_bytes_after_the_caller_drops_its_list)
{
	struct bl_list l;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;
	struct bl_ptr p;

	bl_list_init(&l);
	std::vector<char> want = make_list(&l, 50000, 999);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	unsigned n0 = bl_raw_nref(p.raw);	// ours (p) + the list's

	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
	// every segment is alive through hold alone (ASan would see a
	// use-after-free otherwise)
	ck_assert(flatten(out) == want);
	hold.reset();
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0 - 1);
	ck_assert_uint_eq(hold.length(), 0);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_to_ceph_appends_to_what_out_and_hold_have)
{
	struct bl_list a, b;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;

	bl_list_init(&a);
	bl_list_init(&b);
	std::vector<char> wa = make_list(&a, 10000, 300);
	std::vector<char> wb = make_list(&b, 777, 100);
	out.append("xyz", 3);
	ck_assert_int_eq(bl::ceph::to_ceph(&a, &out, &hold), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(&b, &out, &hold), 0);
	bl_list_clear(&a);
	bl_list_clear(&b);

	std::vector<char> want = { 'x', 'y', 'z' };
	want.insert(want.end(), wa.begin(), wa.end());
	want.insert(want.end(), wb.begin(), wb.end());
	ck_assert(flatten(out) == want);
	ck_assert_uint_eq(hold.length(), wa.size() + wb.size());
}
END_TEST

START_TEST(test_to_ceph_of_an_empty_list_adds_nothing)
{
	struct bl_list l;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;

	bl_list_init(&l);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), 0);
	ck_assert_uint_eq(out.length(), 0);
	ck_assert_uint_eq(out.get_num_buffers(), 0);
	ck_assert_uint_eq(hold.length(), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(nullptr, &out, &hold), -EINVAL);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, nullptr, &hold), -EINVAL);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, nullptr), -EINVAL);
}
END_TEST

// A 3 GiB segment over reserved, never touched address space: Ceph's
// lengths are 32-bit, so it becomes a 2 GiB and a 1 GiB segment; a list
// longer than 4 GiB does not fit a ceph::bufferlist at all.
START_TEST(test_to_ceph_splits_huge_segments_and_refuses_over_4_gib)
{
	const size_t gib = size_t(1) << 30;
	size_t len = 5 * gib;
	char *mem = static_cast<char *>(mmap(nullptr, len, PROT_NONE,
					     MAP_PRIVATE | MAP_ANONYMOUS |
						     MAP_NORESERVE,
					     -1, 0));
	ck_assert(mem != MAP_FAILED);

	struct bl_list l;
	struct bl_ptr p;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;

	bl_list_init(&l);
	bl_ptr_from_raw(&p, bl_raw_create_static(mem, 3 * gib));
	ck_assert_ptr_nonnull(p.raw);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), 0);
	ck_assert_uint_eq(out.get_num_buffers(), 2);
	ck_assert_ptr_eq(out.buffers().front().c_str(), mem);
	ck_assert_uint_eq(out.buffers().front().length(), 2 * gib);
	ck_assert_ptr_eq(out.buffers().back().c_str(), mem + 2 * gib);
	ck_assert_uint_eq(out.buffers().back().length(), gib);

	// 3 GiB more than 3 GiB: past UINT_MAX
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), -E2BIG);
	ck_assert_uint_eq(out.length(), 3 * gib);
	ck_assert_uint_eq(hold.length(), 3 * gib);

	out.clear();
	hold.reset();
	bl_list_clear(&l);
	bl_ptr_from_raw(&p, bl_raw_create_static(mem, len));
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), -E2BIG);
	ck_assert_uint_eq(out.length(), 0);
	ck_assert_uint_eq(hold.length(), 0);
	bl_list_clear(&l);
	munmap(mem, len);
}
END_TEST

START_TEST(test_to_ceph_failure_changes_nothing)
{
	struct bl_list l;
	struct bl_ptr p;
	int e = -ENOMEM;

	bl_list_init(&l);
	std::vector<char> want = make_list(&l, 200000, 1000);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	unsigned n0 = bl_raw_nref(p.raw);

	for (uint64_t fail = 1; e == -ENOMEM && fail < 1000; fail++) {
		::ceph::bufferlist out;
		bl::ceph::list_ref hold;

		out.append("ab", 2);
		tu_alloc_install(fail, 1);
		e = bl::ceph::to_ceph(&l, &out, &hold);
		tu_alloc_uninstall();
		if (e == -ENOMEM) {
			ck_assert_uint_eq(out.length(), 2);
			ck_assert_uint_eq(out.get_num_buffers(), 1);
			ck_assert_uint_eq(hold.length(), 0);
			ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
		} else {
			ck_assert_int_eq(e, 0);
			ck_assert_uint_eq(out.length(), 2 + want.size());
			ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
		}
	}
	ck_assert_int_eq(e, 0);
	bl_ptr_release(&p);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_list_ref_moves_its_references)
{
	struct bl_list l;
	struct bl_ptr p;
	::ceph::bufferlist out;
	bl::ceph::list_ref a;

	bl_list_init(&l);
	make_list(&l, 5000, 100);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &a), 0);
	bl_list_clear(&l);
	unsigned n = bl_raw_nref(p.raw);	// p + a

	bl::ceph::list_ref b(std::move(a));
	ck_assert_uint_eq(a.length(), 0);
	ck_assert_uint_eq(b.length(), 5000);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n);
	bl::ceph::list_ref c;
	c = std::move(b);
	ck_assert_uint_eq(b.length(), 0);
	ck_assert_uint_eq(c.length(), 5000);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n);
	c = bl::ceph::list_ref();
	ck_assert_uint_eq(bl_raw_nref(p.raw), n - 1);
	bl_ptr_release(&p);
}
END_TEST

/* ---- from_ceph ------------------------------------------------------------ */

// A bufferlist of @n Ceph buffers of odd sizes, with random contents.
static ::ceph::bufferlist ceph_list(unsigned n, std::vector<char> *want)
{
	::ceph::bufferlist bl;

	for (unsigned i = 0; i < n; i++) {
		unsigned len = 1 + 997 * i % 40009;
		::ceph::buffer::ptr p(len);

		tu_fill(p.c_str(), len, &g_rng);
		want->insert(want->end(), p.c_str(), p.c_str() + len);
		bl.append(std::move(p));
	}
	return bl;
}

START_TEST(test_from_ceph_claims_ceph_buffers_without_copying)
{
	std::vector<char> want;
	::ceph::bufferlist bl = ceph_list(37, &want);
	std::vector<::ceph::buffer::ptr> keep(bl.buffers().begin(),
					      bl.buffers().end());
	struct bl_list out;
	long live0 = bl__ceph_live_ptrs();
	uint64_t c0 = copied_now();

	bl_list_init(&out);
	for (const auto &p : keep)
		ck_assert_int_eq(p.raw_nref(), 2);	// keep + bl
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(bl), &out), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl.length(), 0);
	ck_assert_uint_eq(bl.get_num_buffers(), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&out), keep.size());
	ck_assert_int_eq(bl__ceph_live_ptrs() - live0, long(keep.size()));
	for (unsigned i = 0; i < keep.size(); i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&out, i, &p), 0);
		ck_assert_ptr_eq(bl_ptr_data(&p), keep[i].c_str());
		ck_assert_uint_eq(p.len, keep[i].length());
		ck_assert(!bl_raw_is_static(p.raw));
		ck_assert_ptr_eq(bl_raw_data(p.raw), keep[i].c_str());
		// the claimed raw holds one reference to the Ceph buffer
		ck_assert_int_eq(keep[i].raw_nref(), 2);
		bl_ptr_release(&p);
	}
	ck_assert(flatten(&out) == want);

	// dropping the list runs the free callbacks: Ceph's buffers go back
	bl_list_clear(&out);
	ck_assert_int_eq(bl__ceph_live_ptrs(), live0);
	for (const auto &p : keep)
		ck_assert_int_eq(p.raw_nref(), 1);
}
END_TEST

START_TEST(test_from_ceph_slice_outlives_the_list)
{
	::ceph::bufferlist bl;
	::ceph::buffer::ptr keep(4096);
	struct bl_list out;
	struct bl_ptr p;

	memset(keep.c_str(), 'k', 4096);
	bl.append(keep);
	bl_list_init(&out);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(bl), &out), 0);
	ck_assert_int_eq(bl_list_get_ptr(&out, 0, &p), 0);
	bl_list_clear(&out);
	ck_assert_int_eq(keep.raw_nref(), 2);	// p still holds it
	ck_assert_int_eq(bl_ptr_data(&p)[4095], 'k');
	bl_ptr_release(&p);
	ck_assert_int_eq(keep.raw_nref(), 1);
}
END_TEST

START_TEST(test_from_ceph_appends_and_skips_empty_buffers)
{
	::ceph::bufferlist bl;
	struct bl_list out;

	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&out, "head", 4), 0);
	bl.append(::ceph::buffer::ptr(0));
	bl.append("abc", 3);
	bl.append(::ceph::buffer::create(0));
	::ceph::buffer::ptr p(5);
	memcpy(p.c_str(), "defgh", 5);
	bl.append(p);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(bl), &out), 0);
	ck_assert_uint_eq(bl_list_length(&out), 12);
	std::vector<char> got = flatten(&out);
	ck_assert(memcmp(got.data(), "headabcdefgh", 12) == 0);
	bl_list_clear(&out);

	::ceph::bufferlist empty;
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(empty), &out), 0);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(empty), nullptr),
			 -EINVAL);
}
END_TEST

START_TEST(test_from_ceph_failure_changes_nothing)
{
	int e = -ENOMEM;
	long live0 = bl__ceph_live_ptrs();
	uint64_t fail;

	for (fail = 1; e == -ENOMEM && fail < 1000; fail++) {
		std::vector<char> want;
		::ceph::bufferlist bl = ceph_list(20, &want);
		std::vector<::ceph::buffer::ptr> keep(bl.buffers().begin(),
						      bl.buffers().end());
		struct bl_list out;

		bl_list_init(&out);
		ck_assert_int_eq(bl_list_append(&out, "x", 1), 0);
		tu_alloc_install(fail, 1);
		e = bl::ceph::from_ceph(std::move(bl), &out);
		tu_alloc_uninstall();
		if (e == -ENOMEM) {
			ck_assert_uint_eq(bl_list_length(&out), 1);
			ck_assert_uint_eq(bl.length(), want.size());
			ck_assert(flatten(bl) == want);
			ck_assert_int_eq(bl__ceph_live_ptrs(), live0);
			for (const auto &p : keep)
				ck_assert_int_eq(p.raw_nref(), 2);
		} else {
			ck_assert_int_eq(e, 0);
			ck_assert_uint_eq(bl_list_length(&out), 1 + want.size());
		}
		bl_list_clear(&out);
		ck_assert_int_eq(bl__ceph_live_ptrs(), live0);
	}
	ck_assert_int_eq(e, 0);
	ck_assert_uint_gt(fail, 2);	// some allocation did fail first
}
END_TEST

START_TEST(test_round_trip_keeps_the_bytes_and_the_addresses)
{
	struct bl_list l, back;
	::ceph::bufferlist out;
	bl::ceph::list_ref hold;

	bl_list_init(&l);
	bl_list_init(&back);
	std::vector<char> want = make_list(&l, 123457, 4099);
	std::vector<struct iovec> seg = segments(&l);
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &out, &hold), 0);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(out), &back), 0);
	ck_assert(bl_list_contents_equal(&l, &back));
	std::vector<struct iovec> seg2 = segments(&back);
	ck_assert_uint_eq(seg2.size(), seg.size());
	for (size_t i = 0; i < seg.size(); i++)
		ck_assert_ptr_eq(seg2[i].iov_base, seg[i].iov_base);
	bl_list_clear(&back);
	bl_list_clear(&l);
}
END_TEST

/* ---- the C API without a cluster ---------------------------------------- */

static void never_cb(int, void *)
{
	ck_abort_msg("callback of a refused call ran");
}

START_TEST(test_c_api_refuses_null_arguments)
{
	struct bl_list l;
	int err = 1;

	bl_list_init(&l);
	ck_assert_ptr_null(bl_rados_open(nullptr, nullptr, &err));
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_null(bl_rados_open(nullptr, nullptr, nullptr));
	bl_rados_close(nullptr);
	ck_assert_int_eq(bl_rados_write(nullptr, "o", &l, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_write_full(nullptr, "o", &l), -EINVAL);
	ck_assert_int_eq(bl_rados_read(nullptr, "o", 0, 1, &l), -EINVAL);
	ck_assert_int_eq(bl_rados_stat(nullptr, "o", nullptr, nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_remove(nullptr, "o"), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_write(nullptr, "o", &l, 0, never_cb,
					    nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_aio_write_full(nullptr, "o", &l, never_cb,
						 nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_aio_read(nullptr, "o", 0, 1, &l, never_cb,
					   nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_aio_remove(nullptr, "o", never_cb, nullptr),
			 -EINVAL);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);
}
END_TEST

/* The new calls of the C API, without a cluster: NULL handles refused. */
START_TEST(test_c_api_handle_calls_refuse_null)
{
	const char *odd[] = { "rados_osd_op_timeout", nullptr };
	int err = 1;

	ck_assert_ptr_null(bl_rados_open2(nullptr, nullptr, nullptr, nullptr,
					  &err));
	ck_assert_int_eq(err, -EINVAL);
	err = 1;
	ck_assert_ptr_null(bl_rados_open2(nullptr, "admin", "p", odd, &err));
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_int_eq(bl_rados_aio_flush(nullptr, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_set_namespace(nullptr, "n"), -EINVAL);
	ck_assert_int_eq(bl_rados_set_locator(nullptr, "k"), -EINVAL);
	ck_assert_ptr_null(bl_rados_cluster(nullptr));
	ck_assert_ptr_null(bl_rados_ioctx(nullptr));
}
END_TEST

/*
 * BL_LIST_INIT in C++ (g++ 12 refused its designator order before; it is
 * positional now, which -pedantic takes from C++11 on): the same list as
 * bl_list_init() makes, member by member.
 */
static struct bl_list g_static_list = BL_LIST_INIT(g_static_list);

START_TEST(test_bl_list_init_compiles_and_works_in_cpp)
{
	struct bl_list l = BL_LIST_INIT(l);
	char out[5] = { 0 };

	struct bl_list ref;

	bl_list_init(&ref);
	ck_assert_ptr_eq(l._tail, &l._inl);
	ck_assert_ptr_eq(g_static_list._tail, &g_static_list._inl);
	ck_assert_uint_eq(l._len, ref._len);
	ck_assert_uint_eq(l._nseg, ref._nseg);
	ck_assert_uint_eq(l._abuf_next, ref._abuf_next);
	ck_assert_ptr_eq(l._abuf, ref._abuf);
	ck_assert_ptr_eq(l._ext, ref._ext);
	ck_assert_ptr_eq(l._lidx, ref._lidx);
	ck_assert_ptr_eq(l._inl.next, ref._inl.next);
	ck_assert_uint_eq(l._inl.start, ref._inl.start);
	ck_assert_uint_eq(l._inl.count, ref._inl.count);
	ck_assert_uint_eq(l._inl.cap, ref._inl.cap);
	ck_assert_uint_eq(l._inl._gen, ref._inl._gen);
	ck_assert_ptr_eq(l._pool, ref._pool);
	ck_assert_uint_eq(bl_list_length(&l), 0);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_list_copy_out(&l, 0, 5, out), 0);
	ck_assert_int_eq(memcmp(out, "hello", 5), 0);
	ck_assert_int_eq(bl_list_append_list(&g_static_list, &l), 0);
	ck_assert_uint_eq(bl_list_length(&g_static_list), 5);
	bl_list_clear(&g_static_list);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_open_with_a_missing_conf_file_fails_with_enoent)
{
	int err = 0;

	ck_assert_ptr_null(bl_rados_open("/nonexistent/ceph.conf", "p", &err));
	ck_assert_int_eq(err, -ENOENT);
}
END_TEST

/* ---- unique_list --------------------------------------------------------- */

static_assert(!std::is_copy_constructible<bl::ceph::unique_list>::value &&
		      !std::is_copy_assignable<bl::ceph::unique_list>::value,
	      "unique_list is move-only");
static_assert(std::is_nothrow_move_constructible<bl::ceph::unique_list>::value &&
		      std::is_nothrow_move_assignable<bl::ceph::unique_list>::value,
	      "unique_list moves without throwing");

START_TEST(test_unique_list_clears_when_destroyed_and_moves_its_segments)
{
	struct bl_list src;
	struct bl_ptr p;

	bl_list_init(&src);
	std::vector<char> want = make_list(&src, 5000, 300);
	ck_assert_int_eq(bl_list_get_ptr(&src, 0, &p), 0);
	unsigned n0 = bl_raw_nref(p.raw);
	{
		bl::ceph::unique_list a;

		ck_assert_uint_eq(a.length(), 0);
		// converts for the C calls
		ck_assert_int_eq(bl_list_append_list(a, &src), 0);
		ck_assert_uint_eq(a.length(), 5000);
		ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);

		bl::ceph::unique_list b(std::move(a));
		ck_assert_uint_eq(a.length(), 0);
		ck_assert_uint_eq(b.length(), 5000);
		ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
		// the moved-from list is usable
		ck_assert_int_eq(bl_list_append(a.get(), "xy", 2), 0);
		ck_assert_uint_eq(bl_list_length(a.get()), 2);

		// assignment drops what the target held
		a = std::move(b);
		ck_assert_uint_eq(a.length(), 5000);
		ck_assert_uint_eq(b.length(), 0);
		a = std::move(a);
		ck_assert_uint_eq(a.length(), 5000);
		const bl::ceph::unique_list &ca = a;
		ck_assert(bl_list_contents_equal(ca.get(), &src));

		bl::ceph::unique_list c;
		ck_assert_int_eq(bl_list_append_list(c, &src), 0);
		ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 2);
		c.clear();
		ck_assert_uint_eq(c.length(), 0);
		ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
	}
	// the destructors dropped every reference
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
	bl_ptr_release(&p);
	bl_list_clear(&src);
}
END_TEST

/* ---- results, completions and ops without a cluster --------------------- */

START_TEST(test_read_result_takes_the_answer_length_over_librados_int)
{
	const uint64_t gib = uint64_t(1) << 30;

	ck_assert_int_eq(bl__ceph_read_result(5, 5), 5);
	ck_assert_int_eq(bl__ceph_read_result(0, 0), 0);
	ck_assert_int_eq(bl__ceph_read_result(-ENOENT, 0), -ENOENT);
	ck_assert_int_eq(bl__ceph_read_result(-ETIMEDOUT, 0), -ETIMEDOUT);
	// 2 GiB and more come from librados as a negative int
	ck_assert_int_eq(bl__ceph_read_result(int(uint32_t(2 * gib)), 2 * gib),
			 int64_t(2 * gib));
	ck_assert_int_eq(bl__ceph_read_result(int(uint32_t(3 * gib + 7)),
					      3 * gib + 7),
			 int64_t(3 * gib + 7));
	ck_assert_int_eq(bl__ceph_read_result(-1, 4 * gib - 1),
			 int64_t(4 * gib - 1));
}
END_TEST

START_TEST(test_completion_wakes_its_waiters_with_the_result)
{
	struct bl_rados_completion *c = bl_rados_completion_create();
	int64_t res = 42;

	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, &res), -ETIMEDOUT);
	ck_assert_int_eq(bl_rados_completion_wait(c, 30, &res), -ETIMEDOUT);
	ck_assert_int_eq(res, 42);
	std::thread t([c] {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		bl_rados_completion_cb(-ENOENT, c);
	});
	int64_t r2 = 0;
	std::thread waiter([c, &r2] {
		ck_assert_int_eq(bl_rados_completion_wait(c, -1, &r2), 0);
	});
	ck_assert_int_eq(bl_rados_completion_wait(c, -1, &res), 0);
	waiter.join();
	t.join();
	ck_assert_int_eq(res, -ENOENT);
	ck_assert_int_eq(r2, -ENOENT);
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, nullptr), 0);
	bl_rados_completion_release(c);

	// the 64-bit callback keeps results past 2 GiB
	c = bl_rados_completion_create();
	bl_rados_completion_cb64(int64_t(5) << 30, c);
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, &res), 0);
	ck_assert_int_eq(res, int64_t(5) << 30);
	bl_rados_completion_release(c);
	bl_rados_completion_release(nullptr);
	ck_assert_int_eq(bl_rados_completion_wait(nullptr, 0, &res), -EINVAL);
}
END_TEST

START_TEST(test_op_steps_hold_the_bytes_until_release_and_fail_cleanly)
{
	struct bl_list l;
	struct bl_ptr p;
	int e = -ENOMEM;

	bl_list_init(&l);
	make_list(&l, 100000, 1000);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	unsigned n0 = bl_raw_nref(p.raw);

	// an allocation failure in a step: -ENOMEM, no reference taken
	for (uint64_t fail = 1; e == -ENOMEM && fail < 1000; fail++) {
		struct bl_rados_write_op *op = bl_rados_create_write_op();

		ck_assert_ptr_nonnull(op);
		tu_alloc_install(fail, 1);
		e = bl_rados_write_op_write(op, &l, 0);
		tu_alloc_uninstall();
		if (e == -ENOMEM) {
			ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
		} else {
			ck_assert_int_eq(e, 0);
			ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
		}
		bl_rados_release_write_op(op);
		ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
	}
	ck_assert_int_eq(e, 0);

	// the op holds the bytes of every list step, the caller's list not
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	const char *key = "k";
	const struct bl_list *vals[] = { &l };
	ck_assert_int_eq(bl_rados_write_op_append(op, &l), 0);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "a", &l), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, &key, vals, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, &l, 0, nullptr), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 4);
	bl_rados_release_write_op(op);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0);

	struct bl_rados_read_op *rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_cmpext(rop, &l, 0, nullptr), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, nullptr, "o"), -EINVAL);
	bl_rados_release_read_op(rop);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
	bl_ptr_release(&p);
	bl_list_clear(&l);
	ck_assert_uint_eq(copied_now(), 0);
}
END_TEST

START_TEST(test_cpp_aio_calls_refuse_bad_arguments_and_keep_hold_as_it_was)
{
	librados::IoCtx io;	// never used: every call fails first
	librados::AioCompletion *c = librados::Rados::aio_create_completion();
	bl::ceph::list_ref hold;
	::ceph::bufferlist bl;
	struct bl_list l;
	uint64_t size;
	std::time_t mtime;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl::ceph::aio_write(io, "o", nullptr, &l, 0, &hold),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_write(io, "o", c, &l, 0, nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_write_full(io, "o", c, nullptr, &hold),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_append(io, "o", nullptr, &l, &hold),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_read(io, "o", c, 0, 1, nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_read(io, "o", nullptr, 0, 1, &bl),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_stat(io, "o", c, nullptr, &mtime),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_stat(io, "o", c, &size, nullptr),
			 -EINVAL);
	ck_assert_int_eq(bl::ceph::aio_remove(io, "o", nullptr), -EINVAL);
	ck_assert_uint_eq(hold.length(), 0);
	// a hold that already holds something is refused, and keeps it
	ck_assert_int_eq(bl::ceph::to_ceph(&l, &bl, &hold), 0);
	ck_assert_int_eq(bl::ceph::aio_write(io, "o", c, &l, 0, &hold),
			 -EINVAL);
	ck_assert_uint_eq(hold.length(), 3);
	c->release();
	bl_list_clear(&l);
}
END_TEST

/* ---- the C++ aio calls against a cluster (make check-ceph only) ---------- */

static void aio_wait_ok(librados::AioCompletion *c)
{
	ck_assert_int_eq(c->wait_for_complete(), 0);
}

START_TEST(test_cpp_aio_round_trip_on_a_cluster_without_copies)
{
	int err = 0;
	struct bl_rados *r = bl_rados_open(nullptr, getenv("BL_CEPH_POOL"), &err);
	ck_assert_msg(r != nullptr, "bl_rados_open: %d", err);
	librados::IoCtx io;
	librados::IoCtx::from_rados_ioctx_t(bl_rados_ioctx(r), io);
	std::string oid = "bl_test_ceph_cpp." + std::to_string(getpid());
	bl::ceph::unique_list data;
	std::vector<char> want = make_list(data, 1 << 20, 70000);
	bl::ceph::list_ref hold;
	uint64_t c0 = copied_now();

	librados::AioCompletion *c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_write_full(io, oid, c, data, &hold), 0);
	ck_assert_uint_eq(hold.length(), 1 << 20);
	data.clear();	// the hold keeps the bytes
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), 0);
	c->release();
	hold.reset();

	bl::ceph::unique_list tail;
	ck_assert_int_eq(bl_list_append(tail, "tail", 4), 0);
	c0 = copied_now();	// those 4 bytes went in by copy
	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_append(io, oid, c, tail, &hold), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), 0);
	c->release();
	hold.reset();
	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_write(io, oid, c, tail, 0, &hold), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), 0);
	c->release();
	hold.reset();
	std::memcpy(want.data(), "tail", 4);
	want.insert(want.end(), { 't', 'a', 'i', 'l' });

	uint64_t size = 0;
	std::time_t mtime = 0;
	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_stat(io, oid, c, &size, &mtime), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), 0);
	c->release();
	ck_assert_uint_eq(size, want.size());

	::ceph::bufferlist bl;
	bl::ceph::unique_list got;
	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_read(io, oid, c, 0, 2 << 20, &bl), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), int(want.size()));
	c->release();
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(bl), got), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(got.length(), want.size());
	std::vector<char> flat(want.size());
	ck_assert_int_eq(bl_list_copy_out(got, 0, flat.size(), flat.data()), 0);
	ck_assert(flat == want);

	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_remove(io, oid, c), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), 0);
	c->release();
	c = librados::Rados::aio_create_completion();
	ck_assert_int_eq(bl::ceph::aio_stat(io, oid, c, &size, &mtime), 0);
	aio_wait_ok(c);
	ck_assert_int_eq(c->get_return_value(), -ENOENT);
	c->release();
	io.close();
	bl_rados_close(r);
}
END_TEST

/*
 * A C++ client building librados' own ObjectWriteOperation and
 * ObjectReadOperation with our lists: to_ceph() gives each step a
 * ceph::bufferlist over the lists' bytes (the list_ref keeps them while
 * the lists themselves go), from_ceph() takes each answer into a list;
 * one compound write (write_full, omap_set, setxattr) and one compound
 * read (read, getxattr, omap by keys), no byte copied on either side.
 */
START_TEST(test_librados_ops_carry_our_lists_without_a_copy)
{
	int err = 0;
	struct bl_rados *r = bl_rados_open(nullptr, getenv("BL_CEPH_POOL"),
					   &err);
	ck_assert_msg(r != nullptr, "bl_rados_open: %d", err);
	librados::IoCtx io;
	librados::IoCtx::from_rados_ioctx_t(bl_rados_ioctx(r), io);
	std::string oid = "bl_test_ceph_cpp.ops." + std::to_string(getpid());
	bl::ceph::unique_list data, val, xv;
	std::vector<char> want = make_list(data, (1 << 20) + 3, 70000);
	std::vector<char> wval = make_list(val, 3000, 97);
	std::vector<char> wx = make_list(xv, 100, 7);
	std::vector<struct iovec> first = segments(data);
	bl::ceph::list_ref hold;
	::ceph::bufferlist bd, bv, bx;
	uint64_t c0 = copied_now(), r0 = bl_rados_copied_bytes();

	ck_assert_int_eq(bl::ceph::to_ceph(data, &bd, &hold), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(val, &bv, &hold), 0);
	ck_assert_int_eq(bl::ceph::to_ceph(xv, &bx, &hold), 0);
	// librados' op points at our first segment's bytes
	ck_assert_ptr_eq(bd.buffers().front().c_str(), first[0].iov_base);
	data.clear();	// the hold keeps every byte the op points at
	val.clear();
	xv.clear();
	{
		librados::ObjectWriteOperation op;
		std::map<std::string, ::ceph::bufferlist> kv;

		kv["k"] = bv;	// a ceph::bufferlist copy shares the buffers
		op.write_full(bd);
		op.omap_set(kv);
		op.setxattr("x", bx);
		ck_assert_int_eq(io.operate(oid, &op), 0);
	}
	hold.reset();	// librados is done with the bytes
	bd.clear();
	bv.clear();
	bx.clear();

	librados::ObjectReadOperation rop;
	::ceph::bufferlist rb, xb;
	std::map<std::string, ::ceph::bufferlist> vals;
	std::set<std::string> keys{ "k", "none" };
	int rv_read = 1, rv_x = 1, rv_omap = 1;

	rop.read(0, 2 << 20, &rb, &rv_read);
	rop.getxattr("x", &xb, &rv_x);
	rop.omap_get_vals_by_keys(keys, &vals, &rv_omap);
	ck_assert_int_eq(io.operate(oid, &rop, nullptr), 0);
	ck_assert_int_eq(rv_read, 0);
	ck_assert_int_eq(rv_x, 0);
	ck_assert_int_eq(rv_omap, 0);
	ck_assert_uint_eq(vals.size(), 1);

	bl::ceph::unique_list got, gx, gv;
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(rb), got), 0);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(xb), gx), 0);
	ck_assert_int_eq(bl::ceph::from_ceph(std::move(vals["k"]), gv), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), r0);
	// (copy_out counts: compared only after the counters)
	ck_assert(flatten(got.get()) == want);
	ck_assert(flatten(gx.get()) == wx);
	ck_assert(flatten(gv.get()) == wval);

	ck_assert_int_eq(io.remove(oid), 0);
	io.close();
	bl_rados_close(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ceph_cpp");
	TCase *tc = tcase_create("to_ceph");

	g_rng = tu_seed("test_ceph_cpp");
	tcase_add_test(tc, test_to_ceph_points_at_our_segments_without_copying);
	tcase_add_test(tc, test_to_ceph_hold_keeps_bytes_after_the_caller_drops_its_list);
	tcase_add_test(tc, test_to_ceph_appends_to_what_out_and_hold_have);
	tcase_add_test(tc, test_to_ceph_of_an_empty_list_adds_nothing);
	tcase_add_test(tc, test_to_ceph_splits_huge_segments_and_refuses_over_4_gib);
	tcase_add_test(tc, test_to_ceph_failure_changes_nothing);
	tcase_add_test(tc, test_list_ref_moves_its_references);
	suite_add_tcase(s, tc);

	tc = tcase_create("from_ceph");
	tcase_add_test(tc, test_from_ceph_claims_ceph_buffers_without_copying);
	tcase_add_test(tc, test_from_ceph_slice_outlives_the_list);
	tcase_add_test(tc, test_from_ceph_appends_and_skips_empty_buffers);
	tcase_add_test(tc, test_from_ceph_failure_changes_nothing);
	tcase_add_test(tc, test_round_trip_keeps_the_bytes_and_the_addresses);
	suite_add_tcase(s, tc);

	tc = tcase_create("c_api");
	tcase_add_test(tc, test_c_api_refuses_null_arguments);
	tcase_add_test(tc, test_open_with_a_missing_conf_file_fails_with_enoent);
	tcase_add_test(tc, test_c_api_handle_calls_refuse_null);
	tcase_add_test(tc, test_bl_list_init_compiles_and_works_in_cpp);
	tcase_add_test(tc, test_read_result_takes_the_answer_length_over_librados_int);
	tcase_add_test(tc, test_completion_wakes_its_waiters_with_the_result);
	tcase_add_test(tc, test_op_steps_hold_the_bytes_until_release_and_fail_cleanly);
	tcase_add_test(tc, test_cpp_aio_calls_refuse_bad_arguments_and_keep_hold_as_it_was);
	suite_add_tcase(s, tc);

	tc = tcase_create("unique_list");
	tcase_add_test(tc, test_unique_list_clears_when_destroyed_and_moves_its_segments);
	suite_add_tcase(s, tc);

	// make check-ceph runs this program inside its cluster too
	const char *conf = getenv("CEPH_CONF"), *pool = getenv("BL_CEPH_POOL");
	if (conf && *conf && pool && *pool) {
		tc = tcase_create("cluster");
		tcase_set_timeout(tc, 300);
		tcase_add_test(tc, test_cpp_aio_round_trip_on_a_cluster_without_copies);
		tcase_add_test(tc,
			test_librados_ops_carry_our_lists_without_a_copy);
		suite_add_tcase(s, tc);
	}
	return tu_run(s);
}
