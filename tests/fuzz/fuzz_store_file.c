/* SPDX-License-Identifier: MIT */
/*
 * fuzz_store_file.c - a store file (include/breaker/store.h) damaged in any
 * way, opened and used.
 *
 * Once per process the harness lays out a small valid store (capacity 4,
 * 32 KiB) in a private temporary directory and attaches three breakers of
 * different policies to it (consecutive; count window with slow calls; time
 * window with two probes), then trips one and leaves another half-open, so
 * that the file holds a header, three directory entries and three used
 * blocks. Its bytes are the template every input patches.
 *
 * Input: a flags byte, then (flag 1) a 16-bit little-endian length the file
 * is cut to (or grown to, with zeros), then patch records to the end: a
 * 16-bit little-endian offset into the template (modulo its size: the header
 * at 0, the directory at 4096, the blocks from 8192), a length byte and that
 * many bytes, written there (clipped at the end). Flags 2 and 4 choose the
 * configuration of the new name attached last; flag 8 has every handle also
 * forced open, forced closed, reset (plainly, then with who and why, which
 * the file records) and used again. The template's beta-count holds such a
 * record (a reset, with who and why), in the last words of its entry.
 *
 * Per input: the patched bytes are written to a new file (mode 0600), which
 * is opened without BREAKER_STORE_CREATE; its names are listed; each listed
 * name and each of the template's names is attached with NULL and with a
 * configuration, and every handle makes a few calls, reads its state and
 * stats and is destroyed; a new name is attached and used; the store is
 * closed.
 *
 * What must hold (the store's promise: "a truncated or garbage file refused
 * without a crash"):
 * - nothing crashes, reads or writes out of bounds, or is undefined
 *   behaviour (under ASan + UBSan);
 * - open answers OK or EINCOMPATIBLE (NOT_FOUND for an empty file or one
 *   whose header is all zeros: a creator's that died before writing it), attach
 *   OK, CONFIG_DIFFERS (with a handle), EINCOMPATIBLE or ENOSPC; every error
 *   comes with a message, NUL-terminated in its buffer;
 * - every name listed is a valid name (damaged entries are skipped);
 * - breaker_store_last_control() answers OK or NOT_FOUND, with a known
 *   action and NUL-terminated printable who and why (a damaged record
 *   reads as none);
 * - an attached handle answers every call with a status of the manual.
 */
#define _GNU_SOURCE
#include "fuzz_util.h"

#include <breaker.h>
#include <breaker/registry.h>
#include <breaker/store.h>

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMPLATE_SIZE 32768u
#define MAX_LISTED    8
#define MSG_LEN       256
#define NEW_NAME      "fresh.name"

static const char *const template_names[] = {"alpha", "beta-count", "gamma_time"};

static char dir[64];
static char path[128];
static uint8_t *template_bytes;
static size_t template_len;
static uint64_t fake_now = UINT64_C(1000000000);

static uint64_t fake_clock(void *ctx) {
    (void)ctx;
    return fake_now;
}

static void cleanup(void) {
    unlink(path);
    rmdir(dir);
}

/* The configurations: `which` 0..3. */
static breaker_config config_of(unsigned which) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.clock = fake_clock;
    cfg.seed = 7;
    cfg.open_jitter = 0;
    switch (which & 3u) {
    case 0:
        cfg.trip = BREAKER_TRIP_CONSECUTIVE;
        cfg.failure_threshold = 2;
        break;
    case 1:
        cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
        cfg.window_size = 8;
        cfg.min_calls = 2;
        cfg.slow_call_ns = 50 * UINT64_C(1000000);
        cfg.slow_call_rate = 0.5;
        break;
    case 2:
        cfg.trip = BREAKER_TRIP_TIME_WINDOW;
        cfg.window_ns = UINT64_C(1000000000);
        cfg.window_buckets = 4;
        cfg.min_calls = 2;
        cfg.half_open_max_probes = 2;
        break;
    default:
        cfg.trip = BREAKER_TRIP_COUNT_WINDOW;
        cfg.window_size = 100;
        cfg.half_open_max_probes = 5;
        cfg.ramp_ns = UINT64_C(1000000000);
        break;
    }
    return cfg;
}

static void check_msg(int rc, const char *msg, const char *what) {
    FUZZ_CHECK(memchr(msg, '\0', MSG_LEN) != NULL, "%s: message not NUL-terminated", what);
    if (rc != BREAKER_OK && rc != BREAKER_CONFIG_DIFFERS)
        FUZZ_CHECK(msg[0] != '\0', "%s: %s without a message", what, breaker_status_name(rc));
}

/* A few calls on an attached handle, each answer checked against the manual;
 * with `manual`, forced open (then refusing), reset and used again. */
static void use(breaker *b, unsigned outcomes, bool manual) {
    breaker_permit p[3];
    bool held[3] = {false, false, false};
    for (unsigned i = 0; i < 3; i++) {
        fake_now += UINT64_C(30000000);
        int rc = breaker_acquire(b, &p[i]);
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_REJECTED_OPEN ||
                       rc == BREAKER_REJECTED_HALF_OPEN || rc == BREAKER_REJECTED_RAMP,
                   "acquire: %s", breaker_status_name(rc));
        held[i] = rc == BREAKER_OK;
    }
    for (unsigned i = 0; i < 3; i++) {
        if (!held[i]) continue;
        fake_now += UINT64_C(60000000);
        int rc = breaker_complete(b, &p[i], (enum breaker_outcome)((outcomes >> (2 * i)) & 3u));
        FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_STALE || rc == BREAKER_ALREADY_SETTLED,
                   "complete: %s", breaker_status_name(rc));
    }
    enum breaker_state s = breaker_get_state(b);
    FUZZ_CHECK((unsigned)s < BREAKER_STATE_COUNT, "state %u", (unsigned)s);
    (void)breaker_retry_after_ns(b);
    (void)breaker_generation(b);
    breaker_stats stats;
    FUZZ_CHECK(breaker_stats_get(b, &stats) == BREAKER_OK, "stats");
    breaker_latency lat;
    int rc = breaker_latency_get(b, &lat);
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_NOT_FOUND, "latency: %s", breaker_status_name(rc));
    breaker_config got;
    breaker_get_config(b, &got);
    FUZZ_CHECK(breaker_config_validate(&got, NULL, 0) == BREAKER_OK, "stored config invalid");
    if (!manual) return;
    FUZZ_CHECK(breaker_force_open(b) == BREAKER_OK, "force_open");
    breaker_permit p0;
    rc = breaker_acquire(b, &p0);
    if (breaker_shadow(b)) {
        /* Shadow mode is in the block: a file may carry it (a damaged one
         * too). Forced open admits, counting the refusal it spared. */
        FUZZ_CHECK(rc == BREAKER_OK && breaker_permit_would_reject(&p0) == BREAKER_REFUSAL_FORCED,
                   "forced open in shadow mode: %s, spared %s", breaker_status_name(rc),
                   rc == BREAKER_OK ? breaker_refusal_name(breaker_permit_would_reject(&p0)) : "-");
        (void)breaker_complete(b, &p0, BREAKER_SUCCESS);
    } else {
        FUZZ_CHECK(rc == BREAKER_REJECTED_OPEN, "forced open: %s", breaker_status_name(rc));
    }
    FUZZ_CHECK(breaker_force_closed(b) == BREAKER_OK, "force_closed");
    FUZZ_CHECK(breaker_reset(b) == BREAKER_OK, "reset");
    static const enum breaker_control_action actions[] = {
        BREAKER_CONTROL_FORCE_OPEN, BREAKER_CONTROL_FORCE_CLOSED, BREAKER_CONTROL_RESET};
    for (unsigned i = 0; i < 3; i++) {
        breaker_control c;
        breaker_control_init(&c);
        c.action = actions[i];
        c.who = "fuzz@host";
        c.why = "a damaged file";
        FUZZ_CHECK(breaker_control_apply(b, &c, NULL, 0) == BREAKER_OK, "control_apply");
    }
    use(b, outcomes >> 1, false);
}

static bool printable_within(const char *text, size_t size) {
    const char *nul = memchr(text, '\0', size);
    if (nul == NULL) return false;
    for (const char *p = text; p < nul; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return false;
    return true;
}

/* The last control of `name`: whatever the file holds, a sane answer. */
static void check_last_control(breaker_store *st, const char *name) {
    breaker_store_control c;
    char msg[MSG_LEN];
    memset(msg, 'x', sizeof(msg));
    int rc = breaker_store_last_control(st, name, &c, msg, sizeof(msg));
    check_msg(rc, msg, name);
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_NOT_FOUND, "last_control %s: %s", name,
               breaker_status_name(rc));
    FUZZ_CHECK((unsigned)c.action <= BREAKER_STORE_CONTROL_OPEN_FOR, "last_control action %u",
               (unsigned)c.action);
    FUZZ_CHECK(printable_within(c.who, sizeof(c.who)) && printable_within(c.why, sizeof(c.why)) &&
                   printable_within(c.action_name, sizeof(c.action_name)),
               "last_control text");
    FUZZ_CHECK(c.action != BREAKER_STORE_CONTROL_NONE ||
                   (c.who[0] == '\0' && c.why[0] == '\0' && c.at_ns == 0 && c.until_ns == 0 &&
                    c.generation == 0),
               "no record, with fields");
}

/* After use()'s controls on `b` (the last a reset by fuzz@host, and no
 * control since): the record is that reset, whatever the file held before
 * (an older or damaged record is replaced; a later one cannot exist, as no
 * other process runs). So a writer that never writes cannot pass. */
static void check_own_control(breaker_store *st, const char *name, breaker *b) {
    breaker_store_control c;
    int rc = breaker_store_last_control(st, name, &c, NULL, 0);
    FUZZ_CHECK(rc == BREAKER_OK, "last_control %s after controls: %s", name,
               breaker_status_name(rc));
    breaker_stats s;
    breaker_stats_get(b, &s);
    FUZZ_CHECK(c.action == BREAKER_STORE_CONTROL_RESET && strcmp(c.who, "fuzz@host") == 0 &&
                   strcmp(c.why, "a damaged file") == 0 && c.until_ns == 0 && c.at_ns != 0 &&
                   c.generation >= 1 && c.generation <= s.generation,
               "last_control %s after controls: %s by '%s' at generation %llu (breaker at %llu)",
               name, c.action_name, c.who, (unsigned long long)c.generation,
               (unsigned long long)s.generation);
}

static bool manual_ops; /* the input's flag 8 */

static void attach_and_use(breaker_store *st, const char *name, const breaker_config *cfg,
                           unsigned outcomes) {
    char msg[MSG_LEN];
    memset(msg, 'x', sizeof(msg));
    breaker *b = NULL;
    int rc = breaker_store_attach(st, name, cfg, &b, msg, sizeof(msg));
    check_msg(rc, msg, name);
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS || rc == BREAKER_EINCOMPATIBLE ||
                   rc == BREAKER_ENOSPC,
               "attach %s: %s: %s", name, breaker_status_name(rc), msg);
    if (rc == BREAKER_OK || rc == BREAKER_CONFIG_DIFFERS) {
        FUZZ_CHECK(b != NULL, "attach %s: %s without a handle", name, breaker_status_name(rc));
        use(b, outcomes, manual_ops);
        check_last_control(st, name);
        if (manual_ops) check_own_control(st, name, b);
        breaker_destroy(b);
    } else {
        FUZZ_CHECK(b == NULL, "attach %s: %s with a handle", name, breaker_status_name(rc));
    }
}

struct listed {
    char names[MAX_LISTED][BREAKER_NAME_MAX + 1];
    unsigned n;
};

static int collect(void *ctx, const char *name) {
    struct listed *l = ctx;
    size_t n = strnlen(name, BREAKER_NAME_MAX + 1);
    FUZZ_CHECK(n <= BREAKER_NAME_MAX, "listed name of %zu bytes", n);
    FUZZ_CHECK(breaker_name_validate(name, NULL, 0) == BREAKER_OK, "listed name invalid");
    if (l->n < MAX_LISTED) memcpy(l->names[l->n++], name, n + 1);
    return 0;
}

static void write_file(const uint8_t *data, size_t len) {
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0, "create %s", path);
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        FUZZ_CHECK(w > 0, "write %s", path);
        done += (size_t)w;
    }
    close(fd);
}

/* The template: a store with three used breakers, one of them open and one
 * half-open. */
static void make_template(void) {
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(dir, sizeof(dir), "%s/breaker_fuzz_XXXXXX", base);
    FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof(path), "%s/store", dir);
    atexit(cleanup);
    breaker_store_config sc;
    breaker_store_config_init(&sc);
    sc.capacity = 4;
    sc.size = TEMPLATE_SIZE;
    breaker_store *st = NULL;
    char msg[MSG_LEN];
    int rc = breaker_store_open(path, &sc, &st, msg, sizeof(msg));
    FUZZ_CHECK(rc == BREAKER_OK, "template open: %s", msg);
    for (unsigned i = 0; i < 3; i++) {
        breaker_config cfg = config_of(i);
        breaker *b = NULL;
        rc = breaker_store_attach(st, template_names[i], &cfg, &b, msg, sizeof(msg));
        FUZZ_CHECK(rc == BREAKER_OK, "template attach: %s", msg);
        /* alpha trips (two failures); gamma trips and goes half-open. */
        for (unsigned k = 0; k < 4; k++) {
            breaker_permit p;
            fake_now += UINT64_C(10000000);
            if (breaker_acquire(b, &p) != BREAKER_OK) continue;
            fake_now += UINT64_C(60000000);
            (void)breaker_complete(b, &p, i == 1 && k == 0 ? BREAKER_SUCCESS : BREAKER_FAILURE);
        }
        if (i == 2) {
            fake_now += UINT64_C(120) * UINT64_C(1000000000);
            breaker_permit p;
            int probe = breaker_acquire(b, &p); /* a probe, left in flight */
            FUZZ_CHECK(probe == BREAKER_OK, "template probe: %s", breaker_status_name(probe));
        }
        if (i == 1) {
            /* A last control recorded in beta-count's entry. */
            breaker_control c;
            breaker_control_init(&c);
            c.action = BREAKER_CONTROL_RESET;
            c.who = "ops@template";
            c.why = "a record to damage";
            FUZZ_CHECK(breaker_control_apply(b, &c, NULL, 0) == BREAKER_OK, "template control");
        }
        breaker_destroy(b);
    }
    breaker_store_close(st);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "template reopen");
    template_len = TEMPLATE_SIZE;
    template_bytes = malloc(template_len);
    FUZZ_CHECK(template_bytes != NULL, "malloc");
    FUZZ_CHECK(read(fd, template_bytes, template_len) == (ssize_t)template_len, "template read");
    close(fd);
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (template_bytes == NULL) make_template();
    struct fuzz_reader r = {data, size, 0};
    unsigned flags = fuzz_byte(&r);
    manual_ops = (flags & 8u) != 0;
    size_t len = template_len;
    if (flags & 1u) {
        len = fuzz_byte(&r);
        len |= (size_t)fuzz_byte(&r) << 8;
    }
    uint8_t *file = calloc(1, len > template_len ? len : template_len);
    FUZZ_CHECK(file != NULL, "malloc");
    memcpy(file, template_bytes, template_len);
    while (fuzz_more(&r)) {
        size_t off = fuzz_byte(&r);
        off |= (size_t)fuzz_byte(&r) << 8;
        off %= template_len;
        size_t n = fuzz_byte(&r);
        for (size_t i = 0; i < n; i++) {
            uint8_t byte = fuzz_byte(&r);
            if (off + i < template_len) file[off + i] = byte;
        }
    }
    write_file(file, len);
    /* A file whose header is all zeros is one a creator sized and died
     * before writing: NOT_FOUND without CREATE, like an empty one. */
    uint32_t header_size;
    memcpy(&header_size, template_bytes + 12, sizeof(header_size));
    bool unwritten = len == 0;
    if (len >= header_size) {
        unwritten = true;
        for (size_t i = 0; i < header_size; i++)
            unwritten = unwritten && file[i] == 0;
    }
    free(file);

    breaker_store_config sc;
    breaker_store_config_init(&sc);
    sc.flags = 0; /* never create: the damaged file is what is opened */
    breaker_store *st = NULL;
    char msg[MSG_LEN];
    memset(msg, 'x', sizeof(msg));
    int rc = breaker_store_open(path, &sc, &st, msg, sizeof(msg));
    check_msg(rc, msg, "open");
    FUZZ_CHECK(rc == BREAKER_OK || rc == BREAKER_EINCOMPATIBLE ||
                   (unwritten && rc == BREAKER_NOT_FOUND),
               "open: %s: %s", breaker_status_name(rc), msg);
    if (rc != BREAKER_OK) {
        FUZZ_CHECK(st == NULL, "open failed with a store");
        unlink(path);
        return 0;
    }
    struct listed l = {.n = 0};
    FUZZ_CHECK(breaker_store_foreach(st, collect, &l) == 0, "foreach");
    for (unsigned i = 0; i < l.n; i++)
        check_last_control(st, l.names[i]); /* before any handle writes one */
    for (unsigned i = 0; i < l.n; i++) {
        breaker_config cfg = config_of(i);
        attach_and_use(st, l.names[i], NULL, i * 7u);
        attach_and_use(st, l.names[i], &cfg, i * 5u + 1u);
    }
    for (unsigned i = 0; i < 3; i++) {
        breaker_config cfg = config_of(i + 1u);
        attach_and_use(st, template_names[i], NULL, 0x15u);
        attach_and_use(st, template_names[i], &cfg, 0x2au);
    }
    breaker_config cfg = config_of(flags >> 1);
    attach_and_use(st, NEW_NAME, &cfg, 0x24u);
    attach_and_use(st, NEW_NAME, NULL, 0x01u);
    breaker_store_close(st);
    unlink(path);
    return 0;
}
