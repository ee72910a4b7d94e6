/* SPDX-License-Identifier: MIT */
/*
 * pq.c - libpq calls behind a breaker (include/breaker/pq.h). Drives the
 * breaker through libbreaker's exported API only.
 */
#include "breaker/pq.h"

#include <libpq-fe.h>
#include <stddef.h>

/* An answer without an SQLSTATE: libpq's own error, which says something
 * about the server only when the connection is broken. */
static enum breaker_outcome without_sqlstate(const PGconn *conn) {
    return conn == NULL || PQstatus(conn) == CONNECTION_BAD ? BREAKER_FAILURE : BREAKER_IGNORED;
}

enum breaker_outcome breaker_pq_classify(const PGconn *conn, const PGresult *res) {
    if (res == NULL) return without_sqlstate(conn);
    /* An if-chain: ExecStatusType grows with libpq versions (-Wswitch-enum). */
    ExecStatusType st = PQresultStatus(res);
    if (st == PGRES_BAD_RESPONSE) return BREAKER_FAILURE; /* the server broke the protocol */
    if (st == PGRES_FATAL_ERROR) {
        const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        return code != NULL ? breaker_classify_sqlstate(code) : without_sqlstate(conn);
    }
#ifdef LIBPQ_HAS_PIPELINING
    /* Not run because an earlier statement of the pipeline failed: that
     * statement's result carries the evidence. */
    if (st == PGRES_PIPELINE_ABORTED) return BREAKER_IGNORED;
#endif
    /* The server answered: rows, a command's tag, a COPY under way, an empty
     * query, a notice. */
    return BREAKER_SUCCESS;
}

int breaker_pq_connect_from(breaker *b, const char *conninfo, PGconn **conn, uint64_t source) {
    *conn = NULL;
    breaker_permit permit;
    int rc = breaker_acquire_from(b, &permit, source);
    if (rc != BREAKER_OK) return rc;
    *conn = PQconnectdb(conninfo);
    enum breaker_outcome out =
        *conn != NULL && PQstatus(*conn) == CONNECTION_OK ? BREAKER_SUCCESS : BREAKER_FAILURE;
    (void)breaker_complete_from(b, &permit, out, source);
    return BREAKER_OK;
}

int breaker_pq_connect(breaker *b, const char *conninfo, PGconn **conn) {
    return breaker_pq_connect_from(b, conninfo, conn, 0);
}

int breaker_pq_exec_from(breaker *b, PGconn *conn, const char *sql, PGresult **res,
                         enum breaker_outcome *outcome, uint64_t source) {
    *res = NULL;
    if (outcome != NULL) *outcome = BREAKER_IGNORED;
    breaker_permit permit;
    int rc = breaker_acquire_from(b, &permit, source);
    if (rc != BREAKER_OK) return rc;
    *res = PQexec(conn, sql);
    enum breaker_outcome out = breaker_pq_classify(conn, *res);
    (void)breaker_complete_from(b, &permit, out, source);
    if (outcome != NULL) *outcome = out;
    return BREAKER_OK;
}

int breaker_pq_exec(breaker *b, PGconn *conn, const char *sql, PGresult **res,
                    enum breaker_outcome *outcome) {
    return breaker_pq_exec_from(b, conn, sql, res, outcome, 0);
}

int breaker_pq_send_from(breaker *b, PGconn *conn, const char *sql, breaker_pq_query *q,
                         uint64_t source) {
    q->b = b;
    q->active = 0;
    q->outcome = BREAKER_SUCCESS;
    q->source = source;
    int rc = breaker_acquire_from(b, &q->permit, source);
    if (rc != BREAKER_OK) return rc;
    if (PQsendQuery(conn, sql) != 1) {
        (void)breaker_complete_from(b, &q->permit, without_sqlstate(conn), source);
        return BREAKER_EIO;
    }
    q->active = 1;
    return BREAKER_OK;
}

int breaker_pq_send(breaker *b, PGconn *conn, const char *sql, breaker_pq_query *q) {
    return breaker_pq_send_from(b, conn, sql, q, 0);
}

/* The worse of two outcomes, for a query's several results. */
static enum breaker_outcome worse(enum breaker_outcome a, enum breaker_outcome b) {
    if (a == BREAKER_FAILURE || b == BREAKER_FAILURE) return BREAKER_FAILURE;
    if (a == BREAKER_IGNORED || b == BREAKER_IGNORED) return BREAKER_IGNORED;
    return a == BREAKER_CANCELLED ? a : b;
}

PGresult *breaker_pq_get_result(PGconn *conn, breaker_pq_query *q) {
    if (!q->active) return NULL;
    PGresult *res = PQgetResult(conn);
    if (res != NULL) {
        q->outcome = worse(q->outcome, breaker_pq_classify(conn, res));
        return res;
    }
    /* No more results: the query is over. A connection lost before any
     * result came shows only here. */
    if (PQstatus(conn) == CONNECTION_BAD) q->outcome = BREAKER_FAILURE;
    q->active = 0;
    (void)breaker_complete_from(q->b, &q->permit, q->outcome, q->source);
    return NULL;
}

int breaker_pq_abandon(breaker_pq_query *q, enum breaker_outcome outcome) {
    if (!q->active) return BREAKER_OK;
    q->active = 0;
    return breaker_complete_from(q->b, &q->permit, outcome, q->source);
}
