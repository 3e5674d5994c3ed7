/* SPDX-License-Identifier: MIT */
/*
 * lz4_cli.c - bl_lz4 speaks the lz4 command's format both ways: a list
 * compressed segment by segment is decompressed by `lz4 -d`, and a file
 * compressed by `lz4` is decompressed into a list.  Exits 77 (skipped)
 * without the lz4 command.  Build:
 * cc lz4_cli.c $(pkg-config --cflags --libs bufferlist)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bufferlist.h>

/* Calls return 0 (or a count) or a negative errno; conditions must hold. */
static void die(const char *what, int err)
{
	fprintf(stderr, "lz4_cli: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}
#define CHECK(call) do {						\
		long rc_ = (long)(call);				\
		if (rc_ < 0)						\
			die(#call, (int)-rc_);				\
	} while (0)

/* Runs `lz4 -q -f ARGS IN OUT` in @dir; IN and OUT are names in @dir. */
static int lz4(const char *dir, const char *args, const char *in,
	       const char *out)
{
	char cmd[8400];

	snprintf(cmd, sizeof(cmd), "cd '%s' && lz4 -q -f %s %s %s", dir, args,
		 in, out);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	struct bl_list text = BL_LIST_INIT(text), frame = BL_LIST_INIT(frame);
	struct bl_list back = BL_LIST_INIT(back);
	struct bl_lz4_opts opts = { .content_checksum = true,
				    .content_size = true };
	static const char *const files[] = { "ours.lz4", "ours.txt",
					     "theirs.txt", "theirs.lz4" };
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	ssize_t n;

	if (system("lz4 --version >/dev/null 2>&1") != 0) {
		printf("lz4_cli: no lz4 command (apt install lz4): skipped\n");
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/bl-lz4-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp", errno);

	/* text in many segments: one per line, as a log would collect it */
	for (int i = 0; i < 5000; i++) {
		char line[96];
		int len = snprintf(line, sizeof(line),
				   "%05d the quick brown fox jumps over %d dogs\n",
				   i, i % 17);
		struct bl_ptr p;

		CHECK(bl_ptr_alloc(&p, (size_t)len));
		memcpy(bl_ptr_data(&p), line, (size_t)len);
		CHECK(bl_list_append_ptr_move(&text, &p));
	}

	/* 1. ours -> lz4 -d: compressed without joining the segments */
	n = bl_lz4_compress(&text, &frame, &opts);
	CHECK(n);
	printf("%zu bytes in %u segments -> a %zd-byte frame\n",
	       bl_list_length(&text), bl_list_num_buffers(&text), n);
	snprintf(path, sizeof(path), "%s/ours.lz4", dir);
	CHECK(bl_list_write_file(&frame, path, 0600));
	if (lz4(dir, "-d", "ours.lz4", "ours.txt"))
		die("lz4 -d failed", 0);
	snprintf(path, sizeof(path), "%s/ours.txt", dir);
	CHECK(bl_list_read_file(&back, path));
	if (!bl_list_contents_equal(&back, &text))
		die("lz4 -d gave other bytes", 0);
	printf("lz4 -d gave the same %zu bytes\n", bl_list_length(&back));

	/* 2. lz4 -> ours: the command's frame decoded into a list */
	snprintf(path, sizeof(path), "%s/theirs.txt", dir);
	CHECK(bl_list_write_file(&text, path, 0600));
	if (lz4(dir, "-9", "theirs.txt", "theirs.lz4"))
		die("lz4 failed", 0);
	bl_list_clear(&frame);
	bl_list_clear(&back);
	snprintf(path, sizeof(path), "%s/theirs.lz4", dir);
	CHECK(bl_list_read_file(&frame, path));
	CHECK(bl_lz4_decompress(&frame, &back, 64 << 20));	/* bomb limit */
	if (!bl_list_contents_equal(&back, &text))
		die("bl_lz4_decompress gave other bytes", 0);
	printf("bl_lz4_decompress of lz4's %zu-byte frame: equal\n",
	       bl_list_length(&frame));

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
	bl_list_clear(&text);
	bl_list_clear(&frame);
	bl_list_clear(&back);
	return 0;
}
