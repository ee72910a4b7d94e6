/* SPDX-License-Identifier: MIT */
/*
 * breaker/sqlstate.h - SQLSTATE codes (PostgreSQL's, and the SQL standard's
 * classes) as breaker outcomes.
 *
 * Part of libbreaker itself: no libpq is needed, so a libpq, ODBC or
 * protocol-level client counts the same things. The libpq wrapper
 * (breaker/pq.h, library breaker_pq) classifies its results with it.
 *
 * The table (breaker_classify_sqlstate); docs/postgresql.md gives the
 * reasons. A code is five characters; its class is the first two.
 *   class 00 (success), 01 (warning), 02 (no data)     -> SUCCESS
 *   class 08 connection exception (08000, 08003, 08006, 08001, 08004,
 *     08P01 ...)                                        -> FAILURE
 *   class 53 insufficient resources (53000, 53100 disk full, 53200 out of
 *     memory, 53300 too many connections, 53400)        -> FAILURE
 *   class 57 operator intervention: 57000, 57014 query_canceled (a
 *     statement_timeout, or a cancel request), 57P01 admin_shutdown, 57P02
 *     crash_shutdown, 57P03 cannot_connect_now, 57P04 database_dropped
 *                                                       -> FAILURE
 *     57P05 idle_session_timeout                        -> IGNORED (the
 *                             server closed a session its client left idle)
 *   class 58 system error: 58000, 58030 io_error        -> FAILURE
 *     58P01 undefined_file, 58P02 duplicate_file        -> IGNORED (a file
 *                             a statement named)
 *   class XX internal error (XX000, XX001 data_corrupted, XX002
 *     index_corrupted)                                  -> FAILURE
 *   class F0 configuration file error                   -> FAILURE
 *   40003 statement_completion_unknown                  -> FAILURE (the
 *                             connection was lost during the commit)
 *   class 40 otherwise: 40000, 40001 serialization_failure, 40002, 40P01
 *     deadlock_detected                                 -> IGNORED (a
 *                             conflict between transactions: retry it)
 *   every other well-formed code: 0A feature not supported, 22 data
 *     exception, 23 integrity constraint violation, 25 invalid transaction
 *     state, 28 invalid authorization, 3D invalid catalog name, 42 syntax
 *     error or access rule violation, 54 program limit exceeded, 55 object
 *     not in prerequisite state (55P03 lock_not_available included), P0
 *     PL/pgSQL (RAISE), HV foreign data wrapper, 72 snapshot too old,
 *     classes this table does not know                 -> IGNORED (decided
 *                             by the statement, its data or its caller)
 *   NULL, or not five characters of 0-9 and A-Z         -> FAILURE (a
 *                             broken answer)
 *
 * Thread-safety: pure; reads only its argument.
 */
#ifndef BREAKER_SQLSTATE_H
#define BREAKER_SQLSTATE_H

#include <breaker.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! breaker_classify_sqlstate() :
 *  @return the outcome of a statement that ended with SQLSTATE `code` (a
 *  NUL-terminated string such as PQresultErrorField(res, PG_DIAG_SQLSTATE)
 *  gives), by the table above. Letters must be upper case, as servers send
 *  them. */
BREAKER_API enum breaker_outcome breaker_classify_sqlstate(const char *code);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_SQLSTATE_H */
