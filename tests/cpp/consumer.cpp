/* SPDX-License-Identifier: MIT */
// A C++17 consumer of every public header: breaker.h, breaker/registry.h and
// breaker/compose.h compile as C++ (g++ and clang++, -Wall -Wextra -pedantic
// -Werror) and work, and the optional breaker/breaker.hpp permit guard
// settles exactly the permits its owner forgot. Built and run by
// tests/cpp/run.sh and by the installed-package consumers.
#include <breaker.h>
#include <breaker/breaker.hpp>
#include <breaker/compose.h>
#include <breaker/grpc.h>
#include <breaker/registry.h>
#include <breaker/sqlstate.h>
// Installed only with breaker_curl and breaker_pq (libcurl, libpq found).
#if __has_include(<breaker/curl.h>)
#include <breaker/curl.h>
#define CONSUMER_HAS_CURL 1
#endif
#if __has_include(<breaker/pq.h>)
#include <breaker/pq.h>
#define CONSUMER_HAS_PQ 1
#endif

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "check.hpp"

static std::uint64_t fake_now;
static std::uint64_t fake_clock(void *) { return fake_now; }

static breaker *make_breaker() {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 1;
    cfg.open_ns = 1000000;
    cfg.open_jitter = 0;
    cfg.half_open_successes = 2;
    cfg.clock = fake_clock;
    breaker *b = nullptr;
    if (breaker_create(&cfg, &b) != BREAKER_OK) std::abort();
    return b;
}

static std::uint64_t ignored(breaker *b) {
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    return st.ignored;
}

static void guard_settles_only_what_was_forgotten() {
    breaker *b = make_breaker();
    {
        breaker_cxx::permit_guard g(b);
        CHECK_EQ(g.admitted(), true);
        CHECK_EQ(g.complete(BREAKER_SUCCESS), BREAKER_OK);
        CHECK_EQ(g.complete(BREAKER_SUCCESS), BREAKER_ALREADY_SETTLED);
        CHECK_EQ(g.pending(), false);
    }
    CHECK_EQ(ignored(b), 0); // completed by hand: the destructor adds nothing
    {
        breaker_cxx::permit_guard g(b);
        CHECK_EQ(g.pending(), true);
    }
    CHECK_EQ(ignored(b), 1); // forgotten: settled as IGNORED
    {
        breaker_cxx::permit_guard a(b);
        breaker_cxx::permit_guard moved(std::move(a));
        CHECK_EQ(a.admitted(), false);
        CHECK_EQ(a.complete(BREAKER_SUCCESS), BREAKER_EINVAL);
        CHECK_EQ(moved.pending(), true);
        breaker_cxx::permit_guard c(b);
        c = std::move(moved); // c's own permit is settled first
        CHECK_EQ(ignored(b), 2);
    }
    CHECK_EQ(ignored(b), 3); // the moved permit, once
    {
        breaker_cxx::permit_guard g(b);
        breaker_permit p = g.release();
        CHECK_EQ(breaker_complete(b, &p, BREAKER_SUCCESS), BREAKER_OK);
    }
    CHECK_EQ(ignored(b), 3);
    breaker_destroy(b);
}

static void forgotten_probe_frees_its_slot() {
    breaker *b = make_breaker();
    {
        breaker_cxx::permit_guard g(b);
        CHECK_EQ(g.complete(BREAKER_FAILURE), BREAKER_OK);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    {
        breaker_cxx::permit_guard refused(b);
        CHECK_EQ(refused.status(), BREAKER_REJECTED_OPEN);
        CHECK_EQ(refused.complete(BREAKER_SUCCESS), BREAKER_EINVAL);
    }
    fake_now += 2000000;
    {
        breaker_cxx::permit_guard probe(b);
        CHECK_EQ(probe.is_probe(), true);
        breaker_cxx::permit_guard second(b); // one probe at a time
        CHECK_EQ(second.status(), BREAKER_REJECTED_HALF_OPEN);
    } // the probe is forgotten: IGNORED frees its slot
    breaker_cxx::permit_guard next(b);
    CHECK_EQ(next.is_probe(), true);
    CHECK_EQ(next.complete(BREAKER_SUCCESS), BREAKER_OK);
    breaker_destroy(b);
}

static void shadow_guard_says_what_it_was_spared() {
    breaker *b = make_breaker();
    CHECK_EQ(breaker_set_shadow(b, 1), BREAKER_OK);
    {
        breaker_cxx::permit_guard g(b);
        CHECK_EQ(g.would_reject(), BREAKER_REFUSAL_NONE); // closed: a real admission
        CHECK_EQ(g.complete(BREAKER_FAILURE), BREAKER_OK);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    {
        breaker_cxx::permit_guard g(b); // open, but shadow mode admits it
        CHECK_EQ(g.admitted(), true);
        CHECK_EQ(g.would_reject(), BREAKER_REFUSAL_OPEN);
        CHECK_EQ(g.complete(BREAKER_SUCCESS), BREAKER_OK);
        CHECK_EQ(g.would_reject(), BREAKER_REFUSAL_OPEN); // the permit still says it
    }
    CHECK_EQ(breaker_set_shadow(b, 0), BREAKER_OK);
    {
        breaker_cxx::permit_guard refused(b);
        CHECK_EQ(refused.admitted(), false);
        CHECK_EQ(refused.would_reject(), BREAKER_REFUSAL_NONE);
    }
    breaker_cxx::permit_guard empty;
    CHECK_EQ(empty.would_reject(), BREAKER_REFUSAL_NONE);
    breaker_destroy(b);
}

static int transitions_seen;
static breaker *listened;
static void listener(void *, const breaker_registry_event *ev) {
    if (ev->kind == BREAKER_REGISTRY_TRANSITION && ev->b == listened) transitions_seen++;
}

static void registry_from_cpp() {
    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.defaults.trip = BREAKER_TRIP_CONSECUTIVE;
    rc.defaults.failure_threshold = 1;
    breaker_registry *reg = nullptr;
    if (breaker_registry_create(&rc, &reg) != BREAKER_OK) std::abort();
    CHECK_EQ(breaker_registry_add_listener(reg, listener, nullptr), BREAKER_OK);
    breaker *b = nullptr;
    CHECK_EQ(breaker_registry_get(reg, "payments.charge", &b), BREAKER_OK);
    listened = b;
    {
        breaker_cxx::permit_guard g(b);
        CHECK_EQ(g.complete(BREAKER_FAILURE), BREAKER_OK);
    }
    CHECK_EQ(transitions_seen, 1);
    breaker_registry_info info;
    CHECK_EQ(breaker_registry_info_get(reg, b, &info, nullptr, 0), BREAKER_OK);
    CHECK_EQ(info.b == b, true);
    CHECK_EQ(info.stats.state, BREAKER_OPEN);
    char text[256];
    std::size_t len = 0;
    CHECK_EQ(breaker_registry_export_health_json(reg, text, sizeof text, &len), BREAKER_OK);
    CHECK_EQ(len > 0, true);
    CHECK_EQ(breaker_registry_release(reg, b), BREAKER_OK);
    breaker_registry_destroy(reg);
}

static breaker_outcome succeed(void *, breaker_attempt *) { return BREAKER_SUCCESS; }

static void executor_from_cpp() {
    breaker *b = make_breaker();
    breaker_executor_config ec;
    breaker_executor_config_init(&ec);
    ec.b = b;
    ec.clock = fake_clock;
    breaker_executor *ex = nullptr;
    if (breaker_executor_create(&ec, &ex) != BREAKER_OK) std::abort();
    breaker_call call{};
    call.op = succeed;
    breaker_result res;
    CHECK_EQ(breaker_executor_run(ex, &call, &res), BREAKER_OK);
    CHECK_EQ(res.kind, BREAKER_RESULT_SUCCEEDED);
    CHECK_EQ(res.breaker_records, 1);
    breaker_executor_destroy(ex);
    breaker_destroy(b);
}

// The integrations' headers: the classifiers are libbreaker's (curl.h and
// pq.h only compile here: their libraries are not linked).
static void classifiers_from_cpp() {
    CHECK_EQ(breaker_classify_grpc(BREAKER_GRPC_UNAVAILABLE), BREAKER_FAILURE);
    breaker_grpc_policy p;
    breaker_grpc_policy_init(&p);
    p.resource_exhausted = BREAKER_FAILURE;
    CHECK_EQ(breaker_classify_grpc_with(&p, BREAKER_GRPC_RESOURCE_EXHAUSTED), BREAKER_FAILURE);
    CHECK_EQ(breaker_classify_sqlstate("57014"), BREAKER_FAILURE);
    CHECK_EQ(breaker_classify_sqlstate("42601"), BREAKER_IGNORED);
#ifdef CONSUMER_HAS_CURL
    breaker_curl_options o = {};
    CHECK_EQ(o.timeout_ms, 0);
#endif
#ifdef CONSUMER_HAS_PQ
    breaker_pq_query q = {};
    CHECK_EQ(q.active, 0);
#endif
}

int main() {
    guard_settles_only_what_was_forgotten();
    forgotten_probe_frees_its_slot();
    shadow_guard_says_what_it_was_spared();
    registry_from_cpp();
    executor_from_cpp();
    classifiers_from_cpp();
    if (failures != 0) {
        std::fprintf(stderr, "consumer.cpp: %d check(s) failed\n", failures);
        return 1;
    }
    std::printf("consumer.cpp: libbreaker %s from C++ %ld: all checks passed\n",
                breaker_version_string(), (long)__cplusplus);
    return 0;
}
