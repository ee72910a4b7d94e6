/* SPDX-License-Identifier: MIT */
/*
 * names.h - the rule for a breaker's name (names.c), for the parts of the
 * library that check more than a whole name: the registry's override
 * patterns are a prefix of a name followed by '*'.
 */
#ifndef BREAKER_CORE_NAMES_H
#define BREAKER_CORE_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Check `len` bytes of `s` against breaker_name_validate()'s rule: as a
 * whole name, or (prefix) as the start of one, which may be empty.
 * @return BREAKER_OK, or BREAKER_EINVAL with the reason in `msg`. */
int breaker__name_check(const char *s, size_t len, bool prefix, char *msg, size_t msg_len);

#endif /* BREAKER_CORE_NAMES_H */
