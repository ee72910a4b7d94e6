/* SPDX-License-Identifier: MIT */
/*
 * owner.h - how a component of the library owns the breakers it creates, and
 * how a backend gates their probes: the public experimental seam
 * (breaker/backend.h), for the library's own files.
 *
 * The registry and the backends create breakers on a user's behalf and must
 * recognise them again from a bare `breaker *`: to drop a reference, to
 * answer its name, to record its transitions. That identity is an explicit
 * field of the handle (breaker_owner), set at creation and never copied into
 * the configuration, so a breaker built from breaker_get_config() of an owned
 * breaker is just a breaker: nobody's, with the user's own callback. A
 * backend whose scope bounds probes beyond the local breaker (the fleet)
 * puts a breaker_probe_gate on the handle the same way.
 */
#ifndef BREAKER_CORE_OWNER_H
#define BREAKER_CORE_OWNER_H

#ifndef BREAKER_BACKEND_EXPERIMENTAL
#define BREAKER_BACKEND_EXPERIMENTAL
#endif
#include "breaker/backend.h"

#endif /* BREAKER_CORE_OWNER_H */
