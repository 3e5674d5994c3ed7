/* SPDX-License-Identifier: MIT */
/*
 * test_fuzz_replay.c - every input of every fuzzing corpus
 * (test/fuzz/corpus/<harness>/) and every input that once crashed a harness
 * (test/fuzz/regress/<harness>/) run through the harnesses, built by the
 * normal compiler, so that a build without libFuzzer (CI) still checks
 * what fuzzing found.  Each harness traps on any mismatch with its model;
 * the test names the input that did it.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#ifndef FUZZ_DIR
#error "FUZZ_DIR (the source tree's test/fuzz) must be defined"
#endif

/* The harnesses, renamed at compile time (Makefile.am). */
int fuzz_list_one(const uint8_t *data, size_t size);
int fuzz_codec_one(const uint8_t *data, size_t size);
int fuzz_lz4_one(const uint8_t *data, size_t size);
int fuzz_msgr_one(const uint8_t *data, size_t size);
int fuzz_msgr_conn_one(const uint8_t *data, size_t size);

typedef int (*one_fn)(const uint8_t *data, size_t size);

/* The input being run, for the signal handler. */
static char current[4096];

static void on_fatal(int sig)
{
	static const char msg[] = "test_fuzz_replay: harness failed on ";
	ssize_t r;

	r = write(2, msg, sizeof(msg) - 1);
	r = write(2, current, strlen(current));
	r = write(2, "\n", 1);
	(void)r;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_fatal(void)
{
	static const int sigs[] = { SIGILL, SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
				    SIGTRAP };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_fatal);
}

static void *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len ? *len : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

/* Runs every regular file of @dir through @fn; returns how many. */
static unsigned replay_dir(const char *dir, one_fn fn, bool must_exist)
{
	struct dirent **names;
	unsigned ran = 0;
	int n;

	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		ck_assert_msg(!must_exist, "%s: %s", dir, strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;
		size_t len;
		void *data;

		snprintf(current, sizeof(current), "%s/%s", dir,
			 names[i]->d_name);
		free(names[i]);
		if (stat(current, &st) || !S_ISREG(st.st_mode) ||
		    strcmp(current + strlen(dir) + 1, "README") == 0)
			continue;
		data = read_all(current, &len);
		ck_assert_int_eq(fn(data, len), 0);
		free(data);
		ran++;
	}
	free(names);
	return ran;
}

static void replay(const char *name, one_fn fn)
{
	char dir[1024];
	unsigned corpus, regress;

	catch_fatal();
	snprintf(dir, sizeof(dir), "%s/corpus/%s", FUZZ_DIR, name);
	corpus = replay_dir(dir, fn, true);
	snprintf(dir, sizeof(dir), "%s/regress/%s", FUZZ_DIR, name);
	regress = replay_dir(dir, fn, false);
	fprintf(stderr, "fuzz_%s: %u corpus inputs, %u regression inputs\n",
		name, corpus, regress);
	/* an empty or missing corpus would make this test prove nothing */
	ck_assert_uint_gt(corpus, 0);
}

START_TEST(test_list_corpus_replays_clean)
{
	replay("list", fuzz_list_one);
}
END_TEST

START_TEST(test_codec_corpus_replays_clean)
{
	replay("codec", fuzz_codec_one);
}
END_TEST

START_TEST(test_lz4_corpus_replays_clean)
{
	replay("lz4", fuzz_lz4_one);
}
END_TEST

START_TEST(test_msgr_corpus_replays_clean)
{
	replay("msgr", fuzz_msgr_one);
}
END_TEST

START_TEST(test_msgr_conn_corpus_replays_clean)
{
	replay("msgr_conn", fuzz_msgr_conn_one);
}
END_TEST

int main(void)
{
	const TTest *corpora_tests[] = {
		/* thousands of inputs under ASan or valgrind take a while */
		test_list_corpus_replays_clean,
		test_codec_corpus_replays_clean,
		test_lz4_corpus_replays_clean,
		test_msgr_corpus_replays_clean,
		test_msgr_conn_corpus_replays_clean,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("corpora", corpora_tests, .timeout = 600),
		TU_GROUP_END
	};

	return tu_run(tu_suite("fuzz_replay", groups));
}
