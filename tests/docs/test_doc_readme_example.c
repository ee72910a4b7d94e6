/* SPDX-License-Identifier: MIT */
/*
 * test_doc_readme_example.c - README's 30-second example runs (tests/docs/docs.cmake
 * copies it out of the README into a function): a fresh breaker admits the
 * call and takes its outcome, whatever the answer.
 */
#include <breaker.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* The README's example (doc_readme_example.c): 0 when the call was made. */
int readme_example(int answer);

static void the_readme_example_makes_its_call_and_records_it(void **state) {
    (void)state;
    assert_int_equal(readme_example(200), 0);
    assert_int_equal(readme_example(503), 0);
    assert_int_equal(readme_example(404), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_readme_example_makes_its_call_and_records_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
