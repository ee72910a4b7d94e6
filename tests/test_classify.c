/*
 * test_classify.c - the classifiers follow their documented HTTP and errno tables.
 */
#include "test_util.h"

#include <errno.h>

static void http_server_errors_and_overload_are_failures(void **state) {
    (void)state;
    const int failures[] = {500, 502, 503, 504, 506, 507, 508, 511, 599, 408, 429, 0, 99, 600, -1};
    for (size_t i = 0; i < sizeof(failures) / sizeof(failures[0]); i++) {
        print_message("status %d\n", failures[i]);
        assert_int_equal(breaker_classify_http(failures[i]), BREAKER_FAILURE);
    }
}

static void http_answers_that_say_nothing_about_health_are_not_failures(void **state) {
    (void)state;
    const int fine[] = {100, 200, 201, 204, 301, 304, 400, 401, 403, 404, 409, 422, 501, 505};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        print_message("status %d\n", fine[i]);
        assert_int_equal(breaker_classify_http(fine[i]), BREAKER_SUCCESS);
    }
}

static void errno_table(void **state) {
    (void)state;
    const int failures[] = {ECONNREFUSED, ECONNRESET, ECONNABORTED, ETIMEDOUT, EHOSTUNREACH,
                            ENETUNREACH,  EHOSTDOWN,  ENETDOWN,     ENETRESET, EPIPE};
    for (size_t i = 0; i < sizeof(failures) / sizeof(failures[0]); i++)
        assert_int_equal(breaker_classify_errno(failures[i]), BREAKER_FAILURE);
    assert_int_equal(breaker_classify_errno(0), BREAKER_SUCCESS);
    assert_int_equal(breaker_classify_errno(ECANCELED), BREAKER_CANCELLED);
    assert_int_equal(breaker_classify_errno(EINVAL), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_errno(ENOMEM), BREAKER_IGNORED);
    assert_int_equal(breaker_classify_errno(EMFILE), BREAKER_IGNORED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_server_errors_and_overload_are_failures),
        cmocka_unit_test(http_answers_that_say_nothing_about_health_are_not_failures),
        cmocka_unit_test(errno_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
