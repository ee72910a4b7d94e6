/* SPDX-License-Identifier: MIT */
/*
 * breaker/grpc.hpp - a gRPC C++ call behind a breaker (header only).
 *
 * Needs gRPC's C++ headers (<grpcpp/grpcpp.h>, Debian: libgrpc++-dev) and
 * links nothing of its own: the classifier is libbreaker's
 * (breaker/grpc.h). Include it from C++ code that already uses gRPC.
 *
 *   breaker_grpc::call(b, context, [&] { return stub->Get(&context, req, &resp); },
 *                      &status)
 *
 * asks the breaker; when admitted, gives a half-open probe a deadline no
 * later than probe_timeout_ns from now (so a hung probe ends as
 * DEADLINE_EXCEEDED and is counted), makes the call, and completes the
 * permit with breaker_classify_grpc_with(policy, status). A refused call is
 * never made: the status is UNAVAILABLE with the refusal's text, and the
 * return value says it was refused.
 *
 * breaker_grpc::call_from(b, context, fn, &status, source) does the same for
 * the caller `source`: the call is admitted with breaker_acquire_from() (a
 * probe's timeout is that caller's failure) and completed with
 * breaker_complete_from(),
 * so a breaker with failing-source diversity (min_failing_sources, see
 * breaker_complete_from) trips only when enough distinct callers fail, and
 * one tenant whose own requests fail cannot open it for everyone. A source
 * is a non-zero 64-bit key for whoever the call is for (a tenant, an API key,
 * a calling service), the same on every call and in every process: a hash
 * of its name; the 64-bit FNV-1a of the name (0 taken as 1) gives the keys
 * `breaker exec --source` and `breaker replay` use. 0 names nobody, as
 * breaker_complete() does: call() is call_from() with source 0.
 *
 * Whose deadline counts (docs/grpc.md): breaker_grpc::call_with(b, context,
 * fn, &status, options) tells the caller's own deadline from the
 * dependency's, as breaker_executor_run() does. The context's deadline, as
 * set before the call, is the dependency's: the time this call gives it to
 * answer. options.caller_deadline is the caller's: when the request this
 * call serves must be answered (a deadline propagated from upstream, as
 * grpc::ServerContext::deadline() gives it). The call runs to the earliest
 * of the two (and of a probe's deadline). A DEADLINE_EXCEEDED that ends it at
 * the caller's deadline, before the dependency's (and the probe's) came, is
 * the caller giving up: completed CANCELLED, never a failure, since a short
 * deadline is the caller's property, not evidence against the dependency.
 * One at the dependency's deadline or the probe's is a FAILURE, as is every
 * DEADLINE_EXCEEDED through call() and call_from(), which know of no
 * caller's deadline. A context deadline not earlier than the caller's is
 * taken for the caller's (grpc::ClientContext::FromServerContext() copies
 * it): then only a probe's deadline is the dependency's.
 *
 * Thread-safety: as the breaker's (any thread); `context` is the call's, used
 * by this thread only, as gRPC requires. The source changes neither.
 */
#ifndef BREAKER_GRPC_HPP
#define BREAKER_GRPC_HPP

#include <breaker.h>
#include <breaker/grpc.h>

#include <chrono>
#include <cstdint>
#include <grpcpp/grpcpp.h>
#include <utility>

namespace breaker_grpc {

/* What call_with() is told beyond the call itself. */
struct options {
    std::uint64_t source = 0; // the caller (see above); 0 = none
    // The caller's own deadline (see "Whose deadline counts"); max() = none.
    std::chrono::system_clock::time_point caller_deadline =
        std::chrono::system_clock::time_point::max();
    const breaker_grpc_policy *policy = nullptr; // nullptr: breaker_grpc_policy_init()'s
};

/*! call_with() :
 *  Runs `fn` (a callable with no arguments returning grpc::Status, which
 *  makes one synchronous call with `context`) behind `b`; `*status` gets its
 *  status. `context`'s deadline becomes the earliest of its own (the
 *  dependency's), opts.caller_deadline and, for a probe, probe_timeout_ns
 *  from now. The permit is completed with breaker_complete_from(b, &permit,
 *  outcome, opts.source): CANCELLED for a DEADLINE_EXCEEDED that ended the
 *  call at the caller's deadline (to gRPC's millisecond) before the
 *  dependency's or the probe's (see "Whose deadline counts"), else breaker_classify_grpc_with(
 *  opts.policy, code).
 *  @return BREAKER_OK when the call was made, or the BREAKER_REJECTED_*
 *  status of a refusal (fn not called; `*status` UNAVAILABLE with the
 *  refusal's text). */
template <class Fn>
int call_with(breaker *b, grpc::ClientContext &context, Fn &&fn, grpc::Status *status,
              const options &opts) {
    breaker_permit permit;
    int rc = breaker_acquire_from(b, &permit, opts.source);
    if (rc != BREAKER_OK) {
        *status = grpc::Status(grpc::StatusCode::UNAVAILABLE, breaker_strerror(rc));
        return rc;
    }
    using deadline_clock = std::chrono::system_clock; // gRPC's deadlines' clock
    // The dependency's deadline: the context's, unless it is the caller's
    // (not earlier than it: propagated); a probe's, if sooner.
    deadline_clock::time_point dependency = context.deadline() < opts.caller_deadline
                                                ? context.deadline()
                                                : deadline_clock::time_point::max();
    if (breaker_permit_is_probe(&permit)) {
        breaker_config cfg;
        breaker_get_config(b, &cfg);
        deadline_clock::time_point probe =
            deadline_clock::now() + std::chrono::duration_cast<deadline_clock::duration>(
                                        std::chrono::nanoseconds(cfg.probe_timeout_ns));
        if (probe < dependency) dependency = probe;
    }
    deadline_clock::time_point earliest =
        dependency < opts.caller_deadline ? dependency : opts.caller_deadline;
    if (earliest < context.deadline()) context.set_deadline(earliest);
    *status = std::forward<Fn>(fn)();
    enum breaker_outcome outcome =
        breaker_classify_grpc_with(opts.policy, (int)status->error_code());
    // Cut short by the caller's deadline alone: the caller gave up. gRPC
    // keeps deadlines to the millisecond, and ends a call up to a
    // millisecond before the instant set (seen: 2 to 267 us early).
    if (status->error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
        opts.caller_deadline < dependency &&
        deadline_clock::now() + std::chrono::milliseconds(1) >= opts.caller_deadline)
        outcome = BREAKER_CANCELLED;
    (void)breaker_complete_from(b, &permit, outcome, opts.source);
    return BREAKER_OK;
}

/*! call_from() :
 *  call_with() for the caller `source` (0 = none), with no caller's
 *  deadline: the context's is the dependency's, and a DEADLINE_EXCEEDED is
 *  a failure. `policy` nullptr means breaker_grpc_policy_init()'s. Same
 *  returns. */
template <class Fn>
int call_from(breaker *b, grpc::ClientContext &context, Fn &&fn, grpc::Status *status,
              std::uint64_t source, const breaker_grpc_policy *policy = nullptr) {
    options opts;
    opts.source = source;
    opts.policy = policy;
    return call_with(b, context, std::forward<Fn>(fn), status, opts);
}

/*! call() :
 *  call_from() without a source (0): the outcome names no caller. Same
 *  arguments otherwise, same returns. */
template <class Fn>
int call(breaker *b, grpc::ClientContext &context, Fn &&fn, grpc::Status *status,
         const breaker_grpc_policy *policy = nullptr) {
    return call_from(b, context, std::forward<Fn>(fn), status, 0, policy);
}

} // namespace breaker_grpc

#endif /* BREAKER_GRPC_HPP */
