/* SPDX-License-Identifier: MIT */
/*
 * integration_util.h - what the integration tests (test_pq, test_curl)
 * share: a breaker's counts checked all at once.
 */
#ifndef BREAKER_TEST_INTEGRATION_UTIL_H
#define BREAKER_TEST_INTEGRATION_UTIL_H

#include "test_util.h"

#include <inttypes.h>

/* The counters an integration test checks exactly. */
struct counts {
    uint64_t admitted, successes, failures, ignored, rejected_open;
};

static inline void expect_counts(breaker *b, struct counts want) {
    breaker_stats st = stats_of(b);
    print_message("admitted %" PRIu64 " successes %" PRIu64 " failures %" PRIu64 " ignored %" PRIu64
                  " rejected_open %" PRIu64 " stale %" PRIu64 " duplicates %" PRIu64 "\n",
                  st.admitted, st.successes, st.failures, st.ignored, st.rejected_open, st.stale,
                  st.duplicates);
    assert_int_equal(st.admitted, want.admitted);
    assert_int_equal(st.successes, want.successes);
    assert_int_equal(st.failures, want.failures);
    assert_int_equal(st.ignored, want.ignored);
    assert_int_equal(st.rejected_open, want.rejected_open);
    assert_int_equal(st.duplicates, 0);
}

#endif
