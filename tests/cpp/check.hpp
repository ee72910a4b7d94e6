/* SPDX-License-Identifier: MIT */
// check.hpp - the C++ test programs' one check (tests/cpp/consumer.cpp,
// tests/integrations/test_grpc_live.cpp): CHECK_EQ prints both values and counts a
// failure in `failures`, which main() turns into the exit status.
#ifndef BREAKER_TEST_CHECK_HPP
#define BREAKER_TEST_CHECK_HPP

#include <cstdio>

static int failures;

#define CHECK_EQ(got, want)                                                                     \
    do {                                                                                        \
        long long got_ = (long long)(got), want_ = (long long)(want);                           \
        if (got_ != want_) {                                                                    \
            std::fprintf(stderr, "%s:%d: %s is %lld, expected %s = %lld\n", __FILE__, __LINE__, \
                         #got, got_, #want, want_);                                             \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

#endif
