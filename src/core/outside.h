/* SPDX-License-Identifier: MIT */
/*
 * outside.h - evidence from outside the call path: breaker_trip_outside()
 * and breaker_close_outside() are public now (breaker/backend.h); these are
 * their former internal names, for callers not yet moved.
 */
#ifndef BREAKER_CORE_OUTSIDE_H
#define BREAKER_CORE_OUTSIDE_H

#include "core/owner.h"

#define breaker__trip_outside  breaker_trip_outside
#define breaker__close_outside breaker_close_outside

#endif /* BREAKER_CORE_OUTSIDE_H */
