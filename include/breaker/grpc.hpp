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
 * the caller `source` and completes the permit with breaker_complete_from(),
 * so a breaker with failing-source diversity (min_failing_sources, see
 * breaker_complete_from) trips only when enough distinct callers fail, and
 * one tenant whose own requests fail cannot open it for everyone. A source
 * is a non-zero 64-bit key for whoever the call is for (a tenant, an API key,
 * a calling service), the same on every call and in every process: a hash
 * of its name; the 64-bit FNV-1a of the name (0 taken as 1) gives the keys
 * `breaker exec --source` and `breaker replay` use. 0 names nobody, as
 * breaker_complete() does: call() is call_from() with source 0.
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

/*! call_from() :
 *  Runs `fn` (a callable with no arguments returning grpc::Status, which
 *  makes one synchronous call with `context`) behind `b` for the caller
 *  `source` (0 = none); `*status` gets its status, and the permit is
 *  completed with breaker_complete_from(b, &permit,
 *  breaker_classify_grpc_with(policy, code), source). `policy` NULL means
 *  breaker_grpc_policy_init()'s.
 *  @return BREAKER_OK when the call was made, or the BREAKER_REJECTED_*
 *  status of a refusal (fn not called). */
template <class Fn>
int call_from(breaker *b, grpc::ClientContext &context, Fn &&fn, grpc::Status *status,
              std::uint64_t source, const breaker_grpc_policy *policy = nullptr) {
    breaker_permit permit;
    int rc = breaker_acquire(b, &permit);
    if (rc != BREAKER_OK) {
        *status = grpc::Status(grpc::StatusCode::UNAVAILABLE, breaker_strerror(rc));
        return rc;
    }
    if (breaker_permit_is_probe(&permit)) {
        breaker_config cfg;
        breaker_get_config(b, &cfg);
        auto probe_deadline = std::chrono::system_clock::now() +
                              std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                  std::chrono::nanoseconds(cfg.probe_timeout_ns));
        if (probe_deadline < context.deadline()) context.set_deadline(probe_deadline);
    }
    *status = std::forward<Fn>(fn)();
    (void)breaker_complete_from(
        b, &permit, breaker_classify_grpc_with(policy, (int)status->error_code()), source);
    return BREAKER_OK;
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
