/* SPDX-License-Identifier: MIT */
/*
 * shadow_log.c - a breaker in shadow mode in front of a dependency that has
 * an outage, writing the shadow log that `breaker replay` compares with an
 * enforcing configuration, call by call (docs/cli.md, "Comparing with a
 * shadow log").
 *
 * Shadow mode runs the whole state machine on real traffic but refuses
 * nothing: every call is made, and breaker_permit_would_reject() says, per
 * call, what the breaker would have refused. Logging that beside each
 * call's start, duration and outcome is all a service needs to do; copy the
 * shape of `call_and_log()`. Log times as finely as the breaker sees them
 * (microseconds here: a slow-call limit of 100 ms cannot be judged from a
 * duration cut to whole milliseconds), from the clock the breaker reads.
 * Calls here are made one after another; a service whose calls overlap
 * writes each line when the call ends, and a replay puts the lines back in
 * start order (docs/cli.md, "What a replay can agree on").
 *
 * The dependency answers 20 calls a second for 2 minutes: healthy but for
 * 2% of errors, down (503) from 30 s to 75 s, and failing a third of its
 * calls from 95 s to 100 s. The clock is virtual, so the log is the same on
 * every run (examples/shadow_log.csv is this program's output).
 *
 *   ./shadow_log > shadow_log.csv
 *   breaker replay -b 'candidate:window=10s,...' shadow_log.csv
 */
#include <breaker.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define MS  UINT64_C(1000000)
#define SEC (1000 * MS)

/* The log's times are epoch seconds; this one is 2026-12-01T00:00:00Z. */
#define EPOCH_S UINT64_C(1796083200)

/* The configuration under evaluation, as breaker_config_set() keys: the same
 * text, joined with commas, is a `breaker replay -b` configuration. */
static const char *const candidate[][2] = {
    {"window", "10s"}, {"min_calls", "20"},           {"failure_rate", "50%"},
    {"open", "5s"},    {"half_open_max_probes", "2"}, {"half_open_successes", "3"},
    {"seed", "7"}, /* the jitter of the waits, so that a replay can repeat it */
};

struct world {
    uint64_t now; /* the virtual clock, ns since the first call */
    uint64_t rng;
};

static uint64_t virtual_clock(void *ctx) { return ((struct world *)ctx)->now; }

/* A number in [0, n), the same sequence on every run. */
static unsigned roll(struct world *w, unsigned n) {
    w->rng = w->rng * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return (unsigned)((w->rng >> 33) % n);
}

/* The dependency's answer at the current time: an HTTP status. */
static int dependency_status(struct world *w) {
    uint64_t t = w->now;
    unsigned failing = t >= 30 * SEC && t < 75 * SEC    ? 100
                       : t >= 95 * SEC && t < 100 * SEC ? 33
                                                        : 2;
    return roll(w, 100) < failing ? 503 : 200;
}

/* One call: ask the breaker, make the call (shadow mode admits it even
 * where it would refuse), complete it with the dependency's answer, and log
 * the call with what the breaker would have refused. */
static void call_and_log(breaker *b, struct world *w, uint64_t refused[BREAKER_REFUSAL_COUNT]) {
    uint64_t start = w->now;
    breaker_permit permit;
    if (breaker_acquire(b, &permit) != BREAKER_OK) {
        /* Not in shadow mode: refused for real, not made, and not part of
         * a shadow log. */
        return;
    }
    enum breaker_refusal would = breaker_permit_would_reject(&permit);
    int status = dependency_status(w);
    uint64_t took = (status == 503 ? 2 + roll(w, 6) : 15 + roll(w, 30)) * MS;
    w->now += took;
    (void)breaker_complete(b, &permit, breaker_classify_http(status));
    refused[would]++;
    printf("%" PRIu64 ".%06" PRIu64 ",%" PRIu64 ",%d,%s\n", EPOCH_S + start / SEC,
           (start % SEC) / 1000, took / 1000, status, breaker_refusal_name(would));
}

int main(void) {
    struct world w = {.now = 0, .rng = 2026};
    breaker_config cfg;
    breaker_config_init(&cfg);
    char msg[256];
    printf("# a shadow log (examples/shadow_log.c) of the configuration\n# ");
    for (size_t i = 0; i < sizeof(candidate) / sizeof(candidate[0]); i++) {
        if (breaker_config_set(&cfg, candidate[i][0], candidate[i][1], msg, sizeof(msg)) !=
            BREAKER_OK) {
            fprintf(stderr, "shadow_log: %s\n", msg);
            return 1;
        }
        printf("%s%s=%s", i ? "," : "", candidate[i][0], candidate[i][1]);
    }
    printf("\nts,duration_us,status,would_reject\n");
    cfg.clock = virtual_clock;
    cfg.clock_ctx = &w;
    breaker *b = NULL;
    if (breaker_create(&cfg, &b) != BREAKER_OK) return 1;
    (void)breaker_set_shadow(b, 1);

    uint64_t refused[BREAKER_REFUSAL_COUNT] = {0};
    for (uint64_t i = 0; i < 2400; i++) {
        w.now = i * 50 * MS; /* 20 calls a second, each done before the next */
        call_and_log(b, &w, refused);
    }
    breaker_stats st;
    breaker_stats_get(b, &st);
    fprintf(stderr,
            "shadow_log: 2400 calls made; the breaker would have refused %" PRIu64 " (%" PRIu64
            " open, %" PRIu64 " half_open); stats.would_reject_open %" PRIu64
            ", _half_open %" PRIu64 "\n",
            2400 - refused[BREAKER_REFUSAL_NONE], refused[BREAKER_REFUSAL_OPEN],
            refused[BREAKER_REFUSAL_HALF_OPEN], st.would_reject_open, st.would_reject_half_open);
    breaker_destroy(b);
    return 0;
}
