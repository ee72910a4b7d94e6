/* SPDX-License-Identifier: MIT */
/*
 * test_sqlstate.c - SQLSTATE codes follow the table of
 * include/breaker/sqlstate.h, class by class, with its exceptions; malformed
 * codes are failures, and only classes 00-02 are successes.
 */
#include "test_util.h"

#include <breaker/sqlstate.h>

#include <stdio.h>

struct row {
    const char *code;
    enum breaker_outcome want;
};

static const struct row table[] = {
    {"00000", BREAKER_SUCCESS},
    {"01000", BREAKER_SUCCESS},
    {"01P01", BREAKER_SUCCESS},
    {"02000", BREAKER_SUCCESS},
    /* faults */
    {"08000", BREAKER_FAILURE},
    {"08003", BREAKER_FAILURE},
    {"08006", BREAKER_FAILURE},
    {"08001", BREAKER_FAILURE},
    {"08004", BREAKER_FAILURE},
    {"08P01", BREAKER_FAILURE},
    {"53000", BREAKER_FAILURE},
    {"53100", BREAKER_FAILURE},
    {"53200", BREAKER_FAILURE},
    {"53300", BREAKER_FAILURE},
    {"53400", BREAKER_FAILURE},
    {"57000", BREAKER_FAILURE},
    {"57014", BREAKER_FAILURE},
    {"57P01", BREAKER_FAILURE},
    {"57P02", BREAKER_FAILURE},
    {"57P03", BREAKER_FAILURE},
    {"57P04", BREAKER_FAILURE},
    {"58000", BREAKER_FAILURE},
    {"58030", BREAKER_FAILURE},
    {"XX000", BREAKER_FAILURE},
    {"XX001", BREAKER_FAILURE},
    {"XX002", BREAKER_FAILURE},
    {"F0000", BREAKER_FAILURE},
    {"F0001", BREAKER_FAILURE},
    {"40003", BREAKER_FAILURE},
    /* decided by the statement, its data, its conflicts or its caller */
    {"57P05", BREAKER_IGNORED},
    {"58P01", BREAKER_IGNORED},
    {"58P02", BREAKER_IGNORED},
    {"40000", BREAKER_IGNORED},
    {"40001", BREAKER_IGNORED},
    {"40002", BREAKER_IGNORED},
    {"40P01", BREAKER_IGNORED},
    {"23000", BREAKER_IGNORED},
    {"23505", BREAKER_IGNORED},
    {"23503", BREAKER_IGNORED},
    {"23502", BREAKER_IGNORED},
    {"42601", BREAKER_IGNORED},
    {"42P01", BREAKER_IGNORED},
    {"42501", BREAKER_IGNORED},
    {"42703", BREAKER_IGNORED},
    {"22012", BREAKER_IGNORED},
    {"22P02", BREAKER_IGNORED},
    {"0A000", BREAKER_IGNORED},
    {"25P02", BREAKER_IGNORED},
    {"28000", BREAKER_IGNORED},
    {"28P01", BREAKER_IGNORED},
    {"3D000", BREAKER_IGNORED},
    {"54000", BREAKER_IGNORED},
    {"54001", BREAKER_IGNORED},
    {"55P03", BREAKER_IGNORED},
    {"55006", BREAKER_IGNORED},
    {"P0001", BREAKER_IGNORED},
    {"P0004", BREAKER_IGNORED},
    {"HV000", BREAKER_IGNORED},
    {"72000", BREAKER_IGNORED},
    {"03000", BREAKER_IGNORED},
    {"ZZ999", BREAKER_IGNORED},
    {"9Z000", BREAKER_IGNORED},
    /* broken answers */
    {"", BREAKER_FAILURE},
    {"0800", BREAKER_FAILURE},
    {"080060", BREAKER_FAILURE},
    {"08oo6", BREAKER_FAILURE},
    {"2350 ", BREAKER_FAILURE},
    {"42-01", BREAKER_FAILURE},
};

static void sqlstate_codes_follow_the_documented_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        print_message("SQLSTATE '%s'\n", table[i].code);
        assert_int_equal(breaker_classify_sqlstate(table[i].code), table[i].want);
    }
    assert_int_equal(breaker_classify_sqlstate(NULL), BREAKER_FAILURE);
}

/* Every well-formed code of the alphabet's first characters: success exactly
 * for classes 00, 01 and 02, never CANCELLED, and FAILURE for each fault
 * class whatever its subclass. */
static void sqlstate_only_classes_00_to_02_succeed(void **state) {
    (void)state;
    const char alphabet[] = "0123456789ABFHPXZ";
    char code[6] = "00000";
    for (size_t a = 0; a < sizeof(alphabet) - 1; a++)
        for (size_t b = 0; b < sizeof(alphabet) - 1; b++)
            for (size_t c = 0; c < sizeof(alphabet) - 1; c++) {
                code[0] = alphabet[a];
                code[1] = alphabet[b];
                code[2] = alphabet[c];
                enum breaker_outcome got = breaker_classify_sqlstate(code);
                int ok_class = code[0] == '0' && code[1] >= '0' && code[1] <= '2';
                assert_int_equal(got == BREAKER_SUCCESS, ok_class);
                assert_int_not_equal(got, BREAKER_CANCELLED);
                if (strncmp(code, "08", 2) == 0 || strncmp(code, "53", 2) == 0 ||
                    strncmp(code, "XX", 2) == 0)
                    assert_int_equal(got, BREAKER_FAILURE);
                if (strncmp(code, "23", 2) == 0 || strncmp(code, "42", 2) == 0)
                    assert_int_equal(got, BREAKER_IGNORED);
            }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sqlstate_codes_follow_the_documented_table),
        cmocka_unit_test(sqlstate_only_classes_00_to_02_succeed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
