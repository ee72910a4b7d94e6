/* SPDX-License-Identifier: MIT */
/* grpc_status.c - what each gRPC status code counts as, by default and with
 * RESOURCE_EXHAUSTED as a failure (a server that sheds load for everyone).
 * A gRPC client completes its permit with the same call on the status it got:
 *   breaker_complete(b, &permit, breaker_classify_grpc((int)status.error_code()));
 * No gRPC needed: the classifier is part of libbreaker. */
#include <breaker/grpc.h>

#include <stdio.h>

int main(void) {
    breaker_grpc_policy shedding;
    breaker_grpc_policy_init(&shedding);
    shedding.resource_exhausted = BREAKER_FAILURE;
    printf("%-20s %-10s %s\n", "code", "default", "shedding");
    for (int code = 0; code < BREAKER_GRPC_CODE_COUNT; code++)
        printf("%-20s %-10s %s\n", breaker_grpc_code_name(code),
               breaker_outcome_name(breaker_classify_grpc(code)),
               breaker_outcome_name(breaker_classify_grpc_with(&shedding, code)));
    return 0;
}
