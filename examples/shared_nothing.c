/* SPDX-License-Identifier: MIT */
/*
 * shared_nothing.c - worker threads whose buffers never leave them, so
 * their reference counts need no atomic instruction
 * (bl_raw_set_thread_local), and the one hand-over to another thread done
 * the safe way: a copy into a raw that is not thread-local.
 *
 * Each worker encodes a batch of frames ([u32 length][payload]) into one
 * list, parses it back with a cursor, sharing each payload into a list of
 * its own (a reference taken and dropped per frame, with plain loads and
 * stores), keeps the crc32c of every payload, and hands the main thread
 * its report: the crcs, copied into a shared raw (bl_list_copy_shared).
 * Build: cc shared_nothing.c $(pkg-config --cflags --libs bufferlist) -lpthread
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <bufferlist.h>

#define WORKERS 2
#define FRAMES 1000

struct worker {
	pthread_t thread;
	unsigned id;
	struct bl_list report;	/* FRAMES crcs, little-endian u32, shared raws */
	int err;
};

static size_t frame_len(unsigned w, unsigned i)
{
	return 16 + (w * 31u + i * 7u) % 200;
}

static void frame_bytes(char *p, size_t len, unsigned w, unsigned i)
{
	for (size_t k = 0; k < len; k++)
		p[k] = (char)(w + i + k);
}

/* Encodes the batch, then takes it apart again: all in this thread. */
static int work(struct worker *w, struct bl_list *crcs)
{
	struct bl_list frames = BL_LIST_INIT(frames);
	struct bl_list payload = BL_LIST_INIT(payload);
	struct bl_iter it;
	char buf[256];
	int ret = 0;

	for (unsigned i = 0; i < FRAMES && !ret; i++) {
		size_t len = frame_len(w->id, i);

		frame_bytes(buf, len, w->id, i);
		ret = bl_encode_u32(&frames, (uint32_t)len);
		if (!ret)
			ret = bl_list_append(&frames, buf, len);
	}
	if (!ret)
		ret = bl_iter_init(&it, &frames, 0);
	for (unsigned i = 0; i < FRAMES && !ret; i++) {
		uint32_t len;

		ret = bl_decode_u32(&it, &len);
		if (!ret)	/* shares the bytes: one plain count up */
			ret = bl_iter_copy_list(&it, len, &payload);
		if (!ret)
			ret = bl_encode_u32(crcs,
					    bl_list_crc32c(&payload, 0));
		bl_list_clear(&payload);	/* ... and one down */
	}
	bl_list_clear(&frames);
	return ret;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bl_list crcs = BL_LIST_INIT(crcs);
	struct bl_ptr first;

	bl_raw_set_thread_local(true);	/* before this thread makes a raw */
	w->err = work(w, &crcs);
	if (!w->err) {
		w->err = bl_list_get_ptr(&crcs, 0, &first);
		if (!w->err) {
			if (!bl_raw_is_thread_local(first.raw))
				w->err = -1;	/* the setting did not take */
			bl_ptr_release(&first);
		}
	}
	/*
	 * The report leaves this thread, so it may not hold a thread-local
	 * raw: its bytes go into a new raw that is not.
	 */
	if (!w->err)
		w->err = bl_list_copy_shared(&w->report, &crcs);
	bl_list_clear(&crcs);
	return NULL;
}

/* The main thread's own check of worker @w's report. */
static int check(struct worker *w)
{
	struct bl_iter it;
	struct bl_ptr p;
	char buf[256];

	if (w->err || bl_list_length(&w->report) != FRAMES * 4u)
		return -1;
	/* what crossed threads is a shared raw */
	if (bl_list_get_ptr(&w->report, 0, &p))
		return -1;
	if (bl_raw_is_thread_local(p.raw)) {
		bl_ptr_release(&p);
		return -1;
	}
	bl_ptr_release(&p);
	if (bl_iter_init(&it, &w->report, 0))
		return -1;
	for (unsigned i = 0; i < FRAMES; i++) {
		size_t len = frame_len(w->id, i);
		uint32_t got;

		frame_bytes(buf, len, w->id, i);
		if (bl_decode_u32(&it, &got) || got != bl_crc32c(0, buf, len))
			return -1;
	}
	return 0;
}

int main(void)
{
	struct worker w[WORKERS];
	int failed = 0;

	for (unsigned k = 0; k < WORKERS; k++) {
		memset(&w[k], 0, sizeof(w[k]));
		w[k].id = k;
		bl_list_init(&w[k].report);
	}
	for (unsigned k = 0; k < WORKERS; k++) {
		if (pthread_create(&w[k].thread, NULL, worker_main, &w[k])) {
			fprintf(stderr, "shared_nothing: pthread_create failed\n");
			while (k--)	/* the ones already started */
				pthread_join(w[k].thread, NULL);
			for (k = 0; k < WORKERS; k++)
				bl_list_clear(&w[k].report);
			return 1;
		}
	}
	for (unsigned k = 0; k < WORKERS; k++) {
		pthread_join(w[k].thread, NULL);
		if (check(&w[k])) {
			fprintf(stderr, "shared_nothing: worker %u: bad report "
				"(%d)\n", k, w[k].err);
			failed = 1;
		} else {
			printf("worker %u: %u frames parsed with thread-local "
			       "raws, report handed over as a copy\n", k, FRAMES);
		}
		bl_list_clear(&w[k].report);	/* a shared raw: fine here */
	}
	return failed;
}
