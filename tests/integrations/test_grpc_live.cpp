/* SPDX-License-Identifier: MIT */
// test_grpc_live.cpp - breaker/grpc.hpp against a real gRPC server on
// 127.0.0.1 (gRPC's generic API: no protobuf code generation). The server
// answers a call to "/breaker.Test/<code>" with status <code>, and never
// answers "/breaker.Test/silent" until the client gives up. Shown: every
// code a real server sends is counted as breaker/grpc.h says; UNAVAILABLE
// opens the breaker and the calls it refuses never reach the server (the
// server counts the calls it gets); a probe made with no deadline ends at
// the probe's deadline; a refused connection is a failure; call_from()
// completes with the caller's source, so that with min_failing_sources = 3
// one caller's failures do not open the breaker and three callers' do;
// call_with() tells the caller's own deadline from the dependency's (a
// caller with 1 ms left, a dependency that answers in 5 ms: CANCELLED, never
// a failure). The breaker runs
// on a fake clock; the only durations are deadlines (200 and 300 ms) against
// a server that never answers. docs/grpc.md's example runs as the page
// shows it (doc_grpc_example.hpp). A plain C++ program: exit 0 when every check
// passed.
#include <breaker.h>
#include <breaker/grpc.h>
#include <breaker/grpc.hpp>

#include <grpcpp/alarm.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <future>
#include <memory>
#include <string>

#include "../support/source_keys.h"
#include "doc_grpc_example.hpp"
#include "../cpp/check.hpp"

static std::atomic<unsigned> calls_received{0};

// Answers by method name; see the header comment.
class Service final : public grpc::CallbackGenericService {
    grpc::ServerGenericBidiReactor *
    CreateReactor(grpc::GenericCallbackServerContext *ctx) override {
        calls_received++;
        return new Reactor(ctx->method());
    }

    class Reactor final : public grpc::ServerGenericBidiReactor {
      public:
        explicit Reactor(const std::string &method) {
            std::string last = method.substr(method.rfind('/') + 1);
            if (last == "silent") return; // until OnCancel
            if (last.rfind("delay", 0) == 0) {
                delay_ms_ = std::stoi(last.substr(5));
                code_ = 0;
            } else {
                code_ = std::stoi(last);
            }
            StartRead(&request_);
        }
        void OnReadDone(bool ok) override {
            if (delay_ms_ > 0) { // OK after the delay, whether or not the client waits
                alarm_.Set(std::chrono::system_clock::now() + std::chrono::milliseconds(delay_ms_),
                           [this](bool) { Answer(true); });
                return;
            }
            Answer(ok);
        }
        void Answer(bool ok) {
            if (code_ == 0 && ok) {
                grpc::Slice s(std::string("ok"));
                response_ = grpc::ByteBuffer(&s, 1);
                StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
            } else {
                Finish(grpc::Status(static_cast<grpc::StatusCode>(code_), "chosen"));
            }
        }
        void OnCancel() override {
            if (code_ < 0) Finish(grpc::Status::CANCELLED);
        }
        void OnDone() override { delete this; }

      private:
        int code_ = -1;
        int delay_ms_ = 0;
        grpc::Alarm alarm_;
        grpc::ByteBuffer request_, response_;
    };
};

static std::uint64_t fake_now;
static std::uint64_t fake_clock(void *) { return fake_now; }
static const std::uint64_t SEC = 1000000000;

static breaker *make_breaker(std::uint32_t threshold, std::uint32_t min_failing_sources = 0) {
    breaker_config cfg;
    breaker_config_init(&cfg);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = threshold;
    cfg.open_ns = 10 * SEC;
    cfg.open_jitter = 0;
    cfg.half_open_successes = 1;
    cfg.probe_timeout_ns = 300 * 1000000;
    cfg.clock = fake_clock;
    cfg.min_failing_sources = min_failing_sources;
    breaker *b = nullptr;
    if (breaker_create(&cfg, &b) != BREAKER_OK) std::abort();
    return b;
}

// One unary call to `method` on `target` with `context`, without a breaker.
static grpc::Status unary_call(const std::string &target, const std::string &method,
                               grpc::ClientContext *context, const grpc::ByteBuffer &request,
                               grpc::ByteBuffer *response) {
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    std::promise<grpc::Status> done;
    stub.UnaryCall(context, method, grpc::StubOptions(), &request, response,
                   [&](grpc::Status st) { done.set_value(st); });
    return done.get_future().get();
}

static grpc::ByteBuffer a_request() {
    grpc::Slice s(std::string("request"));
    return grpc::ByteBuffer(&s, 1);
}

// One unary call to `method` on `target` behind `b` for the caller `source`
// (0 = none, through call(); else call_from()); `deadline_ms` 0 = none.
static int rpc(breaker *b, const std::string &target, const std::string &method, int deadline_ms,
               grpc::Status *status, std::uint64_t source = 0) {
    grpc::ClientContext context;
    if (deadline_ms > 0)
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::milliseconds(deadline_ms));
    grpc::ByteBuffer request = a_request(), response;
    auto unary = [&] { return unary_call(target, method, &context, request, &response); };
    if (source == 0) return breaker_grpc::call(b, context, unary, status);
    return breaker_grpc::call_from(b, context, unary, status, source);
}

// docs/grpc.md's example, the page's own text (doc_grpc_example.hpp): one
// caller's UNAVAILABLEs do not open a breaker with min_failing_sources = 3,
// three callers' do, and then the example returns its fallback.
grpc::Status doc_stub::Get(grpc::ClientContext *context, const doc_message &request,
                           doc_message *reply) {
    return unary_call(target, method, context, request, reply);
}

grpc::Status fallback() { return grpc::Status(grpc::StatusCode::ABORTED, "fallback"); }

static void the_docs_example_names_its_caller(const std::string &target) {
    breaker *b = make_breaker(3, 3);
    std::uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    doc_stub stub{target, "/breaker.Test/14"};
    doc_message request = a_request(), reply;
    auto later = std::chrono::system_clock::now() + std::chrono::seconds(30);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(doc_grpc_example(b, &stub, request, reply, callers[0], later).error_code(),
                 grpc::StatusCode::UNAVAILABLE);
    CHECK_EQ(breaker_get_state(b), BREAKER_CLOSED);
    for (int i = 1; i < 3; i++)
        CHECK_EQ(doc_grpc_example(b, &stub, request, reply, callers[i], later).error_code(),
                 grpc::StatusCode::UNAVAILABLE);
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    CHECK_EQ(doc_grpc_example(b, &stub, request, reply, callers[0], later).error_message() ==
                 "fallback",
             true);
    breaker_destroy(b);
}

// call_from() names the caller: with min_failing_sources = 3, ten
// UNAVAILABLEs for one caller and five for a second leave the breaker closed
// (it opens on three in a row otherwise); a third caller's opens it. Without
// the source the failures name nobody and never trip.
static void failures_of_one_source_do_not_open_and_three_sources_do(const std::string &target) {
    breaker *b = make_breaker(3, 3);
    std::uint64_t callers[3];
    keys_on_distinct_bits(callers, 3);
    grpc::Status status;
    for (int i = 0; i < 15; i++) {
        CHECK_EQ(rpc(b, target, "/breaker.Test/14", 5000, &status, callers[i / 10]), BREAKER_OK);
        CHECK_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_CLOSED);
    CHECK_EQ(rpc(b, target, "/breaker.Test/14", 5000, &status, callers[2]), BREAKER_OK);
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    CHECK_EQ(st.admitted, 16);
    CHECK_EQ(st.failures, 16);
    breaker_destroy(b);
}

// Whose deadline counts: a healthy dependency that answers in 5 ms, called
// for a caller whose own deadline is 1 ms away (a propagated deadline), with
// the dependency given 1 s. Through call_with(), naming the caller's
// deadline, each call ends DEADLINE_EXCEEDED at the caller's deadline and is
// CANCELLED: 100 calls, nothing refused, nothing counted against the
// dependency (consecutive, 3 failures open it). The same calls through
// call_from() (the context's 1 ms is then the dependency's own): failures,
// open after 3, the rest refused. And a dependency slower than its own
// deadline (2 ms) for a caller with time to spare (1 s) fails: call_with()
// does not excuse it.
// One call to the 5 ms method through `stub`: through call_with(), the
// dependency given `dependency` and the caller's deadline `caller` from now;
// through call_from() (`named` false), the context's deadline `caller`, as
// a caller without call_with() passes its own deadline on.
static int one_delayed_call(breaker *b, grpc::GenericStub &stub,
                            std::chrono::milliseconds dependency, std::chrono::milliseconds caller,
                            bool named, grpc::Status *status) {
    grpc::ClientContext context;
    auto now = std::chrono::system_clock::now();
    context.set_deadline(now + (named ? dependency : caller));
    breaker_grpc::options opts;
    opts.caller_deadline = now + caller;
    grpc::ByteBuffer request = a_request(), response;
    auto call = [&] {
        std::promise<grpc::Status> done;
        stub.UnaryCall(&context, "/breaker.Test/delay5", grpc::StubOptions(), &request, &response,
                       [&](grpc::Status st) { done.set_value(st); });
        return done.get_future().get();
    };
    if (named) return breaker_grpc::call_with(b, context, call, status, opts);
    return breaker_grpc::call_from(b, context, call, status, 0);
}

static void the_callers_own_deadline_is_no_failure(const std::string &target) {
    auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    using ms = std::chrono::milliseconds;
    breaker *b = make_breaker(3);
    grpc::Status status;
    CHECK_EQ(one_delayed_call(b, stub, ms(1000), ms(1000), true, &status), BREAKER_OK); // connected
    CHECK_EQ(status.error_code(), grpc::StatusCode::OK);
    unsigned refused = 0, exceeded = 0;
    for (int i = 0; i < 100; i++) {
        refused += one_delayed_call(b, stub, ms(1000), ms(1), true, &status) != BREAKER_OK;
        exceeded += status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    }
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    std::printf("caller's 1 ms deadline, dependency 5 ms (given 1 s), call_with(): %u of 100 "
                "refused, %u DEADLINE_EXCEEDED, %llu cancelled, %llu failures, state %s\n",
                refused, exceeded, (unsigned long long)st.cancelled,
                (unsigned long long)st.failures, breaker_state_name(st.state));
    CHECK_EQ(refused, 0);
    // Each ends at the caller's deadline (a loaded machine may see the 5 ms
    // answer first: a success, never a failure).
    CHECK_EQ(st.cancelled, exceeded);
    CHECK_EQ(st.cancelled + st.successes, 101);
    CHECK_EQ(st.failures, 0);
    CHECK_EQ(st.state, BREAKER_CLOSED);
    breaker_destroy(b);

    // The same deadline as the dependency's own (call_from()): failures.
    b = make_breaker(3);
    refused = 0;
    for (int i = 0; i < 100; i++)
        refused += one_delayed_call(b, stub, ms(1000), ms(1), false, &status) != BREAKER_OK;
    (void)breaker_stats_get(b, &st);
    std::printf("the dependency's own 1 ms deadline, call_from(): %u of 100 refused, %llu "
                "failures, state %s\n",
                refused, (unsigned long long)st.failures, breaker_state_name(st.state));
    CHECK_EQ(st.state, BREAKER_OPEN); // 97 refused, 3 failures, unless a 5 ms answer beat 1 ms
    CHECK_EQ(refused + st.admitted, 100);
    CHECK_EQ(st.failures >= 3, true);
    breaker_destroy(b);

    // Too slow for its own deadline, whatever the caller's: failures.
    b = make_breaker(3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(one_delayed_call(b, stub, ms(2), ms(1000), true, &status), BREAKER_OK);
        CHECK_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    breaker_destroy(b);
}

static void every_code_from_a_real_server_follows_the_table(const std::string &target) {
    breaker *b = make_breaker(1000);
    unsigned want_failures = 0, want_ignored = 0, want_successes = 0;
    for (int code = 0; code < BREAKER_GRPC_CODE_COUNT; code++) {
        grpc::Status status;
        CHECK_EQ(rpc(b, target, "/breaker.Test/" + std::to_string(code), 5000, &status),
                 BREAKER_OK);
        CHECK_EQ(status.error_code(), code);
        enum breaker_outcome want = breaker_classify_grpc(code);
        std::printf("%-20s -> %s\n", breaker_grpc_code_name(code), breaker_outcome_name(want));
        want_failures += want == BREAKER_FAILURE;
        want_ignored += want == BREAKER_IGNORED || want == BREAKER_CANCELLED;
        want_successes += want == BREAKER_SUCCESS;
    }
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    CHECK_EQ(st.admitted, BREAKER_GRPC_CODE_COUNT);
    CHECK_EQ(st.successes, 1);
    CHECK_EQ(st.failures, 5); // UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE, DATA_LOSS
    CHECK_EQ(st.successes, want_successes);
    CHECK_EQ(st.failures, want_failures);
    CHECK_EQ(st.ignored, want_ignored); // CANCELLED counts as ignored by default
    breaker_destroy(b);
}

static void unavailable_opens_and_refused_calls_never_reach_the_server(const std::string &target) {
    breaker *b = make_breaker(3);
    grpc::Status status;
    for (int i = 0; i < 3; i++)
        CHECK_EQ(rpc(b, target, "/breaker.Test/14", 5000, &status), BREAKER_OK);
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    unsigned before = calls_received;
    for (int i = 0; i < 10; i++) {
        CHECK_EQ(rpc(b, target, "/breaker.Test/0", 5000, &status), BREAKER_REJECTED_OPEN);
        CHECK_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    }
    CHECK_EQ(calls_received - before, 0);
    fake_now += 10 * SEC; // the wait: the probe reaches the server and closes it
    CHECK_EQ(rpc(b, target, "/breaker.Test/0", 5000, &status), BREAKER_OK);
    CHECK_EQ(status.error_code(), grpc::StatusCode::OK);
    CHECK_EQ(breaker_get_state(b), BREAKER_CLOSED);
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    CHECK_EQ(st.admitted, 4);
    CHECK_EQ(st.failures, 3);
    CHECK_EQ(st.successes, 1);
    CHECK_EQ(st.rejected_open, 10);
    breaker_destroy(b);
}

static void a_probe_without_a_deadline_ends_at_the_probes(const std::string &target) {
    breaker *b = make_breaker(3);
    grpc::Status status;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rpc(b, target, "/breaker.Test/silent", 200, &status), BREAKER_OK);
        CHECK_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    fake_now += 10 * SEC;
    // No deadline of its own: without the probe's it would wait forever.
    CHECK_EQ(rpc(b, target, "/breaker.Test/silent", 0, &status), BREAKER_OK);
    CHECK_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    breaker_stats st;
    (void)breaker_stats_get(b, &st);
    CHECK_EQ(st.state, BREAKER_OPEN);
    CHECK_EQ(st.probes_failed, 1);
    CHECK_EQ(st.failures, 4);
    breaker_destroy(b);
}

static void a_refused_connection_is_a_failure() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(fd, (sockaddr *)&a, sizeof(a)) != 0 || getsockname(fd, (sockaddr *)&a, &len) != 0)
        std::abort();
    std::string target = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    breaker *b = make_breaker(3);
    grpc::Status status;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(rpc(b, target, "/breaker.Test/0", 5000, &status), BREAKER_OK);
        CHECK_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    }
    CHECK_EQ(breaker_get_state(b), BREAKER_OPEN);
    breaker_destroy(b);
    close(fd);
}

int main() {
    Service service;
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterCallbackGenericService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || port == 0) {
        std::fprintf(stderr, "test_grpc_live: the server did not start\n");
        return 1;
    }
    std::string target = "127.0.0.1:" + std::to_string(port);
    every_code_from_a_real_server_follows_the_table(target);
    unavailable_opens_and_refused_calls_never_reach_the_server(target);
    a_probe_without_a_deadline_ends_at_the_probes(target);
    a_refused_connection_is_a_failure();
    failures_of_one_source_do_not_open_and_three_sources_do(target);
    the_docs_example_names_its_caller(target);
    the_callers_own_deadline_is_no_failure(target);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    server->Wait();
    if (failures != 0) {
        std::fprintf(stderr, "test_grpc_live: %d check(s) failed\n", failures);
        return 1;
    }
    std::printf("test_grpc_live: all checks passed (%u calls reached the server)\n",
                calls_received.load());
    return 0;
}
