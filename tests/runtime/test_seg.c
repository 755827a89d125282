/* test_seg.c - tests of the p2gen runtime (runtime/p2_runtime.c).
 *
 * Usage:
 *   test_seg DIR                        run every test, files go in DIR
 *   test_seg open PATH FP [VARIANT]     open (or create) PATH with fingerprint FP
 *                                       (hex) and the standard roots, print
 *                                       "<CODE_NAME> <message>", close; exit
 *                                       status = return code.  VARIANT picks
 *                                       other roots: "renamed", "resized",
 *                                       "fewer", "more".
 *   test_seg fill PATH FP               create PATH and fill it with data
 *   test_seg check PATH FP              open PATH, verify the data of fill
 *   test_seg crash PATH FP              open PATH, write, _exit() without close
 *   test_seg hold PATH FP               open PATH, print "ready", wait for EOF
 *                                       on stdin, close
 */
#define _GNU_SOURCE
#define _DEFAULT_SOURCE

#include "p2_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(expr)                                                              \
    do {                                                                         \
        if (!(expr)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

/* CHECK that must hold for the rest of a test to make sense. */
#define REQUIRE(expr)                                                            \
    do {                                                                         \
        if (!(expr)) {                                                           \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #expr); \
            fprintf(stderr, "  last error: %d %s\n", err.code, err.msg);         \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static const char *code_name(int code)
{
    switch (code) {
#define CODE_NAME_(name, value, message) case name: return #name;
    P2_ERROR_LIST(CODE_NAME_)
#undef CODE_NAME_
    default: return "P2_UNKNOWN";
    }
}

/* ---- fixtures ----------------------------------------------------------- */

#define FP      UINT64_C(0x0123456789abcdef)
#define NROOTS  3
static const char *const root_names[NROOTS] = { "alpha", "beta", "gamma" };
static const uint64_t root_sizes[NROOTS] = { 100, 10000, 16 };

static char dir[1024];

static const char *file_in_dir(const char *name)
{
    static char buf[2048];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    unlink(buf);
    return buf;
}

/* Deterministic byte pattern for block number `id`. */
static unsigned char pat(uint64_t id, uint64_t i)
{
    uint64_t x = (id + 1) * UINT64_C(0x9E3779B97F4A7C15) + i * UINT64_C(0xBF58476D1CE4E5B9);
    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 17));
}

static void fill(p2_seg *s, p2_off off, uint64_t size, uint64_t id)
{
    unsigned char *p = p2_seg_ptr(s, off);
    for (uint64_t i = 0; i < size; i++)
        p[i] = pat(id, i);
}

static int holds(const p2_seg *s, p2_off off, uint64_t size, uint64_t id)
{
    const unsigned char *p = p2_seg_ptr(s, off);
    for (uint64_t i = 0; i < size; i++)
        if (p[i] != pat(id, i))
            return 0;
    return 1;
}

static int is_zero(const p2_seg *s, p2_off off, uint64_t size)
{
    const unsigned char *p = p2_seg_ptr(s, off);
    for (uint64_t i = 0; i < size; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}

static uint64_t rng_state = 88172645463325252u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int open_std(p2_seg *s, const char *path, uint64_t fp, int *created, p2_err *err)
{
    return p2_seg_open(s, path, fp, NROOTS, root_names, root_sizes, 0, created, err);
}

/* CRC-32 of a whole file, to check that refused opens leave it unchanged. */
static uint32_t file_crc(const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    uint32_t crc = 0;
    *size = 0;
    if (f == NULL)
        return 0;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        crc = p2_crc32(crc, buf, n);
        *size += n;
    }
    fclose(f);
    return crc;
}

/* ---- tests -------------------------------------------------------------- */

static void test_errors_and_crc(void)
{
    CHECK(p2_crc32(0, "123456789", 9) == 0xCBF43926u);
    CHECK(p2_crc32(0, NULL, 0) == 0);
    CHECK(p2_crc32(p2_crc32(0, "1234", 4), "56789", 5) == 0xCBF43926u);
    CHECK(p2_crc32(0, "a", 1) == 0xE8B7BE43u);

    for (int c = P2_OK; c <= P2_EBUSY; c++) {
        CHECK(p2_strerror(c) != NULL);
        CHECK(strstr(p2_strerror(c), code_name(c)) != NULL);
    }
    CHECK(strcmp(p2_strerror(-1), "unknown error") == 0);
    CHECK(strcmp(p2_strerror(12345), "unknown error") == 0);

    p2_err e;
    CHECK(p2_err_set(&e, P2_EDUP, "key %d of %s", 42, "t") == P2_EDUP);
    CHECK(e.code == P2_EDUP && strcmp(e.msg, "key 42 of t") == 0);
    CHECK(p2_err_set(NULL, P2_EIO, "ignored %s", "x") == P2_EIO);
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(p2_err_set(&e, P2_EINVAL, "%s", big) == P2_EINVAL);
    CHECK(strlen(e.msg) == sizeof e.msg - 1);
    p2_err_clear(&e);
    CHECK(e.code == P2_OK && e.msg[0] == '\0');
    p2_err_clear(NULL);
}

static void test_bad_arguments(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("args.p2");
    const char *dup[2] = { "a", "a" };
    const uint64_t sz[2] = { 8, 8 };
    char longname[P2_ROOT_NAME_SIZE + 1];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    const char *lng[1] = { longname };

    CHECK(p2_seg_open(&s, path, FP, 2, dup, sz, 0, NULL, &err) == P2_EINVAL);
    CHECK(strstr(err.msg, "given twice") != NULL);
    CHECK(p2_seg_open(&s, path, FP, 1, lng, sz, 0, NULL, &err) == P2_EINVAL);
    CHECK(p2_seg_open(&s, path, FP, P2_MAX_ROOTS + 1, dup, sz, 0, NULL, &err) == P2_EINVAL);
    CHECK(p2_seg_open(&s, "", FP, 0, NULL, NULL, 0, NULL, &err) == P2_EINVAL);
    CHECK(access(path, F_OK) != 0);   /* nothing was created */

    /* Operations on segments that are not open. */
    p2_seg zero;
    memset(&zero, 0, sizeof zero);
    CHECK(p2_seg_close(&zero, &err) == P2_OK);
    CHECK(p2_seg_close(NULL, &err) == P2_OK);
    CHECK(p2_seg_close(&s, &err) == P2_OK);  /* failed open */
    CHECK(p2_seg_alloc(&zero, 10, &err) == 0 && err.code == P2_ECLOSED);
    CHECK(p2_seg_realloc(&zero, 0, 0, 10, &err) == 0 && err.code == P2_ECLOSED);
    CHECK(p2_seg_sync(&zero, &err) == P2_ECLOSED);
    CHECK(p2_seg_root(&zero, 0) == 0);
    CHECK(p2_seg_used(&zero) == 0);
    p2_seg_free(&zero, 4096, 16);

    /* Open with many roots, long-ish names: the table fits in the header. */
    char names[P2_MAX_ROOTS][P2_ROOT_NAME_SIZE];
    const char *np[P2_MAX_ROOTS];
    uint64_t sizes[P2_MAX_ROOTS];
    for (int i = 0; i < P2_MAX_ROOTS; i++) {
        snprintf(names[i], sizeof names[i], "root_%02d_%.*s", i, 30, "abcdefghijklmnopqrstuvwxyzabcdefghijkl");
        np[i] = names[i];
        sizes[i] = (uint64_t)(i * 100);
    }
    int created = -1;
    REQUIRE(p2_seg_open(&s, path, FP, P2_MAX_ROOTS, np, sizes, 0, &created, &err) == P2_OK);
    CHECK(created == 1);
    CHECK(p2_seg_root(&s, P2_MAX_ROOTS) == 0);
    for (int i = 0; i < P2_MAX_ROOTS; i++) {
        CHECK(p2_seg_root(&s, (uint32_t)i) != 0);
        CHECK(is_zero(&s, p2_seg_root(&s, (uint32_t)i), sizes[i]));
    }
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    CHECK(p2_seg_close(&s, &err) == P2_OK);  /* second close is a no-op */
    REQUIRE(p2_seg_open(&s, path, FP, P2_MAX_ROOTS, np, sizes, 0, &created, &err) == P2_OK);
    CHECK(created == 0);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

static void test_create_alloc_reopen(void)
{
    p2_err err = {0};
    p2_seg s;
    int created = -1;
    const char *path = file_in_dir("main.p2");

    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    CHECK(created == 1);
    CHECK(s.fd >= 0 && s.base != NULL && (void *)s.hdr == (void *)s.base);
    CHECK(s.mapped >= 65536 && s.mapped % 4096 == 0);
    CHECK(s.reserved == P2_SEG_DEFAULT_RESERVE);
    CHECK(strcmp(s.path, path) == 0);
    CHECK(p2_seg_used(&s) >= P2_SEG_HEADER_SIZE);

    p2_off roots[NROOTS];
    for (uint32_t i = 0; i < NROOTS; i++) {
        roots[i] = p2_seg_root(&s, i);
        CHECK(roots[i] >= P2_SEG_HEADER_SIZE && roots[i] % 16 == 0);
        CHECK(is_zero(&s, roots[i], root_sizes[i]));
        fill(&s, roots[i], root_sizes[i], 1000 + i);
    }
    CHECK(p2_seg_root(&s, NROOTS) == 0);
    CHECK(roots[0] != roots[1] && roots[1] != roots[2] && roots[0] != roots[2]);

    /* Many sizes, small and large; all zero-filled, aligned, disjoint. */
    static const uint64_t sizes[] = { 0, 1, 8, 15, 16, 17, 31, 32, 33, 100, 500, 1000, 1024, 2047,
                                      2048, 2049, 3000, 4095, 4096, 4097, 8191, 10000, 65536,
                                      100000, 1u << 20, 3u << 20 };
    enum { NS = sizeof sizes / sizeof sizes[0], REP = 3 };
    p2_off offs[NS * REP];
    for (int r = 0; r < REP; r++)
        for (int i = 0; i < NS; i++) {
            p2_off o = p2_seg_alloc(&s, sizes[i], &err);
            REQUIRE(o != 0);
            CHECK(o % 16 == 0 && o >= P2_SEG_HEADER_SIZE);
            CHECK(o + sizes[i] <= p2_seg_used(&s));
            CHECK(is_zero(&s, o, sizes[i]));
            fill(&s, o, sizes[i], (uint64_t)(r * NS + i));
            offs[r * NS + i] = o;
        }
    for (int k = 0; k < NS * REP; k++)
        CHECK(holds(&s, offs[k], sizes[k % NS], (uint64_t)k));
    for (uint32_t i = 0; i < NROOTS; i++)
        CHECK(holds(&s, roots[i], root_sizes[i], 1000 + i));

    /* Keep the table of offsets in the "beta" root for the reopen. */
    REQUIRE(root_sizes[1] >= sizeof offs);
    memcpy(p2_seg_ptr(&s, roots[1]), offs, sizeof offs);
    uint64_t used = p2_seg_used(&s);
    uint64_t mapped = s.mapped;
    CHECK(p2_seg_sync(&s, &err) == P2_OK);

    /* Busy: a second open of the same file fails and changes nothing. */
    p2_seg s2;
    CHECK(open_std(&s2, path, FP, &created, &err) == P2_EBUSY);
    CHECK(strstr(err.msg, "in use by another process") != NULL);
    CHECK(strncmp(err.msg, path, strlen(path)) == 0);
    CHECK(s2.base == NULL && s2.fd == -1);
    CHECK(holds(&s, offs[5], sizes[5], 5));

    CHECK(p2_seg_close(&s, &err) == P2_OK);
    CHECK(s.base == NULL && s.fd == -1);

    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK((uint64_t)st.st_size == mapped);

    /* Reopen: same roots, same data, same high-water mark. */
    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    CHECK(created == 0);
    CHECK(s.mapped == mapped);
    CHECK(p2_seg_used(&s) == used);
    for (uint32_t i = 0; i < NROOTS; i++)
        CHECK(p2_seg_root(&s, i) == roots[i]);
    CHECK(holds(&s, roots[0], root_sizes[0], 1000));
    CHECK(holds(&s, roots[2], root_sizes[2], 1002));
    p2_off back[NS * REP];
    memcpy(back, p2_seg_ptr(&s, roots[1]), sizeof back);
    for (int k = 0; k < NS * REP; k++) {
        CHECK(back[k] == offs[k]);
        CHECK(holds(&s, back[k], sizes[k % NS], (uint64_t)k));
    }
    /* Free everything; allocating the same again must not raise brk. */
    for (int k = 0; k < NS * REP; k++)
        p2_seg_free(&s, back[k], sizes[k % NS]);
    for (int k = 0; k < NS * REP; k++) {
        back[k] = p2_seg_alloc(&s, sizes[k % NS], &err);
        CHECK(back[k] != 0 && is_zero(&s, back[k], sizes[k % NS]));
    }
    CHECK(p2_seg_used(&s) == used);
    CHECK(p2_seg_close(&s, &err) == P2_OK);

    /* Refusals: each is reported and leaves the file untouched. */
    uint64_t size_before, size_after;
    uint32_t crc_before = file_crc(path, &size_before);
    const char *renamed[NROOTS] = { "alpha", "BETA", "gamma" };
    const uint64_t resized[NROOTS] = { 100, 10001, 16 };

    CHECK(open_std(&s, path, FP ^ 1, &created, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "created by a different spec or equation") != NULL);
    CHECK(strstr(err.msg, "(the file was made by a program that did not record its spec; "
                          "fingerprint 0x0123456789abcdef, expected 0x0123456789abcdee)") != NULL);
    CHECK(p2_seg_open(&s, path, FP, NROOTS, renamed, root_sizes, 0, &created, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "\"beta\"") != NULL && strstr(err.msg, "\"BETA\"") != NULL);
    CHECK(p2_seg_open(&s, path, FP, NROOTS, root_names, resized, 0, &created, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "root \"beta\" is 10000 bytes in the file, the spec expects 10001") != NULL);
    CHECK(p2_seg_open(&s, path, FP, NROOTS - 1, root_names, root_sizes, 0, &created, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "\"gamma\" is not in the spec") != NULL);
    CHECK(p2_seg_open(&s, path, FP, NROOTS, root_names, root_sizes, 65536, &created, &err) == P2_ENOMEM);
    CHECK(strstr(err.msg, "reservation") != NULL);
    CHECK(s.base == NULL && s.fd == -1);
    CHECK(file_crc(path, &size_after) == crc_before && size_after == size_before);

    /* The lock was released by every refusal. */
    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    CHECK(created == 0);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* Growth across many remaps keeps the base and existing pointers. */
static void test_growth(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("grow.p2");
    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);
    char *base = s.base;
    p2_off first = p2_seg_alloc(&s, 64, &err);
    REQUIRE(first != 0);
    unsigned char *firstp = p2_seg_ptr(&s, first);
    fill(&s, first, 64, 7);

    enum { N = 300 };
    p2_off offs[N];
    uint64_t sizes[N];
    int remaps = 0;
    uint64_t mapped = s.mapped;
    for (int i = 0; i < N; i++) {
        sizes[i] = (rnd() % 2) ? 1 + rnd() % 2048 : 1 + rnd() % 400000;
        offs[i] = p2_seg_alloc(&s, sizes[i], &err);
        REQUIRE(offs[i] != 0);
        fill(&s, offs[i], sizes[i], (uint64_t)i);
        if (s.mapped != mapped) {
            remaps++;
            CHECK(s.mapped >= mapped + mapped / 32);   /* geometric growth */
            mapped = s.mapped;
        }
        CHECK(s.base == base);
        CHECK(firstp[0] == pat(7, 0) && firstp[63] == pat(7, 63));
    }
    CHECK(remaps >= 5);
    CHECK(remaps <= 200);
    for (int i = 0; i < N; i++)
        CHECK(holds(&s, offs[i], sizes[i], (uint64_t)i));
    CHECK(holds(&s, first, 64, 7));
    CHECK(p2_seg_close(&s, &err) == P2_OK);

    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);
    CHECK(s.mapped == mapped);
    for (int i = 0; i < N; i++)
        CHECK(holds(&s, offs[i], sizes[i], (uint64_t)i));
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* A growing file's size tracks what is in use: each growth extends it past what the
 * allocation needs by 1/32 of its size (a 64 KiB granule at least), so the file stays
 * within that step of the allocated area (where doubling left up to half of it unused),
 * while the growths stay few: one per granule up to 2 MiB, then geometric. */
static void test_growth_tracks_use(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("track.p2");
    const uint64_t g = 65536;
    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);
    uint64_t mapped = s.mapped;
    int remaps = 0;
    while (p2_seg_used(&s) < (UINT64_C(48) << 20)) {
        uint64_t step = mapped / 32 > g ? mapped / 32 : g;
        REQUIRE(p2_seg_alloc(&s, 5000 + (rnd() % 3) * 4096, &err) != 0);
        if (s.mapped != mapped) {
            remaps++;
            CHECK(s.mapped % g == 0);
            CHECK(s.mapped >= mapped + step);                 /* at least the step */
            CHECK(s.mapped <= p2_seg_used(&s) + step + g);    /* and not much more */
            mapped = s.mapped;
        }
        CHECK(p2_seg_used(&s) <= s.mapped);
    }
    /* 48 MiB: about 32 granule steps to 2 MiB, then 1/32 each (log(24) / log(1 + 1/32)) */
    CHECK(remaps >= 60);
    CHECK(remaps <= 32 + 105);
    CHECK(s.mapped <= p2_seg_used(&s) + s.mapped / 32 + g);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == mapped);
}

/* The reservation caps the segment; failure leaves the segment usable. */
static void test_reservation_limit(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("limit.p2");
    REQUIRE(p2_seg_open(&s, path, FP, NROOTS, root_names, root_sizes, 1u << 20, NULL, &err) == P2_OK);
    CHECK(s.reserved == 1u << 20);
    p2_off a = p2_seg_alloc(&s, 600000, &err);
    REQUIRE(a != 0);
    fill(&s, a, 600000, 1);
    CHECK(p2_seg_alloc(&s, 600000, &err) == 0);
    CHECK(err.code == P2_ENOMEM);
    CHECK(strstr(err.msg, "reservation of 1048576 bytes") != NULL);
    CHECK(p2_seg_alloc(&s, UINT64_MAX, &err) == 0 && err.code == P2_ENOMEM);
    CHECK(p2_seg_realloc(&s, a, 600000, 2u << 20, &err) == 0 && err.code == P2_ENOMEM);
    CHECK(holds(&s, a, 600000, 1));
    CHECK(s.mapped <= s.reserved);
    p2_off b = p2_seg_alloc(&s, 100, &err);
    CHECK(b != 0);
    /* Fill the reservation up exactly with 4 KiB blocks. */
    int n = 0;
    while (p2_seg_alloc(&s, 4096, &err) != 0)
        n++;
    CHECK(err.code == P2_ENOMEM);
    CHECK(n > 0);
    CHECK(s.mapped == s.reserved);
    CHECK(p2_seg_close(&s, &err) == P2_OK);

    /* A file bigger than the reservation is refused at open. */
    CHECK(p2_seg_open(&s, path, FP, NROOTS, root_names, root_sizes, 65536, NULL, &err) == P2_ENOMEM);
    CHECK(strstr(err.msg, "reservation of 65536 bytes") != NULL);
}

static void test_realloc(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("realloc.p2");
    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);

    /* small -> small (same class, in place), then grows: growth is zero. */
    p2_off a = p2_seg_alloc(&s, 20, &err);
    fill(&s, a, 20, 1);
    p2_off a2 = p2_seg_realloc(&s, a, 20, 17, &err);
    CHECK(a2 == a);
    a2 = p2_seg_realloc(&s, a2, 17, 32, &err);
    CHECK(a2 == a);
    CHECK(holds(&s, a2, 17, 1));
    CHECK(is_zero(&s, a2 + 17, 15));

    /* small -> bigger small class -> large: moves, keeps data, zero tail. */
    fill(&s, a2, 32, 2);
    p2_off b = p2_seg_realloc(&s, a2, 32, 1000, &err);
    REQUIRE(b != 0);
    CHECK(holds(&s, b, 32, 2) && is_zero(&s, b + 32, 1000 - 32));
    fill(&s, b, 1000, 3);
    p2_off c = p2_seg_realloc(&s, b, 1000, 50000, &err);
    REQUIRE(c != 0);
    CHECK(holds(&s, c, 1000, 3) && is_zero(&s, c + 1000, 49000));

    /* The last block grows in place at brk. */
    fill(&s, c, 50000, 4);
    uint64_t used = p2_seg_used(&s);
    CHECK(c + 53248 == used);   /* 50000 rounded up to 4 KiB, at the end */
    p2_off d = p2_seg_realloc(&s, c, 50000, 300000, &err);
    CHECK(d == c);
    CHECK(holds(&s, d, 50000, 4) && is_zero(&s, d + 50000, 250000));

    /* A block that is not last and has no free neighbour moves. */
    p2_off guard = p2_seg_alloc(&s, 5000, &err);
    REQUIRE(guard != 0);
    fill(&s, d, 300000, 5);
    p2_off e = p2_seg_realloc(&s, d, 300000, 400000, &err);
    REQUIRE(e != 0);
    CHECK(e != d);
    CHECK(holds(&s, e, 300000, 5) && is_zero(&s, e + 300000, 100000));

    /* Shrink large in place, keeps the prefix; the tail is reusable. */
    p2_off f = p2_seg_realloc(&s, e, 400000, 10000, &err);
    CHECK(f == e);
    CHECK(holds(&s, f, 10000, 5));
    /* ... and grows back in place over the free tail. */
    p2_off g = p2_seg_realloc(&s, f, 10000, 200000, &err);
    CHECK(g == f);
    CHECK(holds(&s, g, 10000, 5) && is_zero(&s, g + 10000, 190000));

    /* Shrink large -> small moves and keeps the prefix. */
    p2_off h = p2_seg_realloc(&s, g, 200000, 100, &err);
    REQUIRE(h != 0);
    CHECK(holds(&s, h, 100, 5));

    /* realloc of 0 allocates. */
    p2_off k = p2_seg_realloc(&s, 0, 0, 77, &err);
    CHECK(k != 0 && is_zero(&s, k, 77));

    CHECK(holds(&s, guard, 0, 0));
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* Freed blocks are reused: loops do not raise brk; large blocks coalesce. */
static void test_reuse(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("reuse.p2");
    REQUIRE(p2_seg_open(&s, path, FP, 0, NULL, NULL, 0, NULL, &err) == P2_OK);

    /* Coalescing: three adjacent 4 KiB blocks freed in any order become one. */
    p2_off x = p2_seg_alloc(&s, 4096, &err);
    p2_off y = p2_seg_alloc(&s, 4096, &err);
    p2_off z = p2_seg_alloc(&s, 4096, &err);
    p2_off w = p2_seg_alloc(&s, 4096, &err);   /* keeps z off the end */
    CHECK(y == x + 4096 && z == y + 4096 && w == z + 4096);
    uint64_t used = p2_seg_used(&s);
    p2_seg_free(&s, x, 4096);
    p2_seg_free(&s, z, 4096);
    p2_seg_free(&s, y, 4096);
    p2_off xyz = p2_seg_alloc(&s, 12288, &err);
    CHECK(xyz == x);
    CHECK(p2_seg_used(&s) == used);
    p2_seg_free(&s, xyz, 12288);

    /* Small classes refill from free large space before growing. */
    p2_off sm = p2_seg_alloc(&s, 100, &err);
    CHECK(sm >= x && sm < x + 12288);
    CHECK(p2_seg_used(&s) == used);
    p2_seg_free(&s, sm, 100);
    p2_seg_free(&s, w, 4096);

    /* Alloc/free loops. */
    static const uint64_t sizes[] = { 1, 16, 24, 100, 700, 2048, 2049, 5000, 70000, 1u << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        p2_off o = p2_seg_alloc(&s, sizes[i], &err);
        p2_seg_free(&s, o, sizes[i]);
    }
    used = p2_seg_used(&s);
    for (int round = 0; round < 2000; round++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            p2_off o = p2_seg_alloc(&s, sizes[i], &err);
            CHECK(o != 0);
            p2_seg_free(&s, o, sizes[i]);
        }
    CHECK(p2_seg_used(&s) == used);

    /* Batches: allocate 200 random blocks, free all, repeat. */
    enum { B = 200 };
    p2_off offs[B];
    uint64_t sz[B];
    uint64_t steady = 0;  /* brk after the warm-up rounds */
    for (int round = 0; round < 30; round++) {
        rng_state = 12345;   /* same sizes every round */
        for (int i = 0; i < B; i++) {
            sz[i] = (rnd() % 4) ? 1 + rnd() % 2048 : 2049 + rnd() % 50000;
            offs[i] = p2_seg_alloc(&s, sz[i], &err);
            REQUIRE(offs[i] != 0);
            CHECK(is_zero(&s, offs[i], sz[i]));
            fill(&s, offs[i], sz[i], (uint64_t)i);
        }
        for (int i = 0; i < B; i++)
            CHECK(holds(&s, offs[i], sz[i], (uint64_t)i));
        for (int i = B - 1; i >= 0; i -= 2)
            p2_seg_free(&s, offs[i], sz[i]);
        for (int i = B - 2; i >= 0; i -= 2)
            p2_seg_free(&s, offs[i], sz[i]);
        /* Round 0 may reuse leftovers of the tests above in a different
         * arrangement; from round 1 on the same holes serve the same sizes. */
        if (round == 1)
            steady = p2_seg_used(&s);
    }
    CHECK(p2_seg_used(&s) == steady);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* Random alloc / free / realloc against a shadow table; data never overlaps. */
static void test_stress(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("stress.p2");
    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);
    enum { SLOTS = 500, STEPS = 20000 };
    static p2_off off[SLOTS];
    static uint64_t size[SLOTS], id[SLOTS];
    uint64_t next_id = 1;
    rng_state = 987654321;
    for (int step = 0; step < STEPS; step++) {
        int i = (int)(rnd() % SLOTS);
        uint64_t r = rnd() % 100;
        uint64_t want = (rnd() % 5) ? rnd() % 3000 : 3000 + rnd() % 100000;
        if (off[i] == 0) {
            off[i] = p2_seg_alloc(&s, want, &err);
            REQUIRE(off[i] != 0);
            CHECK(is_zero(&s, off[i], want));
            size[i] = want;
            id[i] = next_id++;
            fill(&s, off[i], want, id[i]);
        } else if (r < 40) {
            CHECK(holds(&s, off[i], size[i], id[i]));
            p2_seg_free(&s, off[i], size[i]);
            off[i] = 0;
        } else {
            CHECK(holds(&s, off[i], size[i], id[i]));
            p2_off n = p2_seg_realloc(&s, off[i], size[i], want, &err);
            REQUIRE(n != 0);
            uint64_t keep = size[i] < want ? size[i] : want;
            CHECK(holds(&s, n, keep, id[i]));
            if (want > keep)
                CHECK(is_zero(&s, n + keep, want - keep));
            off[i] = n;
            size[i] = want;
            id[i] = next_id++;
            fill(&s, n, want, id[i]);
        }
    }
    /* Disjointness of the live blocks. */
    for (int i = 0; i < SLOTS; i++)
        for (int j = i + 1; j < SLOTS; j++)
            if (off[i] && off[j]) {
                uint64_t ei = off[i] + (size[i] ? size[i] : 1), ej = off[j] + (size[j] ? size[j] : 1);
                CHECK(ei <= off[j] || ej <= off[i]);
            }
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    REQUIRE(open_std(&s, path, FP, NULL, &err) == P2_OK);
    for (int i = 0; i < SLOTS; i++)
        if (off[i])
            CHECK(holds(&s, off[i], size[i], id[i]));
    /* Free everything and allocate again: brk stays. */
    uint64_t used = p2_seg_used(&s);
    for (int i = 0; i < SLOTS; i++)
        if (off[i])
            p2_seg_free(&s, off[i], size[i]);
    CHECK(p2_seg_alloc(&s, 50000, &err) != 0);
    CHECK(p2_seg_used(&s) == used);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* Exact size classes (the class-table root passed last): blocks rounded to 16 bytes,
 * freed blocks reused by their class, the class table in the file; the other policy's
 * open is refused and recovery drops a broken exact list. */
static void test_exact_classes(void)
{
    p2_err err = {0};
    p2_seg s;
    static const char *const names[] = { "alpha", "beta", P2_SEG_EXACT_ROOT };
    static const uint64_t sizes[] = { 100, 40, P2_SEG_EXACT_TABLE_SIZE };
    char path[2048], path2[2048];         /* file_in_dir's buffer is reused */
    snprintf(path, sizeof path, "%s", file_in_dir("exact.p2"));
    snprintf(path2, sizeof path2, "%s", file_in_dir("pow2.p2"));
    REQUIRE(p2_seg_open(&s, path, FP, 3, names, sizes, 0, NULL, &err) == P2_OK);
    CHECK(s.alloc_exact == 1);
    /* the table first, at the start of the allocated area; then the roots, 112 and 48 */
    CHECK(s.class_table == P2_SEG_HEADER_SIZE);
    CHECK(p2_seg_root(&s, 0) == P2_SEG_HEADER_SIZE + P2_SEG_EXACT_TABLE_SIZE);
    CHECK(p2_seg_root(&s, 1) == p2_seg_root(&s, 0) + 112);
    CHECK(p2_seg_root(&s, 2) == s.class_table);
    uint64_t used = p2_seg_used(&s);
    p2_off a = p2_seg_alloc(&s, 40, &err), b = p2_seg_alloc(&s, 300, &err), c = p2_seg_alloc(&s, 33, &err);
    CHECK(b == a + 48 && c == b + 304 && p2_seg_used(&s) == used + 48 + 304 + 48);
    fill(&s, b, 300, 7);
    /* realloc within the class stays; to another class moves and keeps the bytes */
    CHECK(p2_seg_realloc(&s, b, 300, 290, &err) == b);
    p2_off b2 = p2_seg_realloc(&s, b, 290, 320, &err);
    CHECK(b2 != 0 && b2 != b && holds(&s, b2, 290, 7) && is_zero(&s, b2 + 290, 30));
    /* the freed 304-byte block serves the next request of its class, not one of 288 bytes */
    CHECK(p2_seg_alloc(&s, 288, &err) != b);
    CHECK(p2_seg_alloc(&s, 301, &err) == b);
    p2_seg_free(&s, a, 40);
    p2_seg_free(&s, c, 33);
    CHECK(p2_seg_alloc(&s, 47, &err) == c);      /* LIFO within the 48-byte class */
    CHECK(p2_seg_alloc(&s, 41, &err) == a);
    /* a random mix, verified */
    enum { N = 300 };
    static p2_off off[N];
    static uint64_t sz[N];
    rng_state = 4242;
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < N; i++) {
            if (off[i])
                p2_seg_free(&s, off[i], sz[i]);
            sz[i] = (rnd() % 8) ? 1 + rnd() % 2048 : 2049 + rnd() % 9000;
            off[i] = p2_seg_alloc(&s, sz[i], &err);
            REQUIRE(off[i] != 0);
            fill(&s, off[i], sz[i], (uint64_t)(round * N + i));
        }
    p2_verify v;
    char rep[2048];
    p2_verify_init(&v, rep, sizeof rep, 10);
    for (int i = 0; i < N; i++)
        p2_verify_claim(&v, &s, off[i], sz[i], "a test block");
    p2_verify_claim(&v, &s, b2, 320, "a test block");
    p2_seg_verify(&s, &v, "exact.p2");
    CHECK(v.errors == 0);
    if (v.errors)
        fprintf(stderr, "%s\n", rep);
    p2_verify_done(&v);
    CHECK(p2_seg_close(&s, &err) == P2_OK);

    /* the other policy: refused, the file unchanged */
    uint64_t size0, size1;
    uint32_t crc0 = file_crc(path, &size0);
    CHECK(p2_seg_open(&s, path, FP, 2, names, sizes, 0, NULL, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "(alloc = exact)") != NULL && strstr(err.msg, "(alloc = pow2)") != NULL);
    CHECK(file_crc(path, &size1) == crc0 && size1 == size0);
    REQUIRE(p2_seg_open(&s, path2, FP, 2, names, sizes, 0, NULL, &err) == P2_OK);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    CHECK(p2_seg_open(&s, path2, FP, 3, names, sizes, 0, NULL, &err) == P2_EMISMATCH);
    CHECK(strstr(err.msg, "power-of-two") != NULL);
    /* the class table only as the last root */
    static const char *const bad[] = { P2_SEG_EXACT_ROOT, "alpha" };
    static const uint64_t bad_sizes[] = { P2_SEG_EXACT_TABLE_SIZE, 100 };
    CHECK(p2_seg_open(&s, file_in_dir("bad.p2"), FP, 2, bad, bad_sizes, 0, NULL, &err) == P2_EINVAL);

    /* the contents after reopen; then a broken exact list, dropped by recovery */
    REQUIRE(p2_seg_open(&s, path, FP, 3, names, sizes, 0, NULL, &err) == P2_OK);
    for (int i = 0; i < N; i++)
        CHECK(holds(&s, off[i], sz[i], (uint64_t)(19 * N + i)));
    p2_off f = p2_seg_alloc(&s, 200, &err);      /* 208-byte class: index 12 */
    p2_seg_free(&s, f, 200);
    p2_off *heads = (p2_off *)p2_seg_ptr(&s, s.class_table);
    CHECK(heads[12] == f);
    heads[12] = 8;                                /* not a block */
    CHECK(p2_seg_close_unclean(&s, &err) == P2_OK);
    REQUIRE(p2_seg_open_recover(&s, path, FP, 3, names, sizes, 0, NULL, &err) == P2_OK);
    CHECK(s.rec_unclean == 1 && s.rec_lists_dropped == 1);
    heads = (p2_off *)p2_seg_ptr(&s, s.class_table);
    CHECK(heads[12] == 0);
    p2_verify_init(&v, rep, sizeof rep, 10);
    p2_seg_verify(&s, &v, "exact.p2");
    CHECK(v.errors == 0);
    p2_verify_done(&v);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* An empty existing file is refused, not made a database (it may be another
 * program's, or truncated), and left empty; a failed creation leaves no trace.
 * (Refusing damaged files is checked from Python, tests/runtime/test_runtime.py.) */
static void test_empty_file(void)
{
    p2_err err = {0};
    p2_seg s;
    const char *path = file_in_dir("empty.p2");
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    close(fd);
    struct stat st;
    int created = -1;
    CHECK(open_std(&s, path, FP, &created, &err) == P2_EFORMAT);
    CHECK(strstr(err.msg, "not a p2gen database: empty") != NULL);
    CHECK(created == 0 && s.base == NULL && s.fd == -1);
    CHECK(stat(path, &st) == 0 && st.st_size == 0);
    /* A file this call creates is removed again when its initialisation fails ... */
    const char *big[1] = { "big" };
    const uint64_t bigsize[1] = { 10u << 20 };
    const char *fresh = file_in_dir("fresh.p2");
    CHECK(p2_seg_open(&s, fresh, FP, 1, big, bigsize, 1u << 20, &created, &err) == P2_ENOMEM);
    CHECK(strstr(err.msg, "reservation of 1048576 bytes") != NULL);
    CHECK(access(fresh, F_OK) != 0);
    /* ... and a missing file is created. */
    REQUIRE(open_std(&s, fresh, FP, &created, &err) == P2_OK);
    CHECK(created == 1);
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* The file past the allocated area may hold bytes (a file rebuilt after a crash, whose
   data reached the disk before its header, or one from someone else): blocks taken there,
   large and small, at brk and grown there in place, are still handed out zeroed. */
static void test_tail_past_brk(void)
{
    p2_err err = {0, ""};
    p2_seg s;
    int created = -1;
    const char *path = file_in_dir("tail.p2");
    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    p2_off a = p2_seg_alloc(&s, 1u << 20, &err);          /* large, at brk: fresh */
    REQUIRE(a != 0);
    CHECK(is_zero(&s, a, 1u << 20));
    fill(&s, a, 1u << 20, 7);
    uint64_t brk = p2_seg_used(&s), size = s.mapped;
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    /* bytes past brk, as a crash or a hostile file leaves them */
    int fd = open(path, O_RDWR);
    REQUIRE(fd >= 0);
    static unsigned char junk[65536];
    memset(junk, 0x5a, sizeof junk);
    for (uint64_t o = brk; o < size; o += sizeof junk)
        CHECK(pwrite(fd, junk, (size_t)(size - o < sizeof junk ? size - o : sizeof junk), (off_t)o) > 0);
    close(fd);
    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    CHECK(created == 0);
    p2_off b = p2_seg_alloc(&s, 100000, &err);            /* large, at brk */
    REQUIRE(b != 0);
    CHECK(b >= brk);
    CHECK(is_zero(&s, b, 100000));
    p2_off c = p2_seg_alloc(&s, 40, &err);                /* small, from a new piece */
    REQUIRE(c != 0);
    CHECK(is_zero(&s, c, 40));
    fill(&s, b, 100000, 9);
    p2_off d = p2_seg_realloc(&s, b, 100000, 300000, &err);   /* grown in place at brk? */
    REQUIRE(d != 0);
    CHECK(is_zero(&s, d + 100000, 200000));
    p2_off e = p2_seg_alloc(&s, 3u << 20, &err);          /* past the old file end */
    REQUIRE(e != 0);
    CHECK(is_zero(&s, e, 3u << 20));
    CHECK(p2_seg_close(&s, &err) == P2_OK);
    /* what was stored before is intact */
    REQUIRE(open_std(&s, path, FP, &created, &err) == P2_OK);
    CHECK(holds(&s, a, 1u << 20, 7));
    CHECK(holds(&s, d, 100000, 9));
    CHECK(p2_seg_close(&s, &err) == P2_OK);
}

/* Big heap blocks (the transient layer's, P2_HEAP_HUGE_MIN bytes and up): zeroed when
   made, contents kept and growth zeroed across mremap, what a shrink leaves in the last
   page zeroed again when the block grows, and sizes that are not whole pages. */
static void test_heap_big(void)
{
    const uint64_t mb = UINT64_C(1) << 20;
    p2_err err = {0, ""};   /* REQUIRE reports it */
    uint64_t size = 4 * mb + 100;
    unsigned char *p = p2_heap_big_alloc(size);
    REQUIRE(p != NULL);
    uint64_t nz = 0;
    for (uint64_t i = 0; i < size; i++)
        nz += p[i] != 0;
    CHECK(nz == 0);
    for (uint64_t i = 0; i < size; i++)
        p[i] = (unsigned char)(i * 7 + 1);
    /* grow: the pages move, the contents stay, the growth is zero */
    unsigned char *q = p2_heap_big_realloc(p, size, 9 * mb + 5);
    REQUIRE(q != NULL);
    nz = 0;
    for (uint64_t i = 0; i < size; i++)
        nz += q[i] != (unsigned char)(i * 7 + 1);
    CHECK(nz == 0);
    nz = 0;
    for (uint64_t i = size; i < 9 * mb + 5; i++)
        nz += q[i] != 0;
    CHECK(nz == 0);
    /* shrink into the middle of a page, fill to the new end, grow again: the bytes the
       shrink left past the end must read zero */
    memset(q, 0xab, 9 * mb + 5);
    unsigned char *r = p2_heap_big_realloc(q, 9 * mb + 5, 5 * mb + 10);
    REQUIRE(r != NULL);
    unsigned char *t = p2_heap_big_realloc(r, 5 * mb + 10, 8 * mb);
    REQUIRE(t != NULL);
    nz = 0;
    for (uint64_t i = 0; i < 5 * mb + 10; i++)
        nz += t[i] != 0xab;
    CHECK(nz == 0);
    nz = 0;
    for (uint64_t i = 5 * mb + 10; i < 8 * mb; i++)
        nz += t[i] != 0;
    CHECK(nz == 0);
    /* the same size: the same block */
    CHECK(p2_heap_big_realloc(t, 8 * mb, 8 * mb) == t);
    p2_heap_big_free(t, 8 * mb);
    /* sizes that cannot be mapped are refused, not wrapped */
    CHECK(p2_heap_big_alloc(UINT64_MAX) == NULL);
    CHECK(p2_heap_big_realloc(NULL, 4 * mb, 8 * mb) == NULL);
    p2_heap_big_free(NULL, 4 * mb);   /* nothing */
}

static int run_all(void)
{
    test_errors_and_crc();
    test_bad_arguments();
    test_create_alloc_reopen();
    test_growth();
    test_growth_tracks_use();
    test_reservation_limit();
    test_realloc();
    test_reuse();
    test_stress();
    test_exact_classes();
    test_empty_file();
    test_heap_big();
    test_tail_past_brk();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("all tests passed\n");
    return 0;
}

/* ---- command-line modes for the Python tests ------------------------------ */

static int cli(int argc, char **argv)
{
    const char *mode = argv[1], *path = argv[2];
    uint64_t fp = strtoull(argv[3], NULL, 16);
    const char *variant = argc > 4 ? argv[4] : "";
    const char *names[NROOTS + 1] = { "alpha", "beta", "gamma", "delta" };
    uint64_t sizes[NROOTS + 1] = { 100, 10000, 16, 8 };
    uint32_t n = NROOTS;
    if (strcmp(variant, "renamed") == 0)
        names[1] = "BETA";
    else if (strcmp(variant, "resized") == 0)
        sizes[2] = 32;
    else if (strcmp(variant, "fewer") == 0)
        n = NROOTS - 1;
    else if (strcmp(variant, "more") == 0)
        n = NROOTS + 1;

    p2_err err = {0};
    p2_seg s;
    p2_err_clear(&err);
    int created = 0;
    int rc = p2_seg_open(&s, path, fp, n, names, sizes, 0, &created, &err);
    if (strcmp(mode, "open") == 0) {
        if (rc == P2_OK)
            printf("P2_OK created=%d\n", created);
        else
            printf("%s %s\n", code_name(rc), err.msg);
        p2_seg_close(&s, NULL);
        return rc;
    }
    if (rc != P2_OK) {
        printf("%s %s\n", code_name(rc), err.msg);
        return rc;
    }
    if (strcmp(mode, "fill") == 0) {
        p2_off *table = p2_seg_ptr(&s, p2_seg_root(&s, 1));
        for (uint64_t i = 0; i < 20; i++) {
            uint64_t sz = 1 + i * 997;
            table[i] = p2_seg_alloc(&s, sz, &err);
            if (table[i] == 0)
                return 100;
            fill(&s, table[i], sz, i);
        }
    } else if (strcmp(mode, "check") == 0) {
        p2_off *table = p2_seg_ptr(&s, p2_seg_root(&s, 1));
        for (uint64_t i = 0; i < 20; i++)
            if (!holds(&s, table[i], 1 + i * 997, i)) {
                printf("block %" PRIu64 " differs\n", i);
                return 101;
            }
    } else if (strcmp(mode, "crash") == 0) {
        p2_off o = p2_seg_alloc(&s, 5000, &err);
        fill(&s, o, 5000, 9);
        printf("crashing\n");
        fflush(stdout);
        _exit(0);
    } else if (strcmp(mode, "hold") == 0) {
        printf("ready\n");
        fflush(stdout);
        while (getchar() != EOF) {
        }
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    rc = p2_seg_close(&s, &err);
    printf("%s %s\n", code_name(rc), rc ? err.msg : "closed");
    return rc;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 2) {
        snprintf(dir, sizeof dir, "%s", argv[1]);
        return run_all();
    }
    if (argc >= 4)
        return cli(argc, argv);
    fprintf(stderr, "usage: %s DIR | open|fill|check|crash|hold PATH FP [VARIANT]\n", argv[0]);
    return 2;
}
