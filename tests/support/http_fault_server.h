/* SPDX-License-Identifier: MIT */
/*
 * http_fault_server.h - a real HTTP/1.1 server on 127.0.0.1 (a free port)
 * for the libcurl integration's tests, whose answer the test chooses: a
 * healthy 200, a 404, a 503 with Retry-After in seconds or as an HTTP-date,
 * an accepted connection that is never answered, a body cut by a reset, a
 * body that trickles. It counts the connections it accepted, so a test can
 * tell that a refused call opened none. Threads: one accepting, one per
 * connection; test_http_stop() ends and joins them all.
 */
#ifndef BREAKER_TEST_HTTP_FAULT_SERVER_H
#define BREAKER_TEST_HTTP_FAULT_SERVER_H

enum http_fault {
    HTTP_FAULT_OK,             /* 200, body "ok\n" */
    HTTP_FAULT_NOT_FOUND,      /* 404 */
    HTTP_FAULT_503_SECONDS,    /* 503, Retry-After: 7 */
    HTTP_FAULT_503_DATE,       /* 503, Retry-After: the HTTP-date 30 s from now */
    HTTP_FAULT_429_SECONDS,    /* 429, Retry-After: 7 */
    HTTP_FAULT_SILENT,         /* reads the request, answers nothing; closes after 5 s */
    HTTP_FAULT_RESET_MID_BODY, /* headers for 1000 bytes, 100 bytes, then a reset (RST) */
    HTTP_FAULT_SLOW_BODY       /* headers for 100 bytes, then one byte every 200 ms */
};

struct test_http;

/* Start a server answering `fault`. @return the server, or NULL with a
 * message on stderr. */
struct test_http *test_http_start(enum http_fault fault);

/* Change the answer for connections accepted from now on. */
void test_http_set(struct test_http *s, enum http_fault fault);

/* @return the TCP port on 127.0.0.1. */
int test_http_port(const struct test_http *s);

/* @return the number of connections accepted so far. */
unsigned test_http_accepted(struct test_http *s);

/* Close every connection, stop and join every thread, free `s`. NULL is a
 * no-op. */
void test_http_stop(struct test_http *s);

#endif
