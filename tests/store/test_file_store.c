/* SPDX-License-Identifier: MIT */
/*
 * test_file_store.c - breakers shared by the processes of one host through a
 * memory-mapped store file: one breaker per name across handles and real
 * processes (fork), the first creator's limits winning, the file's safety
 * rules, race-free creation, the probe bound and the statistics identity
 * under eight processes, and a probe whose process is killed with SIGKILL
 * being reclaimed at its deadline.
 */
#define _GNU_SOURCE
#include "store_fixture.h"

#include <breaker/registry.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void one_breaker_per_name_across_handles_and_processes(void **state) {
    (void)state;
    breaker_store *st = open_store();
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    breaker_config cfg = consecutive_config(2);
    breaker *a = attach(st, "payments", &cfg);
    breaker *b = attach(st, "payments", &cfg);
    call_ok(a, BREAKER_FAILURE);
    call_ok(b, BREAKER_FAILURE); /* the second failure in a row, whoever saw the first */
    assert_int_equal(breaker_get_state(a), BREAKER_OPEN);
    uint64_t gen = breaker_generation(a);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("payments", &cfg, &cs);
        breaker_permit p;
        int ok = breaker_get_state(c) == BREAKER_OPEN && breaker_generation(c) == gen &&
                 breaker_acquire(c, &p) == BREAKER_REJECTED_OPEN;
        breaker_stats s;
        (void)breaker_stats_get(c, &s);
        ok = ok && s.failures == 2 && s.rejected_open == 1;
        breaker_destroy(c);
        breaker_store_close(cs);
        /* The parent's handles, inherited: freed so memcheck sees no leak
         * (freeing a handle or closing a store touches nothing shared). */
        breaker_destroy(a);
        breaker_destroy(b);
        breaker_store_close(st);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(reap(pid), 0);
    assert_int_equal(stats_of(a).rejected_open, 1); /* the child's refusal, counted here */
    breaker_destroy(a);
    breaker_destroy(b);
    breaker_store_close(st);
}

static int count_name(void *ctx, const char *name) {
    (void)name;
    (*(int *)ctx)++;
    return 0;
}

/* The first creator's limits win; a different configuration is told so and
 * sees the stored limits. Its own callbacks stay its own. */
static void the_first_creators_limits_win(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config first = consecutive_config(5);
    breaker *a = attach(st, "search", &first);
    breaker_config other = consecutive_config(9);
    struct event_log log = {0};
    other.on_event = event_log_record;
    other.event_ctx = &log;
    breaker *b = NULL;
    char msg[256];
    assert_int_equal(breaker_store_attach(st, "search", &other, &b, msg, sizeof(msg)),
                     BREAKER_CONFIG_DIFFERS);
    assert_non_null(b);
    assert_non_null(strstr(msg, "search"));
    breaker_config got;
    breaker_get_config(b, &got);
    assert_int_equal(got.failure_threshold, 5);
    assert_ptr_equal(got.on_event, event_log_record);
    for (int i = 0; i < 5; i++)
        call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(a), BREAKER_OPEN);
    /* The transition is reported once, by the handle that made it. */
    assert_int_equal(atomic_load(&log.count), 1);
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1);
    breaker_destroy(a);
    breaker_destroy(b);
    breaker_store_close(st);
}

static void write_file(const char *p, const void *data, size_t n, mode_t mode) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
}

static int refused(const char *p, unsigned flags, char *msg, size_t len) {
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.flags = flags;
    breaker_store *st = NULL;
    int rc = breaker_store_open(p, &c, &st, msg, len);
    if (rc == BREAKER_OK) breaker_store_close(st);
    return rc;
}

static void the_file_is_checked_before_it_is_trusted(void **state) {
    (void)state;
    char msg[256];
    /* No file, no CREATE. */
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_NOT_FOUND);
    /* Garbage, and too short. */
    write_file(path, "hello, not a store", 18, 0600);
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    /* All zeros: a creator died between sizing the file and writing its
     * header. Not a corrupt file that blocks everyone: empty without CREATE,
     * laid out with it. */
    char zeros[8192] = {0};
    write_file(path, zeros, sizeof(zeros), 0600);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_NOT_FOUND);
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_OK);
    unlink(path);
    /* A header that is not all zeros but has no magic is refused. */
    zeros[100] = 1;
    write_file(path, zeros, sizeof(zeros), 0600);
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(msg, "magic"));
    unlink(path);
    /* A good file, then damaged: another version; truncated. */
    breaker_store *st = open_store();
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    uint32_t version = 99;
    assert_int_equal(pwrite(fd, &version, sizeof(version), 8), (ssize_t)sizeof(version));
    close(fd);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(msg, "version 99"));
    assert_int_equal(truncate(path, 4096), 0);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    unlink(path);
    /* Group-writable: refused unless allowed. */
    st = open_store();
    breaker_store_close(st);
    assert_int_equal(chmod(path, 0660), 0);
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EIO);
    assert_non_null(strstr(msg, "writable"));
    assert_int_equal(refused(path, BREAKER_STORE_ALLOW_SHARED, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(chmod(path, 0600), 0);
    /* A symbolic link: refused. */
    char link[160];
    snprintf(link, sizeof(link), "%s/link", dir);
    assert_int_equal(symlink(path, link), 0);
    assert_int_equal(refused(link, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_EIO);
    assert_non_null(strstr(msg, "symbolic link"));
    unlink(link);
}

/* ---- Damaged files (found by tests/fuzz/fuzz_store_file.c) --------------------
 * The store file's layout (file_store.c), to damage it on purpose: header
 * fields at these offsets; the directory at entries_off, entries of
 * ENTRY_SIZE bytes (state, pad, block_off, block_size, name); blocks from
 * data_off, each with its state word at BLOCK_CTL. */
enum {
    H_BOOT_ID = 24,
    H_FILE_SIZE = 64,
    H_CAPACITY = 72,
    H_ENTRY_SIZE = 76,
    H_ENTRIES_OFF = 80,
    H_DATA_OFF = 88,
    H_DATA_USED = 96,
    E_STATE = 0,
    E_BLOCK_OFF = 8,
    E_BLOCK_SIZE = 16,
    E_NAME = 24,
    BLOCK_CTL = 256,
    SMALL_SIZE = 32768,
};

static void put(const char *p, uint64_t off, const void *data, size_t n) {
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, data, n, (off_t)off), (ssize_t)n);
    close(fd);
}

static void put_u64(uint64_t off, uint64_t v) { put(path, off, &v, sizeof(v)); }
static void put_u32(uint64_t off, uint32_t v) { put(path, off, &v, sizeof(v)); }

static void get(const char *p, uint64_t off, void *data, size_t n) {
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, data, n, (off_t)off), (ssize_t)n);
    close(fd);
}

static uint64_t get_u64(uint64_t off) {
    uint64_t v = 0;
    get(path, off, &v, sizeof(v));
    return v;
}

static uint32_t get_u32(uint64_t off) {
    uint32_t v = 0;
    get(path, off, &v, sizeof(v));
    return v;
}

/* Where entry `i`'s field `field` is. */
static uint64_t entry_at(unsigned i, unsigned field) {
    return get_u64(H_ENTRIES_OFF) + (uint64_t)i * get_u32(H_ENTRY_SIZE) + field;
}

/* A fresh small store (4 names, 32 KiB) holding "alpha" (consecutive) and
 * "beta" (count window), as the first two entries. */
static void small_store(void) {
    unlink(path);
    breaker_store_config c;
    breaker_store_config_init(&c);
    c.capacity = 4;
    c.size = SMALL_SIZE;
    breaker_store *st = NULL;
    char msg[256];
    if (breaker_store_open(path, &c, &st, msg, sizeof(msg)) != BREAKER_OK) fail_msg("%s", msg);
    breaker_config cfg = consecutive_config(2);
    breaker_destroy(attach(st, "alpha", &cfg));
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
    breaker_destroy(attach(st, "beta", &cfg));
    breaker_store_close(st);
}

static void expect_open_refused(const char *field) {
    char msg[256] = "";
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    if (strstr(msg, field) == NULL) fail_msg("message \"%s\" does not name %s", msg, field);
}

/* Open the store and attach `name`: refused, with a message naming `field`. */
static void expect_attach_refused(const char *name, const char *field) {
    breaker_store *st = open_store();
    breaker *b = NULL;
    char msg[256] = "";
    breaker_config cfg = consecutive_config(2);
    assert_int_equal(breaker_store_attach(st, name, &cfg, &b, msg, sizeof(msg)),
                     BREAKER_EINCOMPATIBLE);
    assert_null(b);
    if (strstr(msg, field) == NULL) fail_msg("message \"%s\" does not name %s", msg, field);
    breaker_store_close(st);
}

/* Offsets and sizes in the header are checked against the layout this build
 * computes, without overflow: an offset near 2^64 used to wrap the bounds
 * check and place the directory outside the mapping, and a misaligned one
 * made every entry's atomics undefined. */
static void header_offsets_are_checked_without_overflow(void **state) {
    (void)state;
    small_store();
    put_u64(H_ENTRIES_OFF, UINT64_MAX - 4095); /* + capacity entries wraps */
    expect_open_refused("entries_off");
    small_store();
    put_u64(H_ENTRIES_OFF, get_u64(H_ENTRIES_OFF) + 4); /* misaligned */
    expect_open_refused("entries_off");
    small_store();
    put_u64(H_DATA_OFF, get_u64(H_DATA_OFF) + 8); /* blocks misaligned */
    expect_open_refused("data_off");
    small_store();
    put_u64(H_DATA_OFF, SMALL_SIZE + 4096);
    expect_open_refused("data_off");
    small_store();
    put_u64(H_DATA_USED, UINT64_MAX - 64);
    expect_open_refused("data_used");
    small_store();
    put_u32(H_CAPACITY, 0);
    expect_open_refused("capacity");
    small_store();
    put_u64(H_FILE_SIZE, SMALL_SIZE * 2);
    expect_open_refused("file_size");
    /* Truncated anywhere: refused, never mapped past its end. */
    static const off_t cuts[] = {200, 4096 + 100, 8192 + 1000};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        small_store();
        assert_int_equal(truncate(path, cuts[i]), 0);
        expect_open_refused("file_size");
    }
}

/* A file of an earlier boot is laid out again for its stored capacity: a
 * capacity whose directory the file cannot hold at the usual offsets (200
 * entries squeezed right after the header) used to be re-laid out past the
 * end of the file. */
static void an_earlier_boots_file_too_small_for_its_capacity_is_refused(void **state) {
    (void)state;
    small_store();
    put(path, H_BOOT_ID, "00000000-0000-0000-0000-000000000000", 36);
    put_u32(H_CAPACITY, 200);
    put_u64(H_ENTRIES_OFF, 184);
    put_u64(H_DATA_OFF, 184 + 200 * (uint64_t)get_u32(H_ENTRY_SIZE));
    put_u64(H_DATA_USED, 0);
    expect_open_refused("entries_off");
    /* Its own capacity but too many bytes of directory for the file. */
    small_store();
    put(path, H_BOOT_ID, "00000000-0000-0000-0000-000000000000", 36);
    put_u32(H_CAPACITY, 1000);
    uint64_t entries = get_u64(H_ENTRIES_OFF);
    uint64_t need = entries + 1000 * (uint64_t)get_u32(H_ENTRY_SIZE);
    put_u64(H_DATA_OFF, (need + 4095) / 4096 * 4096);
    expect_open_refused("capacity 1000 needs");
}

/* An entry's block must be an aligned block of the data handed out: an
 * offset near 2^64 used to wrap the bounds check, one in the header or the
 * directory let a breaker overwrite them, a misaligned one made its atomics
 * undefined. */
static void an_entrys_block_outside_the_data_is_refused(void **state) {
    (void)state;
    small_store();
    put_u64(entry_at(0, E_BLOCK_OFF), UINT64_MAX - 63);
    put_u64(entry_at(0, E_BLOCK_SIZE), 128);
    expect_attach_refused("alpha", "block_off");
    small_store();
    put_u64(entry_at(0, E_BLOCK_OFF), 0); /* the header */
    expect_attach_refused("alpha", "block_off");
    small_store();
    put_u64(entry_at(1, E_BLOCK_OFF), get_u64(H_ENTRIES_OFF)); /* the directory */
    expect_attach_refused("beta", "block_off");
    small_store();
    put_u64(entry_at(0, E_BLOCK_OFF), get_u64(entry_at(0, E_BLOCK_OFF)) + 8);
    expect_attach_refused("alpha", "block_off");
    small_store();
    put_u64(entry_at(1, E_BLOCK_SIZE), UINT64_C(1) << 63);
    expect_attach_refused("beta", "block_size");
    /* Past the bytes handed out (data_used), though inside the file. */
    small_store();
    put_u64(entry_at(1, E_BLOCK_OFF), get_u64(H_DATA_OFF) + get_u64(H_DATA_USED));
    expect_attach_refused("beta", "block_off");
    /* Two entries on one block: one's counters would overwrite the other's
     * limits, checked once at attach. Both refused. */
    small_store();
    put_u64(entry_at(1, E_BLOCK_OFF), get_u64(entry_at(0, E_BLOCK_OFF)) + 128);
    expect_attach_refused("beta", "overlaps");
    expect_attach_refused("alpha", "overlaps");
}

/* An INITIALISING entry (its creator died) is taken over by the next
 * attacher, reusing its block when large enough: a damaged one's block used
 * to be zeroed wherever it pointed. A sound one is still taken over. */
static void a_dead_creators_damaged_entry_is_not_reused(void **state) {
    (void)state;
    small_store();
    put_u32(entry_at(1, E_STATE), 1);
    put_u64(entry_at(1, E_BLOCK_OFF), UINT64_C(1) << 40);
    put_u64(entry_at(1, E_BLOCK_SIZE), UINT64_C(1) << 20);
    expect_attach_refused("beta", "block_off");
    /* One pointing at a live breaker's block: taking it over would zero it. */
    small_store();
    put_u32(entry_at(1, E_STATE), 1);
    put_u64(entry_at(1, E_BLOCK_OFF), get_u64(entry_at(0, E_BLOCK_OFF)));
    expect_attach_refused("beta", "overlaps");
    small_store();
    put_u32(entry_at(1, E_STATE), 1);
    breaker_store *st = open_store();
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1); /* beta is not ready */
    breaker_config cfg = consecutive_config(5);
    breaker *b = attach(st, "beta", &cfg);
    breaker_config got;
    breaker_get_config(b, &got);
    assert_int_equal(got.failure_threshold, 5); /* created again, with cfg */
    breaker_destroy(b);
    breaker_store_close(st);
}

/* The bytes handed out are read again under the lock before a new block is
 * placed: a data_used damaged after open used to wrap the room check and
 * place the block anywhere. */
static void data_used_is_checked_again_before_a_block_is_placed(void **state) {
    (void)state;
    small_store();
    breaker_store *st = open_store();
    put_u64(H_DATA_USED, UINT64_MAX - 64); /* the store is mapped shared: it sees this */
    breaker *b = NULL;
    char msg[256] = "";
    assert_int_equal(breaker_store_attach(st, "gamma", NULL, &b, msg, sizeof(msg)),
                     BREAKER_EINCOMPATIBLE);
    assert_null(b);
    assert_non_null(strstr(msg, "data_used"));
    /* Full to the last byte: no room, said as such. */
    put_u64(H_DATA_USED, SMALL_SIZE - get_u64(H_DATA_OFF));
    assert_int_equal(breaker_store_attach(st, "gamma", NULL, &b, msg, sizeof(msg)), BREAKER_ENOSPC);
    breaker_store_close(st);
}

static int note_name(void *ctx, const char *name) {
    assert_true(strlen(name) <= BREAKER_NAME_MAX);
    assert_int_equal(breaker_name_validate(name, NULL, 0), BREAKER_OK);
    snprintf(ctx, 64, "%s", name);
    return 0;
}

/* A name with no NUL in its field, or not a valid name, is skipped by
 * foreach (it used to be cut and handed out as another name). */
static void damaged_names_are_not_listed(void **state) {
    (void)state;
    small_store();
    char full[BREAKER_NAME_MAX + 1];
    memset(full, 'a', sizeof(full));
    put(path, entry_at(0, E_NAME), full, sizeof(full));
    put(path, entry_at(1, E_NAME), "bad name!", 10);
    breaker_store *st = open_store();
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 0);
    /* The longest valid name is another name: a new breaker. */
    full[BREAKER_NAME_MAX] = '\0';
    breaker_destroy(attach(st, full, NULL));
    char seen[64] = "";
    assert_int_equal(breaker_store_foreach(st, note_name, seen), 0);
    assert_int_equal(strncmp(seen, full, 63), 0);
    breaker_store_close(st);
}

/* What a process killed while laying a file out leaves (file_store.c,
 * layout_file): the mark "BRKI" with the capacity in the magic word, then
 * any prefix of the header. The next opener, with or without CREATE, lays
 * it out again for that capacity; a mark that names an impossible capacity
 * is nobody's layout and is refused as not a store. */
#define LAYING_OUT UINT64_C(0x494b524200000000)
static void a_half_laid_out_file_is_laid_out_again(void **state) {
    (void)state;
    /* Killed at each point of a reinitialisation: the mark alone; the mark
     * and the header cleared; the mark and half the fields. */
    static const uint64_t cleared[] = {0, 8, 64, 4096};
    for (size_t i = 0; i < sizeof(cleared) / sizeof(cleared[0]); i++) {
        small_store();
        put_u64(0, LAYING_OUT | 4);
        if (cleared[i] > 0) {
            char zeros[4096] = {0};
            put(path, 8, zeros, (size_t)cleared[i] - (cleared[i] > 8 ? 8 : 0));
        }
        breaker_store *st = NULL;
        char msg[256];
        breaker_store_config c;
        breaker_store_config_init(&c);
        c.flags = 0; /* no CREATE: the file is there */
        if (breaker_store_open(path, &c, &st, msg, sizeof(msg)) != BREAKER_OK)
            fail_msg("cleared %llu: %s", (unsigned long long)cleared[i], msg);
        int names = 0;
        assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
        assert_int_equal(names, 0); /* laid out anew */
        assert_int_equal(get_u32(H_CAPACITY), 4);
        trips_in(st, "again");
        breaker_store_close(st);
        assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_OK); /* and stays whole */
    }
    /* A creator killed after its mark: the rest of the file is zeros. */
    unlink(path);
    char zeros[SMALL_SIZE] = {0};
    write_file(path, zeros, sizeof(zeros), 0600);
    put_u64(0, LAYING_OUT | 4);
    char msg[256];
    assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)), BREAKER_OK);
    assert_int_equal(get_u32(H_CAPACITY), 4);
    /* Marks no layout of ours can have left: refused, never laid out. */
    static const uint64_t bad[] = {LAYING_OUT | 0, LAYING_OUT | 65537, LAYING_OUT | 1000};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(path, zeros, sizeof(zeros), 0600);
        put_u64(0, bad[i]);
        assert_int_equal(refused(path, BREAKER_STORE_CREATE, msg, sizeof(msg)),
                         BREAKER_EINCOMPATIBLE);
        if (strstr(msg, "not a breaker store (magic)") == NULL) fail_msg("message: %s", msg);
        assert_int_equal(get_u64(0), bad[i]); /* untouched */
    }
}

/* A block's state word must be one its limits allow: CLOSED with the ramp
 * flag but no ramp configured used to divide 0 by 0 (ramp_ns) on the first
 * call. */
static void a_ramp_flag_without_a_ramp_is_refused(void **state) {
    (void)state;
    small_store();
    uint64_t ctl_at = get_u64(entry_at(0, E_BLOCK_OFF)) + BLOCK_CTL;
    put_u64(ctl_at, get_u64(ctl_at) | 1u); /* alpha: CLOSED, ramping */
    expect_attach_refused("alpha", "ctl");
}

/* A file of an earlier boot is reinitialised: its names are gone. The boot
 * identifier sits after magic, version, header size and abi. */
static void a_file_from_an_earlier_boot_starts_over(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(3);
    breaker_destroy(attach(st, "old", &cfg));
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    char fake[8] = "00000000";
    assert_int_equal(pwrite(fd, fake, sizeof(fake), 24), (ssize_t)sizeof(fake));
    close(fd);
    st = open_store();
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 0);
    breaker_store_close(st);
}

/* Eight processes create the same file and the same name at once: one file,
 * one breaker (each process's one call is counted in it). */
/* A process that cannot read the boot id (here: no file descriptor left
 * for it) must refuse the file, never take it for an earlier boot's and lay
 * it out again under the processes using it. */
static void an_unreadable_boot_id_never_wipes_the_file(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(1);
    breaker *b = attach(st, "payments", &cfg);
    call_ok(b, BREAKER_FAILURE);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Exactly one descriptor free: the store file takes it. Fill them
         * all, then give one back (valgrind keeps some for itself, so the
         * lowest free number says nothing about how many are left). */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
        if (rl.rlim_cur > 256) rl.rlim_cur = 256;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
        int last = -1, n = 0;
        for (int fd; n < 4096 && (fd = open("/dev/null", O_RDONLY)) >= 0; n++)
            last = fd;
        if (last < 0 || n >= 4096) _exit(2);
        close(last);
        breaker_store *cs = NULL;
        char msg[256];
        int rc = breaker_store_open(path, NULL, &cs, msg, sizeof(msg));
        int ok = rc == BREAKER_EIO && strstr(msg, "boot") != NULL;
        /* The parent's handles, inherited: freed so memcheck sees no leak. */
        breaker_destroy(b);
        breaker_store_close(st);
        _exit(ok ? 0 : 1);
    }
    assert_int_equal(reap(pid), 0);
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN); /* still this boot's breaker */
    assert_int_equal(stats_of(b).failures, 1);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A file written on a machine of the other byte order is named as such,
 * not reinterpreted. */
static void a_file_of_the_other_byte_order_is_refused(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint64_t magic = 0;
    assert_int_equal(pread(fd, &magic, sizeof(magic), 0), (ssize_t)sizeof(magic));
    magic = __builtin_bswap64(magic);
    assert_int_equal(pwrite(fd, &magic, sizeof(magic), 0), (ssize_t)sizeof(magic));
    close(fd);
    char msg[256];
    assert_int_equal(refused(path, 0, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_non_null(strstr(msg, "other byte order"));
}

static void processes_creating_at_once_get_one_breaker(void **state) {
    (void)state;
    enum { N = 8 };
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            char c;
            close(go[1]);
            if (read(go[0], &c, 1) != 0) _exit(4); /* EOF: everyone starts */
            breaker_config cfg = consecutive_config(3);
            breaker_store *cs = NULL;
            breaker *b = child_attach("shared", &cfg, &cs);
            breaker_permit p;
            int ok = breaker_acquire(b, &p) == BREAKER_OK &&
                     breaker_complete(b, &p, BREAKER_SUCCESS) == BREAKER_OK;
            breaker_destroy(b);
            breaker_store_close(cs);
            _exit(ok ? 0 : 1);
        }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < N; i++)
        assert_int_equal(reap(pids[i]), 0);
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(3);
    breaker *b = attach(st, "shared", &cfg);
    breaker_stats s = stats_of(b);
    assert_int_equal(s.admitted, N);
    assert_int_equal(s.successes, N);
    int names = 0;
    assert_int_equal(breaker_store_foreach(st, count_name, &names), 0);
    assert_int_equal(names, 1);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* What the processes share besides the breaker: the dependency's view. */
/* Probes of one half-open are counted apart from another's: when a probe
 * fails, the half-open ends and the breaker reopens, and the other probes
 * of that half-open still out are history (their completions are STALE);
 * after the wait the next half-open admits its own. The limit is per
 * half-open: on a machine slow enough (valgrind, eight processes on two
 * cores) a stale probe can still be at the dependency when the next
 * half-open's start, so the test counts in flight per generation. */
#define GENERATIONS 8192

struct shared_counts {
    _Atomic int probes_in_flight[GENERATIONS]; /* by the probe's generation */
    _Atomic int max_probes_in_flight;
    _Atomic uint64_t probes_unplaced; /* admitted while the breaker moved on */
    _Atomic uint64_t events;          /* transitions reported, in all processes */
    _Atomic uint64_t settled;         /* completions that answered OK or STALE */
};

static void count_event(void *ctx, breaker *b, const breaker_event *ev) {
    (void)b;
    (void)ev;
    atomic_fetch_add(&((struct shared_counts *)ctx)->events, 1);
}

static void hammer(struct shared_counts *sh, unsigned seed, uint64_t until,
                   breaker_store *inherited) {
    breaker_store_close(inherited); /* the parent's: not used here */
    breaker_config cfg = consecutive_config(3);
    cfg.open_ns = 2 * MS;
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    /* Long enough that no probe overruns it, even under valgrind with eight
     * processes on two cores: a probe past its deadline is failed and its
     * slot freed (a hung probe must not wedge the breaker), and the
     * dependency would then rightly see one more probe than the limit. */
    cfg.probe_timeout_ns = 5 * SEC;
    cfg.on_event = count_event;
    cfg.event_ctx = sh;
    breaker_store *cs = NULL;
    breaker *b = child_attach("hammered", &cfg, &cs);
    uint64_t x = seed * 2654435761u + 1;
    while (monotonic_ns() < until) {
        breaker_permit p;
        uint64_t before = breaker_generation(b);
        if (breaker_acquire(b, &p) != BREAKER_OK) continue;
        bool probe = breaker_permit_is_probe(&p);
        if (probe) {
            /* The probe's generation: the half-open the breaker is in right
             * after the admission, when that is the one it was in before or
             * the one the admission opened. Otherwise the breaker moved on
             * meanwhile and the probe is already history: not counted. */
            uint64_t gen = breaker_generation(b);
            bool placed = (gen == before || gen == before + 1) &&
                          breaker_get_state(b) == BREAKER_HALF_OPEN && breaker_generation(b) == gen;
            _Atomic int *in_flight = &sh->probes_in_flight[gen % GENERATIONS];
            if (placed) {
                int now = atomic_fetch_add(in_flight, 1) + 1;
                int max = atomic_load(&sh->max_probes_in_flight);
                while (now > max &&
                       !atomic_compare_exchange_weak(&sh->max_probes_in_flight, &max, now)) {
                }
            } else {
                atomic_fetch_add(&sh->probes_unplaced, 1);
            }
            for (volatile int spin = 0; spin < 2000; spin++) {
            }
            /* Out of flight before the completion: once it completes, the
             * slot may go to another process's probe. */
            if (placed) atomic_fetch_sub(in_flight, 1);
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        enum breaker_outcome o = (x % 100) < 30 ? BREAKER_FAILURE : BREAKER_SUCCESS;
        int rc = breaker_complete(b, &p, o);
        if (rc == BREAKER_OK || rc == BREAKER_STALE) atomic_fetch_add(&sh->settled, 1);
    }
    breaker_destroy(b);
    breaker_store_close(cs);
    _exit(0);
}

/* Eight processes on one breaker: never more probes in flight than the limit
 * across all of them, every transition reported exactly once (in the process
 * that made it), and the statistics identity at quiescence. */
static void eight_processes_share_one_probe_budget(void **state) {
    (void)state;
    enum { N = 8 };
    struct shared_counts *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(sh != MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    breaker_store *st = open_store();
    uint64_t until = monotonic_ns() + 1500 * MS;
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) hammer(sh, (unsigned)i + 1, until, st);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(reap(pids[i]), 0);
    breaker *b = attach(st, "hammered", NULL);
    breaker_stats s = stats_of(b);
    print_message("8 processes: %llu admitted, %llu transitions (%llu reported), max %d probes in "
                  "flight in one half-open, %llu probes (%llu admitted as the breaker moved on)\n",
                  (unsigned long long)s.admitted, (unsigned long long)s.transitions,
                  (unsigned long long)atomic_load(&sh->events),
                  atomic_load(&sh->max_probes_in_flight), (unsigned long long)s.probes_admitted,
                  (unsigned long long)atomic_load(&sh->probes_unplaced));
    assert_true(atomic_load(&sh->max_probes_in_flight) <= 2);
    assert_true(s.transitions < GENERATIONS); /* no generation's counter reused */
    /* How many probes could be placed in their half-open depends on the
     * scheduler (a process preempted between its admission and its look at
     * the generation finds the breaker moved on: 15 of 147 under load 15), so
     * it is printed, not asserted. That the budget is reached, and never
     * passed, by processes that all want a probe at once is
     * eight_processes_admit_exactly_the_probe_budget, without timing. */
    assert_true(s.transitions > 10); /* it went round the state machine */
    assert_true(s.probes_admitted > 0);
    assert_int_equal(atomic_load(&sh->events), s.transitions);
    assert_int_equal(s.admitted, s.successes + s.failures + s.ignored + s.stale);
    assert_int_equal(s.admitted, atomic_load(&sh->settled));
    assert_int_equal(s.duplicates, 0);
    breaker_destroy(b);
    breaker_store_close(st);
    munmap(sh, sizeof(*sh));
}

/* One half-open, eight processes that each ask for a probe and hold what
 * they get until every one has asked: exactly half_open_max_probes of them
 * are admitted, the others refused as half-open, whatever the order and the
 * timing (no probe completes, none can time out, nothing else moves the
 * breaker). Then the two probes succeed and close it. Three rounds. */
static void eight_processes_admit_exactly_the_probe_budget(void **state) {
    (void)state;
    enum { N = 8, ROUNDS = 3 };
    breaker_config cfg = consecutive_config(1);
    cfg.open_ns = 1 * MS;
    cfg.half_open_max_probes = 2;
    cfg.half_open_successes = 2;
    cfg.probe_timeout_ns = 3600 * SEC; /* a preempted probe never expires */
    breaker_store *st = open_store();
    breaker *b = attach(st, "budget", &cfg);
    for (int round = 0; round < ROUNDS; round++) {
        call_ok(b, BREAKER_FAILURE);
        assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
        while (breaker_retry_after_ns(b) != 0) { /* the open wait, by the breaker's clock */
        }
        int answers[2], release[2];
        assert_int_equal(pipe(answers), 0);
        assert_int_equal(pipe(release), 0);
        pid_t pids[N];
        for (int i = 0; i < N; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] != 0) continue;
            close(answers[0]);
            close(release[1]);
            breaker_store *cs = NULL;
            breaker *c = child_attach("budget", &cfg, &cs);
            breaker_permit p;
            int rc = breaker_acquire(c, &p);
            char answer = rc == BREAKER_OK && breaker_permit_is_probe(&p) ? 'P'
                          : rc == BREAKER_REJECTED_HALF_OPEN              ? 'R'
                                                                          : '?';
            if (write(answers[1], &answer, 1) != 1) _exit(4);
            char go;
            if (read(release[0], &go, 1) != 1) _exit(5);
            if (answer == 'P' && breaker_complete(c, &p, BREAKER_SUCCESS) != BREAKER_OK) _exit(6);
            breaker_destroy(c);
            breaker_store_close(cs);
            _exit(0);
        }
        close(answers[1]);
        close(release[0]);
        int probes = 0, refused = 0;
        for (int i = 0; i < N; i++) {
            char answer;
            assert_int_equal(read(answers[0], &answer, 1), 1);
            probes += answer == 'P';
            refused += answer == 'R';
        }
        assert_int_equal(probes, 2);
        assert_int_equal(refused, N - 2);
        char go[N];
        memset(go, 'g', sizeof(go));
        assert_int_equal(write(release[1], go, sizeof(go)), (ssize_t)sizeof(go));
        for (int i = 0; i < N; i++)
            assert_int_equal(reap(pids[i]), 0);
        close(answers[0]);
        close(release[1]);
        assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    }
    breaker_destroy(b);
    breaker_store_close(st);
}

/* A process holding the probe is killed with SIGKILL: the probe fails at
 * its deadline, and the next probe goes to another process once the open
 * wait has run from there. On a clock in shared memory that the test moves
 * (every process's breaker reads it), so the times are the library's
 * decisions, exact to the 1 ms step, not the scheduler's: with the real
 * clock the test allowed 50 ms of slack, which a loaded machine can take. */
static void a_killed_probe_is_reclaimed_at_its_deadline(void **state) {
    (void)state;
    struct fake_clock *clock =
        mmap(NULL, sizeof(*clock), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(clock != MAP_FAILED);
    atomic_store(&clock->now, 1000 * SEC);
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(1);
    cfg.open_ns = 10 * MS;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 200 * MS;
    cfg.clock = fake_clock_read;
    cfg.clock_ctx = clock;
    breaker *b = attach(st, "flaky", &cfg);
    call_ok(b, BREAKER_FAILURE);
    fake_clock_advance(clock, cfg.open_ns);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        breaker_store *cs = NULL;
        breaker *c = child_attach("flaky", &cfg, &cs);
        breaker_permit p;
        char ok = breaker_acquire(c, &p) == BREAKER_OK && breaker_permit_is_probe(&p);
        if (write(ready[1], &ok, 1) != 1) _exit(4);
        for (;;)
            pause(); /* hangs holding the probe */
    }
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_true(ok);
    uint64_t admitted = fake_clock_read(clock);
    assert_int_equal(kill(pid, SIGKILL), 0);
    assert_int_equal(reap(pid), 128 + SIGKILL);
    /* The dead process's probe holds the half-open until its deadline. */
    uint64_t deadline = admitted + cfg.probe_timeout_ns;
    breaker_permit p;
    atomic_store(&clock->now, deadline - 1);
    assert_int_equal(breaker_acquire(b, &p), BREAKER_REJECTED_HALF_OPEN);
    /* Then, 1 ms at a time: it reopens at the deadline, and the wait (10 ms,
     * doubled for the failed recovery) runs from there. */
    uint64_t reopened = 0, t;
    for (t = deadline;; t += MS) {
        assert_true(t < deadline + 10 * SEC);
        atomic_store(&clock->now, t);
        int rc = breaker_acquire(b, &p);
        if (rc == BREAKER_OK) break;
        if (rc == BREAKER_REJECTED_OPEN && reopened == 0) reopened = t;
    }
    assert_int_equal(reopened, deadline);
    assert_int_equal(t, deadline + 2 * cfg.open_ns);
    assert_true(breaker_permit_is_probe(&p));
    assert_int_equal(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    assert_int_equal(breaker_get_state(b), BREAKER_CLOSED);
    breaker_destroy(b);
    breaker_store_close(st);
    munmap(clock, sizeof(*clock));
}

/* ---- A signal while waiting for the file lock -------------------------------- */

static volatile sig_atomic_t alarms;
static void count_alarm(int sig) {
    (void)sig;
    alarms++;
}

/* A child takes the file's lock and holds it for 300 ms; then `op` runs
 * while a timer without SA_RESTART interrupts it every 5 ms. */
enum lock_op { OP_OPEN, OP_ATTACH, OP_RECONFIGURE };

static void under_signals_while_locked(enum lock_op op, breaker_store *st, breaker *b) {
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(2);
        if (write(ready[1], "l", 1) != 1) _exit(3);
        struct timespec hold = {.tv_sec = 0, .tv_nsec = 300 * 1000000L};
        nanosleep(&hold, NULL);
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = count_alarm; /* no SA_RESTART: a blocked call sees EINTR */
    assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
    alarms = 0;
    struct itimerval every = {.it_interval = {0, 5000}, .it_value = {0, 5000}}, off = {0};
    assert_int_equal(setitimer(ITIMER_REAL, &every, NULL), 0);
    char msg[256] = "";
    int rc;
    breaker *other = NULL;
    breaker_store *st2 = NULL;
    breaker_store_config sc = quiet_store_config();
    breaker_config cfg = consecutive_config(3);
    switch (op) {
    case OP_OPEN:
        rc = breaker_store_open(path, &sc, &st2, msg, sizeof(msg));
        break;
    case OP_ATTACH:
        rc = breaker_store_attach(st, "late", &cfg, &other, msg, sizeof(msg));
        break;
    case OP_RECONFIGURE:
    default:
        cfg.failure_threshold = 7;
        rc = breaker_reconfigure(b, &cfg, 0, msg, sizeof(msg));
        break;
    }
    assert_int_equal(setitimer(ITIMER_REAL, &off, NULL), 0);
    /* A signal of the timer may still be on its way (valgrind delivers
     * them late): the handler stays, with SA_RESTART, never the default
     * action, which would end the test process. */
    sa.sa_flags = SA_RESTART;
    assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
    assert_int_equal(reap(pid), 0);
    close(ready[0]);
    close(ready[1]);
    if (rc != BREAKER_OK) fail_msg("op %d under signals: %s (%s)", op, breaker_strerror(rc), msg);
    assert_true(alarms > 0);
    breaker_destroy(other);
    if (st2 != NULL) breaker_store_close(st2);
}

static void a_signal_while_waiting_for_the_file_lock_is_no_error(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(3);
    breaker *b = attach(st, "api", &cfg);
    under_signals_while_locked(OP_OPEN, st, b);
    under_signals_while_locked(OP_ATTACH, st, b);
    under_signals_while_locked(OP_RECONFIGURE, st, b);
    breaker_config now;
    breaker_get_config(b, &now);
    assert_int_equal(now.failure_threshold, 7);
    breaker_destroy(b);
    breaker_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_breaker_per_name_across_handles_and_processes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_first_creators_limits_win, setup, teardown),
        cmocka_unit_test_setup_teardown(the_file_is_checked_before_it_is_trusted, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_from_an_earlier_boot_starts_over, setup, teardown),
        cmocka_unit_test_setup_teardown(header_offsets_are_checked_without_overflow, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(an_earlier_boots_file_too_small_for_its_capacity_is_refused,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(an_entrys_block_outside_the_data_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_dead_creators_damaged_entry_is_not_reused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(data_used_is_checked_again_before_a_block_is_placed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(damaged_names_are_not_listed, setup, teardown),
        cmocka_unit_test_setup_teardown(a_ramp_flag_without_a_ramp_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_half_laid_out_file_is_laid_out_again, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unreadable_boot_id_never_wipes_the_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_file_of_the_other_byte_order_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(processes_creating_at_once_get_one_breaker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(eight_processes_share_one_probe_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(eight_processes_admit_exactly_the_probe_budget, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_signal_while_waiting_for_the_file_lock_is_no_error, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_killed_probe_is_reclaimed_at_its_deadline, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
