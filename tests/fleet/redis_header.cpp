// SPDX-License-Identifier: MIT
// <breaker/redis.h> and the experimental <breaker/redis_transport.h> from C++
// (tests/fleet/redis.cmake compiles it with g++ and clang++ under -pedantic
// -Werror; nothing is linked or run).
#include <breaker/redis.h>
#define BREAKER_REDIS_TRANSPORT_EXPERIMENTAL
#include <breaker/redis_transport.h>

int main() {
    breaker_redis_config c;
    breaker_redis_config_init(&c);
    breaker_redis_permit p{};
    breaker_redis_stats s{};
    breaker_redis_command cmd{};
    breaker_redis_transport_ops ops{};
    (void)p;
    (void)s;
    (void)cmd;
    (void)ops;
    return c.fail_mode == BREAKER_REDIS_FAIL_LOCAL ? 0 : 1;
}
