// SPDX-License-Identifier: MIT
// <breaker/redis.h> from C++ (tests/fleet/redis.cmake compiles it with g++ and
// clang++ under -pedantic -Werror; nothing is linked or run).
#include <breaker/redis.h>

int main() {
    breaker_redis_config c;
    breaker_redis_config_init(&c);
    breaker_redis_permit p{};
    breaker_redis_stats s{};
    (void)p;
    (void)s;
    return c.fail_mode == BREAKER_REDIS_FAIL_LOCAL ? 0 : 1;
}
