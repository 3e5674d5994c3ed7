/* SPDX-License-Identifier: MIT */
/*
 * direct_write.c - the storage write path: segments allocated aligned for
 * O_DIRECT, the list padded to whole blocks, written through io_uring
 * with O_DIRECT without a copy, read back and verified.  A file system
 * that refuses O_DIRECT (tmpfs) gets the same writes buffered, with a note.
 * Build: cc direct_write.c $(pkg-config --cflags --libs bufferlist)
 */
#define _GNU_SOURCE		/* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bufferlist.h>

/* Calls return 0 (or a count) or a negative errno; conditions must hold. */
static void die(const char *what, int err)
{
	fprintf(stderr, "direct_write: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}
#define CHECK(call) do {						\
		long rc_ = (long)(call);				\
		if (rc_ < 0)						\
			die(#call, (int)-rc_);				\
	} while (0)
#define REQUIRE(cond) do { if (!(cond)) die("failed: " #cond, 0); } while (0)

int main(void)
{
	struct bl_list l = BL_LIST_INIT(l), back = BL_LIST_INIT(back);
	const char *tmp = getenv("TMPDIR");
	size_t mem_align = 4096, off_align = 4096, len;
	char dir[4096], path[4200];
	struct bl_uring *u;
	bool direct = true;
	ssize_t pad;
	int fd;

	snprintf(dir, sizeof(dir), "%s/bl-dio-XXXXXX", tmp ? tmp : "/tmp");
	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0 && errno == EINVAL) {
		printf("note: %s refuses O_DIRECT (%s): writing buffered\n",
		       dir, strerror(errno));
		direct = false;
		fd = open(path, O_RDWR | O_CREAT, 0600);
	}
	REQUIRE(fd >= 0);
	if (direct)	/* what this file needs: statx(STATX_DIOALIGN) */
		CHECK(bl_fd_dio_align(fd, &mem_align, &off_align));

	/* four 4 KiB blocks and 1000 bytes, each in a segment whose memory
	 * starts on the alignment, as a storage daemon fills its buffers */
	for (int i = 0; i < 5; i++) {
		struct bl_ptr p;
		size_t n = i < 4 ? 4096 : 1000;

		CHECK(bl_ptr_alloc_aligned(&p, n, mem_align));
		memset(bl_ptr_data(&p), 'a' + i, n);
		CHECK(bl_list_append_ptr_move(&l, &p));
	}
	len = bl_list_length(&l);
	/* O_DIRECT writes whole blocks: zeros up to the next one, in an
	 * aligned raw, so the list stays aligned */
	pad = bl_list_pad_to(&l, off_align);
	CHECK(pad);
	if (direct)	/* 0: nothing had to be copied */
		REQUIRE(bl_list_prepare_dio(&l, fd) == 0);
	printf("%zu bytes + %zd of padding in %u segments (memory %zu, "
	       "offsets %zu)\n", len, pad, bl_list_num_buffers(&l),
	       mem_align, off_align);

	/* one write and one read through io_uring, each waited for */
	u = bl_uring_create(NULL);
	if (!u) {
		perror("direct_write: bl_uring_create");
		return 1;
	}
	printf("back end: %s%s\n", bl_uring_backend(u) == BL_URING_IO_URING ?
	       "io_uring" : "blocking: ", bl_uring_backend_reason(u));
	REQUIRE(bl_uring_write_wait(u, fd, 0, &l) == (ssize_t)bl_list_length(&l));
	/* reads into raws aligned as O_DIRECT wants them */
	REQUIRE(bl_uring_read_wait(u, fd, 0, bl_list_length(&l), mem_align,
				   &back) == (ssize_t)bl_list_length(&l));
	REQUIRE(bl_list_contents_equal(&back, &l));
	printf("read back %zu bytes%s: equal\n", bl_list_length(&back),
	       direct ? " with O_DIRECT" : "");

	bl_uring_destroy(u);
	close(fd);
	unlink(path);
	rmdir(dir);
	bl_list_clear(&l);
	bl_list_clear(&back);
	return 0;
}
