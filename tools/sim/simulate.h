/* SPDX-License-Identifier: MIT */
/*
 * sim/simulate.h - a scenario run through the real library on a virtual
 * clock: one service (simulate.c), or a fleet of hosts with local breakers
 * and with the fleet store's model (fleet_sim.c).
 */
#ifndef BREAKER_TOOL_SIM_SIMULATE_H
#define BREAKER_TOOL_SIM_SIMULATE_H

#include "cli/config.h"
#include "sim/scenario.h"
#include "sim/timeline.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tool_sim_result {
    char name[TOOL_NAME_MAX];
    bool has_breaker;
    bool has_ramp; /* the breaker ramps after a recovery (ramp_ns > 0) */
    uint64_t requests;
    uint64_t served;           /* the dependency answered OK */
    uint64_t refused;          /* failed fast: refused by the breaker, the ramp included */
    uint64_t refused_ramp;     /* ...of which refused by the ramp (REJECTED_RAMP) */
    uint64_t abuser_requests;  /* requests sent by the abusive caller */
    uint64_t refused_legit;    /* refused while open or half-open, not the abuser's */
    uint64_t legit_up;         /* legitimate requests outside outage phases */
    uint64_t refused_legit_up; /* ...of which refused while open or half-open */
    uint64_t shed;             /* failed fast: every worker busy */
    uint64_t errors;           /* the dependency answered an error (or refused the connection) */
    uint64_t timeouts;         /* failed slowly: waited for the whole timeout */
    uint64_t saturated_ns;     /* time with every worker busy */
    uint64_t reached;          /* calls that reached the dependency */
    uint64_t reached_outage;
    uint64_t reached_recovery;
    uint64_t knockdowns;      /* overloads that knocked the dependency down */
    uint64_t recovered_at_ns; /* the dependency came back (UINT64_MAX: never) */
    uint64_t closed_after_ns; /* from recovered_at to the final close; UINT64_MAX: never */
    uint64_t transitions;
    uint64_t closes; /* the probes closed the breaker */
    uint64_t probes;
    uint64_t p50_ns, p99_ns; /* response time of every request */
    /* issue 25: a dependency that answers 429 with Retry-After, and shadow
     * mode (the configuration's keys retry_after_opens and shadow). */
    uint64_t throttled;            /* calls the dependency answered 429 */
    bool shadow;                   /* the breaker ran in shadow mode */
    uint64_t would_reject;         /* shadow: calls it would have refused */
    uint64_t shadow_served;        /* ...of which the dependency served */
    struct tool_timeline timeline; /* with every transition */
};

/* Run the scenario once without a breaker (cfg NULL) or with `cfg`.
 * @return 0, or -1 with `msg`. The result owns its timeline. */
int tool_simulate(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                  struct tool_sim_result *out, char *msg, size_t msg_len);
void tool_sim_result_free(struct tool_sim_result *r);

#define TOOL_FLEET_MAX_ROUNDS 1000 /* recovery rounds counted; later ones join the last */

/* One recovery round: a host's n-th HALF_OPEN (local breakers), or the
 * fleet's n-th (fleet store). */
struct tool_fleet_round {
    uint32_t max_in_flight; /* the most probes of this round in flight at once, fleet-wide */
    uint64_t probes;        /* probes sent */
    uint64_t dead;          /* ...that reached the dependency while it was down */
    uint64_t first_ns;      /* the round's first probe */
};

struct tool_fleet_run {
    bool fleet; /* backed by the fleet model, else local breakers alone */
    struct tool_fleet_round rounds[TOOL_FLEET_MAX_ROUNDS];
    uint32_t round_count;
    uint32_t max_in_flight; /* probes in flight at once, any round */
    uint64_t requests, served, refused, shed, reached;
    uint64_t reached_dead; /* calls that reached the dependency while it was down */
    uint64_t probes, probes_dead;
    uint64_t local_trips;       /* hosts' breakers CLOSED -> OPEN (outside trips too) */
    uint64_t local_transitions; /* every transition of every host's breaker */
    uint64_t fleet_trips, fleet_transitions, leases;
    uint64_t outage_at_ns;                /* the first outage phase (UINT64_MAX: none) */
    uint64_t first_open_ns, last_open_ns; /* first and last host to open after it */
    uint32_t hosts_opened;
    uint32_t hosts_closed_at_end;
    uint64_t throttled;            /* calls the dependency answered 429 with Retry-After */
    uint64_t directed_opens;       /* hosts' opens for a Retry-After (retry_after_opens) */
    struct tool_timeline timeline; /* every host's calls; the state of host 1 or the fleet */
};

struct tool_fleet_result {
    char name[TOOL_NAME_MAX];
    uint32_t max_probes; /* the configuration's half_open_max_probes */
    struct tool_fleet_run local, fleet;
};

/* Run the fleet scenario (sc->instances hosts) with `cfg`, once with local
 * breakers and once backed by the fleet model. @return 0, or -1 with `msg`
 * (also when this build cannot drive the model: a shared libbreaker). */
int tool_simulate_fleet(const struct tool_scenario *sc, const struct tool_breaker *cfg,
                        struct tool_fleet_result *out, char *msg, size_t msg_len);
void tool_fleet_result_free(struct tool_fleet_result *r);

#endif /* BREAKER_TOOL_SIM_SIMULATE_H */
