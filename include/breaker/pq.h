/* SPDX-License-Identifier: MIT */
/*
 * breaker/pq.h - PostgreSQL (libpq) calls behind a breaker.
 *
 * Library breaker_pq (CMake: find_package(breaker COMPONENTS pq), target
 * breaker::pq),
 * built when libpq is found; it links libpq privately. Include <libpq-fe.h>
 * as well to make the calls: this header names libpq's types by their
 * struct tags only (PGconn is struct pg_conn, PGresult struct pg_result), so
 * it compiles without libpq's headers.
 *
 * What counts (breaker_pq_classify()): a result's SQLSTATE by the table of
 * breaker/sqlstate.h (a connection lost, the server shutting down or out of
 * resources, a statement_timeout are failures; a syntax error, a unique
 * violation, a serialization failure are not); a call without a result, or
 * an error libpq raised itself without an SQLSTATE, is a FAILURE when the
 * connection is broken (PQstatus() CONNECTION_BAD: the server died, the
 * socket was refused or reset) and IGNORED otherwise (a local error: out of
 * memory, a call out of turn). docs/postgresql.md gives the reasons.
 *
 * Refused calls never reach libpq: nothing is sent and no connection is
 * made. Every admitted call is completed exactly once by these functions.
 *
 * The caller (the _from variants): breaker_pq_connect_from(),
 * breaker_pq_exec_from() and breaker_pq_send_from() take the source of the
 * call, admit it with breaker_acquire_from() and complete it with
 * breaker_complete_from(), on every path (the query's results, a failed
 * send, breaker_pq_abandon()), so a breaker with failing-source diversity
 * (min_failing_sources, see breaker_complete_from) trips only when enough
 * distinct callers fail, one tenant whose own statements fail cannot open
 * it for everyone, and one whose statements fail or hang cannot own its
 * recovery (a probe's timeout is its caller's failure). A source is a non-zero 64-bit
 * key for whoever the call is for (a tenant, a user, a job), the same key on
 * every call and in every process: a hash of its name; the 64-bit FNV-1a of
 * the name (0 taken as 1) gives the keys `breaker exec --source` and
 * `breaker replay` use. 0 names nobody, as breaker_complete() does; the
 * functions without _from are their _from variant with source 0.
 *
 * Thread-safety: as libpq's: a PGconn is used by one thread at a time. The
 * breaker may be shared by any number of threads and connections. The
 * source changes neither.
 */
#ifndef BREAKER_PQ_H
#define BREAKER_PQ_H

#include <breaker.h>
#include <breaker/sqlstate.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pg_conn;   /* PGconn */
struct pg_result; /* PGresult */

/*! breaker_pq_classify() :
 *  @return the outcome of one result `res` (NULL: the call gave none) of a
 *  statement on `conn` (may be NULL), by the rules above. Reads only. */
BREAKER_API enum breaker_outcome breaker_pq_classify(const struct pg_conn *conn,
                                                     const struct pg_result *res);

/*! breaker_pq_connect() :
 *  PQconnectdb(conninfo) behind `b`. Always writes `*conn` (NULL when the
 *  call was refused). A connection that reaches CONNECTION_OK is a SUCCESS;
 *  one that does not is a FAILURE (libpq gives no SQLSTATE for a failed
 *  connection, so a wrong password counts as well: keep credential
 *  mistakes out of production breakers, or connect without this wrapper).
 *  @return BREAKER_OK when the call was made (`*conn` is libpq's answer,
 *  possibly a bad connection: check PQstatus() and PQfinish() it either
 *  way), or BREAKER_REJECTED_OPEN / BREAKER_REJECTED_HALF_OPEN /
 *  BREAKER_REJECTED_RAMP when the breaker refused it (no socket opened). */
BREAKER_API BREAKER_NODISCARD int breaker_pq_connect(breaker *b, const char *conninfo,
                                                     struct pg_conn **conn)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_pq_connect_from() :
 *  breaker_pq_connect() for the caller `source` (0 = none), completed with
 *  breaker_complete_from(). Same returns. */
BREAKER_API BREAKER_NODISCARD int breaker_pq_connect_from(breaker *b, const char *conninfo,
                                                          struct pg_conn **conn, uint64_t source)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_pq_exec() :
 *  PQexec(conn, sql) behind `b`, classified by breaker_pq_classify() and
 *  completed. Always writes `*res` (NULL when refused, or when PQexec gave
 *  none) and, if `outcome` is not NULL, `*outcome` (IGNORED when refused).
 *  @return BREAKER_OK when the statement was sent (PQclear() `*res`), or a
 *  BREAKER_REJECTED_* status when the breaker refused it (nothing sent). */
BREAKER_API BREAKER_NODISCARD int breaker_pq_exec(breaker *b, struct pg_conn *conn, const char *sql,
                                                  struct pg_result **res,
                                                  enum breaker_outcome *outcome)
    BREAKER_NONNULL(1, 3, 4);

/*! breaker_pq_exec_from() :
 *  breaker_pq_exec() for the caller `source` (0 = none), completed with
 *  breaker_complete_from(). Same returns. */
BREAKER_API BREAKER_NODISCARD int breaker_pq_exec_from(breaker *b, struct pg_conn *conn,
                                                       const char *sql, struct pg_result **res,
                                                       enum breaker_outcome *outcome,
                                                       uint64_t source) BREAKER_NONNULL(1, 3, 4);

/* One asynchronous query in flight: caller-owned, plain memory, kept from
 * breaker_pq_send() to the breaker_pq_get_result() that returns NULL. Its
 * fields are private. */
typedef struct breaker_pq_query breaker_pq_query;
struct breaker_pq_query {
    breaker *b;
    breaker_permit permit;
    enum breaker_outcome outcome; /* the worst outcome of its results so far */
    int active;                   /* 1 from the send to the last result */
    uint64_t source;              /* the caller given to breaker_pq_send_from() */
};

/*! breaker_pq_send() :
 *  PQsendQuery(conn, sql) behind `b`, for a query run with libpq's
 *  asynchronous calls: poll PQsocket(), PQconsumeInput() and PQisBusy() as
 *  usual, and take its results with breaker_pq_get_result() instead of
 *  PQgetResult().
 *  @return BREAKER_OK: sent, `q` is in flight; a BREAKER_REJECTED_* status:
 *  refused, nothing sent, `q` idle; BREAKER_EIO: PQsendQuery() failed (see
 *  PQerrorMessage()), the call is already completed (FAILURE when the
 *  connection is broken, else IGNORED) and `q` idle. */
BREAKER_API BREAKER_NODISCARD int breaker_pq_send(breaker *b, struct pg_conn *conn, const char *sql,
                                                  breaker_pq_query *q) BREAKER_NONNULL(1, 2, 3, 4);

/*! breaker_pq_send_from() :
 *  breaker_pq_send() for the caller `source` (0 = none): `q` keeps it, and
 *  the query is completed with breaker_complete_from() and `source`,
 *  whether by a failed send, by breaker_pq_get_result() or by
 *  breaker_pq_abandon(). Same returns. */
BREAKER_API BREAKER_NODISCARD int breaker_pq_send_from(breaker *b, struct pg_conn *conn,
                                                       const char *sql, breaker_pq_query *q,
                                                       uint64_t source) BREAKER_NONNULL(1, 2, 3, 4);

/*! breaker_pq_get_result() :
 *  PQgetResult(conn) for the query `q`: each result is folded into the
 *  query's outcome (a FAILURE among its results wins over IGNORED, and
 *  IGNORED over SUCCESS), and when PQgetResult() answers NULL, the query
 *  is over and its permit is completed with that outcome, once. Call it on
 *  the connection's thread; the breaker may be completed from any thread.
 *  @return the result, to PQclear() as usual, or NULL once the query is
 *  done (`q` is then idle; calling again returns NULL and completes
 *  nothing). */
BREAKER_API struct pg_result *breaker_pq_get_result(struct pg_conn *conn, breaker_pq_query *q)
    BREAKER_NONNULL(1, 2);

/*! breaker_pq_abandon() :
 *  Complete a query in flight that the caller gives up on without reading
 *  its results (after PQcancel(), before PQfinish()), with `outcome`:
 *  BREAKER_CANCELLED when the caller's own deadline or shutdown ended it,
 *  BREAKER_FAILURE when the server took too long. Does nothing for an idle
 *  `q`. The source is the one `q` was sent with (0 for breaker_pq_send()).
 *  @return breaker_complete_from()'s status, or BREAKER_OK when idle. */
BREAKER_API int breaker_pq_abandon(breaker_pq_query *q, enum breaker_outcome outcome)
    BREAKER_NONNULL(1);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_PQ_H */
