/* SPDX-License-Identifier: MIT */
/*
 * monmap.c - reads the monitor map file Ceph's `monmaptool --create`
 * writes (a MonMap in Ceph's encoding: nested versioned structures,
 * strings, maps, a UUID, utime_t, address vectors whose sockaddrs are in
 * network byte order), prints it as `monmaptool --print` does, and with
 * --reencode writes it back byte for byte.
 *
 *   monmap FILE [--reencode OUT]   print FILE (and re-encode it to OUT)
 *   monmap                         check mode (make check): makes maps with
 *                                  monmaptool, compares both ways; exits
 *                                  77 (skipped) without monmaptool
 *
 * Build: cc monmap.c $(pkg-config --cflags --libs bufferlist)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist.h>

#define MAX_MONS 32
#define MAX_ADDRS 4
#define MAX_SET 32
#define NAME_MAX_LEN 128

/* entity_addr_t: the new form (marker 1) or the legacy one (marker 0) */
struct addr {
	bool legacy;
	uint32_t type;			/* 1 v1 (legacy), 2 v2 */
	uint32_t nonce;
	uint32_t elen;			/* new form: sockaddr bytes */
	unsigned char sa[128];		/* the sockaddr as on the wire */
};

/* entity_addrvec_t: marker 2 and a vector, or one address as above */
struct addrvec {
	uint8_t marker;
	uint32_t n;
	struct addr a[MAX_ADDRS];
};

struct kv {
	char k[NAME_MAX_LEN], v[NAME_MAX_LEN];
};

struct mon {
	char name[NAME_MAX_LEN];
	struct addrvec addrs;
	uint16_t priority, weight;
	uint32_t ncrush;
	struct kv crush[4];
};

struct strset {
	uint32_t n;
	char s[MAX_SET][NAME_MAX_LEN];
};

struct monmap {
	uint8_t v;
	uint8_t fsid[16];
	uint32_t epoch;
	uint32_t changed_sec, changed_nsec, created_sec, created_nsec;
	uint64_t persistent, optional;	/* mon_feature_t */
	uint32_t nmon;
	struct mon mon[MAX_MONS];	/* mon_info, a map by name */
	struct strset ranks;
	uint8_t min_mon_release;
	uint32_t nremoved;
	int32_t removed[MAX_SET];
	uint8_t strategy;
	struct strset disallowed;
	bool stretch;
	char tiebreaker[NAME_MAX_LEN];
	struct strset marked_down;
};

/* ---- decoding ----------------------------------------------------------- */

#define TRY(x) do { int r_ = (x); if (r_) return r_; } while (0)

static int get_name(struct bl_iter *it, char *buf)
{
	return bl_decode_string(it, buf, NAME_MAX_LEN, NULL);
}

static int addr_fields(struct bl_iter *it, uint8_t v, void *arg)
{
	struct addr *a = arg;
	uint16_t fam;

	(void)v;
	TRY(bl_decode_u32(it, &a->type));
	TRY(bl_decode_u32(it, &a->nonce));
	TRY(bl_decode_u32(it, &a->elen));
	if (!a->elen)
		return 0;
	if (a->elen < 2 || a->elen > sizeof(a->sa))
		return -EBADMSG;
	/* the family little-endian, the rest (port, address) as in memory:
	 * network byte order */
	TRY(bl_decode_u16(it, &fam));
	memcpy(a->sa, &fam, 2);
	return bl_iter_copy(it, a->elen - 2, a->sa + 2);
}

static int decode_addr(struct bl_iter *it, struct addr *a)
{
	uint8_t marker;

	TRY(bl_decode_u8(it, &marker));
	if (marker == 1) {
		a->legacy = false;
		return bl_decode_struct(it, 1, addr_fields, a, NULL);
	}
	if (marker != 0)
		return -EBADMSG;
	/* legacy: a u32 0 (its first byte the marker), the nonce, and a
	 * 128-byte sockaddr_storage whose family is big-endian */
	a->legacy = true;
	a->type = 1;
	a->elen = 128;
	TRY(bl_iter_advance(it, 3));
	TRY(bl_decode_u32(it, &a->nonce));
	return bl_iter_copy(it, 128, a->sa);
}

static int addrvec_item(struct bl_iter *it, uint32_t i, uint32_t n, void *arg)
{
	struct addrvec *av = arg;

	if (n > MAX_ADDRS)
		return -E2BIG;
	av->n = n;
	return decode_addr(it, &av->a[i]);
}

static int decode_addrvec(struct bl_iter *it, struct addrvec *av)
{
	struct bl_iter t = *it;

	TRY(bl_decode_u8(&t, &av->marker));
	av->n = 0;
	if (av->marker == 2) {
		TRY(bl_decode_seq(&t, addrvec_item, av, &av->n));
	} else {
		/* one address, its marker the vector's */
		t = *it;
		av->n = 1;
		TRY(decode_addr(&t, &av->a[0]));
	}
	*it = t;
	return 0;
}

static int crush_item(struct bl_iter *it, uint32_t i, uint32_t n, void *arg)
{
	struct mon *m = arg;

	if (n > 4)
		return -E2BIG;
	m->ncrush = n;
	TRY(get_name(it, m->crush[i].k));
	return get_name(it, m->crush[i].v);
}

static int mon_fields(struct bl_iter *it, uint8_t v, void *arg)
{
	struct mon *m = arg;

	TRY(get_name(it, m->name));
	TRY(decode_addrvec(it, &m->addrs));
	if (v >= 2)
		TRY(bl_decode_u16(it, &m->priority));
	if (v >= 4)
		TRY(bl_decode_u16(it, &m->weight));
	if (v >= 5)
		TRY(bl_decode_seq(it, crush_item, m, NULL));
	return 0;
}

static int mon_item(struct bl_iter *it, uint32_t i, uint32_t n, void *arg)
{
	struct monmap *mm = arg;
	char key[NAME_MAX_LEN];

	if (n > MAX_MONS)
		return -E2BIG;
	mm->nmon = n;
	TRY(get_name(it, key));	/* the map's key: the name again */
	return bl_decode_struct(it, 5, mon_fields, &mm->mon[i], NULL);
}

static int str_item(struct bl_iter *it, uint32_t i, uint32_t n, void *arg)
{
	struct strset *s = arg;

	if (n > MAX_SET)
		return -E2BIG;
	s->n = n;
	return get_name(it, s->s[i]);
}

static int removed_item(struct bl_iter *it, uint32_t i, uint32_t n, void *arg)
{
	struct monmap *mm = arg;

	if (n > MAX_SET)
		return -E2BIG;
	mm->nremoved = n;
	return bl_decode_s32(it, &mm->removed[i]);
}

static int features_fields(struct bl_iter *it, uint8_t v, void *arg)
{
	(void)v;
	return bl_decode_u64(it, arg);
}

static int monmap_fields(struct bl_iter *it, uint8_t v, void *arg)
{
	struct monmap *mm = arg;

	if (v < 7)
		return -EPROTONOSUPPORT;	/* older than Nautilus */
	mm->v = v;
	TRY(bl_decode_uuid(it, mm->fsid));
	TRY(bl_decode_u32(it, &mm->epoch));
	TRY(bl_decode_utime(it, &mm->changed_sec, &mm->changed_nsec));
	TRY(bl_decode_utime(it, &mm->created_sec, &mm->created_nsec));
	TRY(bl_decode_struct(it, 1, features_fields, &mm->persistent, NULL));
	TRY(bl_decode_struct(it, 1, features_fields, &mm->optional, NULL));
	TRY(bl_decode_seq(it, mon_item, mm, &mm->nmon));
	TRY(bl_decode_seq(it, str_item, &mm->ranks, &mm->ranks.n));
	TRY(bl_decode_u8(it, &mm->min_mon_release));
	if (v >= 8) {
		TRY(bl_decode_seq(it, removed_item, mm, &mm->nremoved));
		TRY(bl_decode_u8(it, &mm->strategy));
		TRY(bl_decode_seq(it, str_item, &mm->disallowed,
				  &mm->disallowed.n));
	}
	if (v >= 9) {
		TRY(bl_decode_bool(it, &mm->stretch));
		TRY(get_name(it, mm->tiebreaker));
		TRY(bl_decode_seq(it, str_item, &mm->marked_down,
				  &mm->marked_down.n));
	}
	return 0;
}

static int monmap_decode(const struct bl_list *l, struct monmap *mm)
{
	struct bl_struct_dec s;
	struct bl_iter it;
	int ret;

	memset(mm, 0, sizeof(*mm));
	TRY(bl_iter_init(&it, l, 0));
	ret = bl_decode_struct(&it, 9, monmap_fields, mm, &s);
	if (ret == -EPROTONOSUPPORT && s.struct_compat > 9) {
		char msg[100];

		bl_decode_struct_msg(&s, msg, sizeof(msg));
		fprintf(stderr, "monmap: %s\n", msg);
	}
	return ret;
}

/* ---- encoding: the same fields back, in the versions read ---------------- */

static int enc_addr_fields(struct bl_list *l, void *arg)
{
	const struct addr *a = arg;
	uint16_t fam;

	TRY(bl_encode_u32(l, a->type));
	TRY(bl_encode_u32(l, a->nonce));
	TRY(bl_encode_u32(l, a->elen));
	if (!a->elen)
		return 0;
	memcpy(&fam, a->sa, 2);
	TRY(bl_encode_u16(l, fam));
	return bl_list_append(l, a->sa + 2, a->elen - 2);
}

static int encode_addr(struct bl_list *l, const struct addr *a)
{
	if (a->legacy) {
		TRY(bl_encode_u32(l, 0));
		TRY(bl_encode_u32(l, a->nonce));
		return bl_list_append(l, a->sa, 128);
	}
	TRY(bl_encode_u8(l, 1));
	return bl_encode_struct(l, 1, 1, enc_addr_fields, (void *)a);
}

static int enc_addrvec_item(struct bl_list *l, size_t i, void *arg)
{
	const struct addrvec *av = arg;

	return encode_addr(l, &av->a[i]);
}

static int encode_addrvec(struct bl_list *l, const struct addrvec *av)
{
	if (av->marker != 2)
		return encode_addr(l, &av->a[0]);
	TRY(bl_encode_u8(l, 2));
	return bl_encode_seq(l, av->n, enc_addrvec_item, (void *)av);
}

static int enc_crush_item(struct bl_list *l, size_t i, void *arg)
{
	const struct mon *m = arg;

	TRY(bl_encode_string(l, m->crush[i].k));
	return bl_encode_string(l, m->crush[i].v);
}

static int enc_mon_fields(struct bl_list *l, void *arg)
{
	const struct mon *m = arg;

	TRY(bl_encode_string(l, m->name));
	TRY(encode_addrvec(l, &m->addrs));
	TRY(bl_encode_u16(l, m->priority));
	TRY(bl_encode_u16(l, m->weight));
	return bl_encode_seq(l, m->ncrush, enc_crush_item, (void *)m);
}

static int enc_mon_item(struct bl_list *l, size_t i, void *arg)
{
	const struct monmap *mm = arg;

	TRY(bl_encode_string(l, mm->mon[i].name));
	return bl_encode_struct(l, 5, 1, enc_mon_fields, (void *)&mm->mon[i]);
}

static int enc_str_item(struct bl_list *l, size_t i, void *arg)
{
	const struct strset *s = arg;

	return bl_encode_string(l, s->s[i]);
}

static int enc_removed_item(struct bl_list *l, size_t i, void *arg)
{
	const struct monmap *mm = arg;

	return bl_encode_s32(l, mm->removed[i]);
}

static int enc_features(struct bl_list *l, void *arg)
{
	return bl_encode_u64(l, *(const uint64_t *)arg);
}

static int enc_monmap_fields(struct bl_list *l, void *arg)
{
	struct monmap *mm = arg;

	TRY(bl_encode_uuid(l, mm->fsid));
	TRY(bl_encode_u32(l, mm->epoch));
	TRY(bl_encode_utime(l, mm->changed_sec, mm->changed_nsec));
	TRY(bl_encode_utime(l, mm->created_sec, mm->created_nsec));
	TRY(bl_encode_struct(l, 1, 1, enc_features, &mm->persistent));
	TRY(bl_encode_struct(l, 1, 1, enc_features, &mm->optional));
	TRY(bl_encode_seq(l, mm->nmon, enc_mon_item, mm));
	TRY(bl_encode_seq(l, mm->ranks.n, enc_str_item, &mm->ranks));
	TRY(bl_encode_u8(l, mm->min_mon_release));
	if (mm->v >= 8) {
		TRY(bl_encode_seq(l, mm->nremoved, enc_removed_item, mm));
		TRY(bl_encode_u8(l, mm->strategy));
		TRY(bl_encode_seq(l, mm->disallowed.n, enc_str_item,
				  &mm->disallowed));
	}
	if (mm->v >= 9) {
		TRY(bl_encode_bool(l, mm->stretch));
		TRY(bl_encode_string(l, mm->tiebreaker));
		TRY(bl_encode_seq(l, mm->marked_down.n, enc_str_item,
				  &mm->marked_down));
	}
	return 0;
}

static int monmap_encode(struct bl_list *l, struct monmap *mm)
{
	return bl_encode_struct(l, mm->v, 6, enc_monmap_fields, mm);
}

/* ---- printing, as monmaptool --print ------------------------------------- */

static void print_time(FILE *f, uint32_t sec, uint32_t nsec)
{
	time_t t = (time_t)sec;
	struct tm tm;
	char b[64], z[16];

	/* as Ceph's utime_t: under ten years it is a duration */
	if (sec < 60u * 60 * 24 * 365 * 10) {
		fprintf(f, "%u.%06u", sec, nsec / 1000);
		return;
	}
	localtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(z, sizeof(z), "%z", &tm);
	fprintf(f, "%s.%06u%s", b, nsec / 1000, z);
}

static void print_addr(FILE *f, const struct addr *a)
{
	static const char *const types[] = { "none", "v1", "v2", "any" };
	char ip[INET6_ADDRSTRLEN] = "";
	uint16_t fam, port;

	fprintf(f, "%s:", a->type < 4 ? types[a->type] : "?");
	if (a->legacy) {
		fam = (uint16_t)(a->sa[0] << 8 | a->sa[1]);
	} else {
		memcpy(&fam, a->sa, 2);
		if (!a->elen)
			fam = 0;
	}
	memcpy(&port, a->sa + 2, 2);
	port = ntohs(port);
	if (fam == AF_INET) {
		inet_ntop(AF_INET, a->sa + 4, ip, sizeof(ip));
		fprintf(f, "%s:%u", ip, port);
	} else if (fam == AF_INET6) {
		inet_ntop(AF_INET6, a->sa + 8, ip, sizeof(ip));
		fprintf(f, "[%s]:%u", ip, port);
	} else {
		fputs("-", f);
	}
	fprintf(f, "/%u", a->nonce);
}

static const char *release_name(unsigned r)
{
	static const char *const names[] = {
		"unknown", "argonaut", "bobtail", "cuttlefish", "dumpling",
		"emperor", "firefly", "giant", "hammer", "infernalis",
		"jewel", "kraken", "luminous", "mimic", "nautilus", "octopus",
		"pacific", "quincy", "reef", "squid",
	};

	return r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

static void print_set(FILE *f, const struct strset *s)
{
	fputc('{', f);
	for (uint32_t i = 0; i < s->n; i++)
		fprintf(f, "%s%s", i ? "," : "", s->s[i]);
	fputc('}', f);
}

static void monmap_print(FILE *f, const struct monmap *mm)
{
	const uint8_t *u = mm->fsid;

	fprintf(f, "epoch %u\n", mm->epoch);
	fprintf(f, "fsid %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		"%02x%02x%02x%02x%02x%02x\n", u[0], u[1], u[2], u[3], u[4],
		u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		u[14], u[15]);
	fputs("last_changed ", f);
	print_time(f, mm->changed_sec, mm->changed_nsec);
	fputs("\ncreated ", f);
	print_time(f, mm->created_sec, mm->created_nsec);
	fprintf(f, "\nmin_mon_release %u (%s)\n", mm->min_mon_release,
		release_name(mm->min_mon_release));
	fprintf(f, "election_strategy: %u\n", mm->strategy);
	if (mm->stretch)
		fprintf(f, "stretch_mode_enabled 1\ntiebreaker_mon %s\n",
			mm->tiebreaker);
	if (mm->stretch || mm->disallowed.n) {
		fputs("disallowed_leaders ", f);
		print_set(f, &mm->disallowed);
		fputc('\n', f);
	}
	for (uint32_t r = 0; r < mm->ranks.n; r++) {
		const struct mon *m = NULL;

		for (uint32_t i = 0; i < mm->nmon; i++)
			if (!strcmp(mm->mon[i].name, mm->ranks.s[r]))
				m = &mm->mon[i];
		if (!m)
			continue;
		fprintf(f, "%u: ", r);
		if (m->addrs.n != 1)
			fputc('[', f);
		for (uint32_t i = 0; i < m->addrs.n; i++) {
			if (i)
				fputc(',', f);
			print_addr(f, &m->addrs.a[i]);
		}
		if (m->addrs.n != 1)
			fputc(']', f);
		fprintf(f, " mon.%s", m->name);
		if (m->ncrush) {
			fputs("; crush_location {", f);
			for (uint32_t i = 0; i < m->ncrush; i++)
				fprintf(f, "%s%s=%s", i ? "," : "",
					m->crush[i].k, m->crush[i].v);
			fputc('}', f);
		}
		fputc('\n', f);
	}
}

/* ---- the two modes -------------------------------------------------------- */

static int run(const char *in, const char *out, FILE *pf)
{
	static struct monmap mm;
	struct bl_list l, re;
	ssize_t n;
	int ret;

	bl_list_init(&l);
	bl_list_init(&re);
	n = bl_list_read_file(&l, in);
	if (n < 0) {
		fprintf(stderr, "monmap: %s: %s\n", in, strerror((int)-n));
		return 1;
	}
	ret = monmap_decode(&l, &mm);
	if (ret) {
		fprintf(stderr, "monmap: %s: cannot decode: %s\n", in,
			strerror(-ret));
		bl_list_clear(&l);
		return 1;
	}
	monmap_print(pf, &mm);
	if (out) {
		ret = monmap_encode(&re, &mm);
		if (!ret)
			ret = bl_list_write_file(&re, out, 0644);
		if (ret) {
			fprintf(stderr, "monmap: %s: %s\n", out,
				strerror(-ret));
			bl_list_clear(&l);
			bl_list_clear(&re);
			return 1;
		}
	}
	bl_list_clear(&l);
	bl_list_clear(&re);
	return 0;
}

/* Runs a shell command line; 0 when it exited 0. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == 0 ? 0 : 1;
}

static int check(void)
{
	static const char *const maps[] = {
		/* v2+v1 monitors, a v1-only one, IPv6 */
		"--addv a [v2:10.0.0.1:3300,v1:10.0.0.1:6789] "
		"--add b 10.0.0.2:6789 "
		"--addv c [v2:[::1]:3300,v1:[::1]:6789]",
		/* one v1 monitor */
		"--add solo 192.168.1.10:6789",
		/* five, with names of several lengths, IPv6 v1 only */
		"--addv mon-alpha [v2:10.1.0.1:3300,v1:10.1.0.1:6789] "
		"--addv b [v2:10.1.0.2:3300,v1:10.1.0.2:6789] "
		"--add gamma-long-name [fe80::1:2]:6789 "
		"--addv d [v2:[2001:db8::7]:3301,v1:[2001:db8::7]:6790] "
		"--add e 10.1.0.5:6789",
		/* features and a minimum release set */
		"--enable-all-features --set-min-mon-release 16 "
		"--addv x [v2:127.0.0.1:3300,v1:127.0.0.1:6789]",
	};
	const char *tmpdir = getenv("TMPDIR");
	char dir[512], path[600], out[600], pr[600], want[600];
	int fails = 0, bad_maps = 0;

	if (sh("command -v monmaptool >/dev/null 2>&1")) {
		fprintf(stderr, "monmap: monmaptool not found (ceph-common): "
			"skipped\n");
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/monmap.XXXXXX",
		 tmpdir ? tmpdir : "/tmp");
	if (!mkdtemp(dir)) {
		perror("monmap: mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		int before = fails;
		FILE *pf;

		snprintf(path, sizeof(path), "%s/map%zu", dir, i);
		snprintf(out, sizeof(out), "%s/map%zu.re", dir, i);
		snprintf(pr, sizeof(pr), "%s/map%zu.ours", dir, i);
		snprintf(want, sizeof(want), "%s/map%zu.theirs", dir, i);
		if (sh("monmaptool --create --clobber "
		       "--fsid 8d4c1f0e-3b2a-4c5d-9e6f-1122334455%02zx %s "
		       "'%s' >/dev/null 2>&1", i, maps[i], path) ||
		    sh("monmaptool --print '%s' 2>/dev/null | "
		       "grep -v '^monmaptool:' >'%s'", path, want)) {
			fprintf(stderr, "monmap: monmaptool failed on %s\n",
				maps[i]);
			fails++;
			continue;
		}
		pf = fopen(pr, "w");
		if (!pf || run(path, out, pf)) {
			if (pf)
				fclose(pf);
			fails++;
			continue;
		}
		fclose(pf);
		if (sh("cmp '%s' '%s'", path, out)) {
			fprintf(stderr, "monmap: map %zu re-encoded differs\n",
				i);
			fails++;
		}
		if (sh("diff -u '%s' '%s' >&2", want, pr)) {
			fprintf(stderr, "monmap: map %zu printed differs\n",
				i);
			fails++;
		}
		bad_maps += fails > before;
		fprintf(stderr, "monmap: map %zu (%s): %s\n", i, maps[i],
			fails > before ? "FAILED" : "decoded, printed and re-encoded "
			"as monmaptool");
	}
	sh("rm -rf '%s'", dir);
	printf("monmap: %zu passed, %d failed\n",
	       sizeof(maps) / sizeof(maps[0]) - (size_t)bad_maps, bad_maps);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return check();
	if (argc == 2)
		return run(argv[1], NULL, stdout);
	if (argc == 4 && !strcmp(argv[2], "--reencode"))
		return run(argv[1], argv[3], stdout);
	fprintf(stderr, "usage: monmap [FILE [--reencode OUT]]\n");
	return 2;
}
