/* SPDX-License-Identifier: MIT */
// doc_grpc_example.hpp - what docs/grpc.md's example leaves to its reader
// (a stub with a Get method, the request and reply, a fallback), as
// test_grpc_live gives them, and the function the example's block becomes
// (tests/integrations/integrations.cmake writes it).
#ifndef BREAKER_TEST_DOC_GRPC_EXAMPLE_HPP
#define BREAKER_TEST_DOC_GRPC_EXAMPLE_HPP

#include <breaker.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <string>

using doc_message = grpc::ByteBuffer;

// A stub whose Get makes one unary call to `method` on `target`.
struct doc_stub {
    std::string target, method;
    grpc::Status Get(grpc::ClientContext *context, const doc_message &request, doc_message *reply);
};

// What the example returns for a refused call.
grpc::Status fallback();

// The example's block: one call behind `b` for the caller `tenant_key`,
// whose own deadline is `caller_deadline`.
// @return the call's status, or fallback()'s when the breaker refused it.
grpc::Status doc_grpc_example(breaker *b, doc_stub *stub, const doc_message &request,
                              doc_message &reply, std::uint64_t tenant_key,
                              std::chrono::system_clock::time_point caller_deadline);

#endif
