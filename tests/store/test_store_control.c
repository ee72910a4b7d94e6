/* SPDX-License-Identifier: MIT */
/*
 * test_store_control.c - the store file's record of each breaker's last
 * operator control (breaker_store_last_control()), across real processes
 * (fork): a child's control read exactly by its parent, what is and is not
 * recorded, a record damaged by hand read as none (and mended by the next
 * control), two writers racing a reader that must never see the who of one
 * control with the why of another (processes, then threads, for
 * ThreadSanitizer), and a file of the layout before the record refused.
 */
#define _GNU_SOURCE
#include "breaker_control.h"
#include "store_fixture.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `action` on `b` with `who` and `why`. @return breaker_control_apply()'s. */
static int apply(breaker *b, enum breaker_control_action action, uint64_t for_ns, const char *who,
                 const char *why) {
    return control_apply(b, action, for_ns, who, why, NULL, 0);
}

/* In a forked child: `action` on `name` with `who` and `why`, through this
 * process's own store; _exit(0), or 4 if the control was refused. */
static void child_control(const char *name, enum breaker_control_action action, uint64_t for_ns,
                          const char *who, const char *why) {
    breaker_store *cs = NULL;
    breaker_config cfg = consecutive_config(2);
    breaker *c = child_attach(name, &cfg, &cs);
    int rc = apply(c, action, for_ns, who, why);
    breaker_destroy(c);
    breaker_store_close(cs);
    _exit(rc == BREAKER_OK ? 0 : 4);
}

static void in_child(const char *name, enum breaker_control_action action, uint64_t for_ns,
                     const char *who, const char *why) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) child_control(name, action, for_ns, who, why);
    assert_int_equal(reap(pid), 0);
}

static breaker_store_control last(breaker_store *st, const char *name) {
    breaker_store_control c;
    char msg[256] = "";
    int rc = breaker_store_last_control(st, name, &c, msg, sizeof(msg));
    if (rc != BREAKER_OK) fail_msg("last_control %s: %s (%s)", name, breaker_strerror(rc), msg);
    return c;
}

static void a_childs_control_is_read_exactly_by_the_parent(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    breaker *b = attach(st, "payments", &cfg);
    /* Nothing recorded yet; a plain control records nothing either. */
    breaker_store_control c = last(st, "payments");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_NONE);
    assert_string_equal(c.action_name, "none");
    assert_int_equal(breaker_force_open(b), BREAKER_OK);
    assert_int_equal(last(st, "payments").action, BREAKER_STORE_CONTROL_NONE);
    assert_int_equal(breaker_reset(b), BREAKER_OK);

    uint64_t before = realtime_ns();
    in_child("payments", BREAKER_CONTROL_FORCE_OPEN, 0, "alice@web1",
             "payment provider maintenance");
    uint64_t after = realtime_ns();
    assert_int_equal(breaker_get_state(b), BREAKER_FORCED_OPEN);
    c = last(st, "payments");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_FORCED_OPEN);
    assert_string_equal(c.action_name, "forced_open");
    assert_string_equal(c.who, "alice@web1");
    assert_string_equal(c.why, "payment provider maintenance");
    assert_int_equal(c.generation, breaker_generation(b));
    assert_in_range(c.at_ns, before, after);
    assert_int_equal(c.until_ns, 0);
    /* The bytes after each NUL are zero. */
    for (size_t i = strlen(c.why); i < sizeof(c.why); i++)
        assert_int_equal(c.why[i], 0);

    /* Already forced open: no transition, the record stands. */
    in_child("payments", BREAKER_CONTROL_FORCE_OPEN, 0, "bob@web2", "again");
    assert_string_equal(last(st, "payments").who, "alice@web1");

    /* A timed one: its end is its time plus its duration, exactly. */
    uint64_t hour = UINT64_C(3600) * 1000000000u;
    in_child("payments", BREAKER_CONTROL_OPEN_FOR, hour, "bob@web2", "");
    c = last(st, "payments");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_OPEN_FOR);
    assert_string_equal(c.action_name, "open_for");
    assert_string_equal(c.who, "bob@web2");
    assert_string_equal(c.why, "");
    assert_int_equal(c.until_ns - c.at_ns, hour);
    assert_int_equal(c.generation, breaker_generation(b));
    in_child("payments", BREAKER_CONTROL_FORCE_CLOSED, 0, NULL, NULL);
    c = last(st, "payments");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_FORCED_CLOSED);
    assert_int_equal(c.until_ns, 0);
    assert_string_equal(c.who, "");
    in_child("payments", BREAKER_CONTROL_RESET, 0, "carol", "done");
    c = last(st, "payments");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_RESET);
    assert_string_equal(c.action_name, "reset");
    assert_int_equal(c.generation, breaker_generation(b));

    /* No such name; not a name. */
    char msg[256] = "";
    assert_int_equal(breaker_store_last_control(st, "nosuch", &c, msg, sizeof(msg)),
                     BREAKER_NOT_FOUND);
    assert_non_null(strstr(msg, "nosuch"));
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_NONE);
    assert_int_equal(breaker_store_last_control(st, "", &c, NULL, 0), BREAKER_EINVAL);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* ---- A record damaged by hand -----------------------------------------------------
 * The record is the last words of a directory entry (file_store.c, struct
 * store_entry): the seq, then action (u32), pad, at, until, generation (u64
 * each), who[72], why[208]. */
enum {
    H_ENTRY_SIZE = 76,
    H_ENTRIES_OFF = 80,
    REC_SIZE = 312,
    SEQ_FROM_END = REC_SIZE + 8,
    R_ACTION = 0,
    R_UNTIL = 16,
    R_GENERATION = 24,
    R_WHO = 32,
    R_WHY = 104,
};

/* The offset of entry 0's record field `field` (SEQ: -8). */
static off_t record_at(int field) {
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    uint32_t entry_size = 0;
    uint64_t entries_off = 0;
    assert_int_equal(pread(fd, &entry_size, 4, H_ENTRY_SIZE), 4);
    assert_int_equal(pread(fd, &entries_off, 8, H_ENTRIES_OFF), 8);
    close(fd);
    return (off_t)(entries_off + entry_size - REC_SIZE) + field;
}

static void poke(int field, const void *data, size_t n) {
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, data, n, record_at(field)), (ssize_t)n);
    close(fd);
}

static void poke_u64(int field, uint64_t v) { poke(field, &v, sizeof(v)); }

static uint64_t peek_u64(int field) {
    uint64_t v = 0;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &v, 8, record_at(field)), 8);
    close(fd);
    return v;
}

/* Force `name` open then reset it, from a child, leaving a whole record
 * ("reset" by "mender"). */
static void mend(void) {
    in_child("only", BREAKER_CONTROL_FORCE_OPEN, 0, "mender", "x");
    in_child("only", BREAKER_CONTROL_RESET, 0, "mender", "fixed");
}

static void expect_none(breaker_store *st, const char *what) {
    breaker_store_control c = last(st, "only");
    if (c.action != BREAKER_STORE_CONTROL_NONE)
        fail_msg("%s: read as %s by '%s'", what, c.action_name, c.who);
    assert_string_equal(c.who, "");
    assert_int_equal(c.generation, 0);
}

static void expect_mended(breaker_store *st) {
    breaker_store_control c = last(st, "only");
    assert_int_equal(c.action, BREAKER_STORE_CONTROL_RESET);
    assert_string_equal(c.why, "fixed");
}

static void a_damaged_record_reads_as_none_and_the_next_control_mends_it(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    breaker *b = attach(st, "only", &cfg);
    mend();
    expect_mended(st);
    /* An unknown action. */
    uint32_t bad = 9;
    poke(R_ACTION, &bad, sizeof(bad));
    expect_none(st, "action 9");
    mend();
    expect_mended(st);
    /* who without its NUL: 72 bytes of text. */
    char fill[208];
    memset(fill, 'A', sizeof(fill));
    poke(R_WHO, fill, 72);
    expect_none(st, "unterminated who");
    mend();
    /* why with a control character, and why unterminated. */
    poke(R_WHY, "two\nlines", 10);
    expect_none(st, "a newline in why");
    mend();
    poke(R_WHY, fill, sizeof(fill));
    expect_none(st, "unterminated why");
    mend();
    /* who terminated, but past BREAKER_WHO_MAX. */
    fill[BREAKER_WHO_MAX + 2] = '\0';
    poke(R_WHO, fill, BREAKER_WHO_MAX + 3);
    expect_none(st, "who past its maximum");
    mend();
    /* A reset with an end. */
    poke_u64(R_UNTIL, UINT64_MAX);
    expect_none(st, "a reset with an end");
    mend();
    /* An odd seq: a writer killed between its two stores. Readers give up
     * (boundedly: this returns) and the next writer makes it even. */
    uint64_t seq = peek_u64(-8);
    assert_int_equal(seq % 2, 0);
    poke_u64(-8, seq + 1);
    expect_none(st, "an odd seq");
    in_child("only", BREAKER_CONTROL_FORCE_OPEN, 0, "next", "writer");
    assert_int_equal(peek_u64(-8) % 2, 0);
    assert_string_equal(last(st, "only").who, "next");
    in_child("only", BREAKER_CONTROL_RESET, 0, "mender", "fixed");
    /* A generation the breaker never reached: shown (it is coherent), but
     * it cannot keep the next control from being recorded. */
    poke_u64(R_GENERATION, UINT64_MAX / 2);
    in_child("only", BREAKER_CONTROL_FORCE_OPEN, 0, "after", "a bogus generation");
    breaker_store_control c = last(st, "only");
    assert_string_equal(c.who, "after");
    assert_int_equal(c.generation, breaker_generation(b));
    /* The whole record garbage. */
    unsigned char junk[REC_SIZE];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 37 + 11);
    poke(0, junk, sizeof(junk));
    expect_none(st, "garbage");
    breaker_destroy(b);
    breaker_store_close(st);
}

/* ---- Two writers and a reader --------------------------------------------------
 * Each writer alternates force_open and reset, every control with who
 * "wW-I" and why "wW-I ACTION" (its writer, its counter, its action): a
 * reader that finds who, why and action of different controls has read a
 * torn record. */
enum { WRITERS = 2, CONTROLS = 4000 };

/* CONTROLS alternating controls on `c` as writer `w`. @return 0, or 4 if
 * one was refused. */
static int write_controls(breaker *c, int w) {
    for (int i = 0; i < CONTROLS; i++) {
        char who[BREAKER_WHO_MAX + 1], why[BREAKER_WHY_MAX + 1];
        bool open = i % 2 == 0;
        snprintf(who, sizeof(who), "w%d-%d", w, i);
        /* Long, so that a copy spans many words. */
        snprintf(why, sizeof(why), "%.20s %s %0150d", who, open ? "forced_open" : "reset", i);
        if (apply(c, open ? BREAKER_CONTROL_FORCE_OPEN : BREAKER_CONTROL_RESET, 0, who, why) !=
            BREAKER_OK)
            return 4;
    }
    return 0;
}

static void writer(int w) {
    breaker_store *cs = NULL;
    breaker_config cfg = consecutive_config(2);
    breaker *c = child_attach("race", &cfg, &cs);
    int rc = write_controls(c, w);
    breaker_destroy(c);
    breaker_store_close(cs);
    _exit(rc);
}

/* One read, checked: who, why and action of one control. @return whether
 * it found a record. */
static bool read_whole(breaker_store *st, uint64_t *last_gen) {
    breaker_store_control c = last(st, "race");
    if (c.action == BREAKER_STORE_CONTROL_NONE) return false;
    char want[BREAKER_WHY_MAX + 1];
    int i = -1;
    assert_int_equal(sscanf(c.who, "w%*d-%d", &i), 1);
    snprintf(want, sizeof(want), "%.20s %s %0150d", c.who, c.action_name, i);
    if (strcmp(c.why, want) != 0)
        fail_msg("torn: who '%s', action %s, why '%s'", c.who, c.action_name, c.why);
    assert_int_equal(c.action,
                     i % 2 == 0 ? BREAKER_STORE_CONTROL_FORCED_OPEN : BREAKER_STORE_CONTROL_RESET);
    /* The later generation stands: the record never goes back. */
    if (c.generation < *last_gen)
        fail_msg("generation %" PRIu64 " after %" PRIu64, c.generation, *last_gen);
    *last_gen = c.generation;
    return true;
}

static void a_reader_never_sees_a_torn_record_while_two_processes_write(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    breaker *b = attach(st, "race", &cfg);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        assert_true(pids[w] >= 0);
        if (pids[w] == 0) writer(w);
    }
    uint64_t reads = 0, whole = 0, none = 0, gave_up = 0, last_gen = 0;
    int done = 0;
    while (done < WRITERS) {
        reads++;
        if (read_whole(st, &last_gen)) {
            whole++;
        } else if (whole == 0) {
            none++; /* before the first record */
        } else {
            gave_up++; /* a writer held the seq odd past the retries (preempted) */
        }
        for (int w = 0; w < WRITERS; w++) {
            int status;
            if (pids[w] > 0 && waitpid(pids[w], &status, WNOHANG) == pids[w]) {
                assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                pids[w] = 0;
                done++;
            }
        }
    }
    /* The last record is the breaker's last control's. */
    breaker_store_control c = last(st, "race");
    assert_int_equal(c.generation, breaker_generation(b));
    print_message("%" PRIu64 " reads: %" PRIu64 " whole, %" PRIu64
                  " none before the first, %" PRIu64 " given up on a writer\n",
                  reads, whole, none, gave_up);
    assert_true(whole > 0);
    breaker_destroy(b);
    breaker_store_close(st);
}

/* The same with threads of one process, each with its own handle (for
 * ThreadSanitizer: every word of the record is an atomic). */
struct thread_writer {
    breaker *b;
    int w, rc;
};

static void *thread_write(void *arg) {
    struct thread_writer *t = arg;
    t->rc = write_controls(t->b, t->w);
    return NULL;
}

static void threads_never_see_a_torn_record_either(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    struct thread_writer tw[WRITERS];
    pthread_t th[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        tw[w] = (struct thread_writer){.b = attach(st, "race", &cfg), .w = w, .rc = -1};
        assert_int_equal(pthread_create(&th[w], NULL, thread_write, &tw[w]), 0);
    }
    uint64_t last_gen = 0, whole = 0;
    for (int i = 0; i < 2000; i++)
        whole += read_whole(st, &last_gen);
    for (int w = 0; w < WRITERS; w++) {
        assert_int_equal(pthread_join(th[w], NULL), 0);
        assert_int_equal(tw[w].rc, 0);
    }
    assert_true(read_whole(st, &last_gen));
    assert_int_equal(last_gen, breaker_generation(tw[0].b));
    for (int w = 0; w < WRITERS; w++)
        breaker_destroy(tw[w].b);
    breaker_store_close(st);
}

/* A file of the layout before the record (version 3, entries of 288
 * bytes) is refused, naming both versions, never read with this layout. */
static void a_file_of_the_layout_before_the_record_is_refused(void **state) {
    (void)state;
    breaker_store *st = open_store();
    breaker_config cfg = consecutive_config(2);
    breaker_destroy(attach(st, "old", &cfg));
    breaker_store_close(st);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint32_t version = 3, entry_size = 288;
    assert_int_equal(pwrite(fd, &version, 4, 8), 4);
    assert_int_equal(pwrite(fd, &entry_size, 4, H_ENTRY_SIZE), 4);
    close(fd);
    breaker_store_config c = quiet_store_config();
    c.flags &= ~(unsigned)BREAKER_STORE_CREATE;
    char msg[256] = "";
    st = NULL;
    assert_int_equal(breaker_store_open(path, &c, &st, msg, sizeof(msg)), BREAKER_EINCOMPATIBLE);
    assert_null(st);
    if (strstr(msg, "store version 3") == NULL || strstr(msg, "reads version 4") == NULL)
        fail_msg("message: %s", msg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_childs_control_is_read_exactly_by_the_parent, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_damaged_record_reads_as_none_and_the_next_control_mends_it, setup, teardown),
        cmocka_unit_test_setup_teardown(a_reader_never_sees_a_torn_record_while_two_processes_write,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(threads_never_see_a_torn_record_either, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_of_the_layout_before_the_record_is_refused, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
