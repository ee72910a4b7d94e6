/* SPDX-License-Identifier: MIT */
/*
 * test_classify_sockets.c - breaker_classify_errno() on the errno real
 * sockets end with, on loopback: a server that accepts and never answers (a
 * read past SO_RCVTIMEO), a connect that the listener's full backlog leaves
 * hanging (past SO_SNDTIMEO), a refused connect and a reset. Each is the
 * dependency failing, and a breaker fed them opens. The timeouts are real
 * (50 ms) but the test decides on the errno the kernel returns, never on how
 * long anything took.
 */
#define _GNU_SOURCE

#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* A listening socket on 127.0.0.1 with a kernel-chosen port. */
static int listen_on_loopback(int backlog, struct sockaddr_in *addr) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof *addr), 0);
    socklen_t len = sizeof *addr;
    assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    assert_int_equal(listen(fd, backlog), 0);
    return fd;
}

static void set_timeout(int fd, int opt, long ms) {
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    assert_int_equal(setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv), 0);
}

/* A client connected to `addr`. */
static int connect_to(const struct sockaddr_in *addr) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (const struct sockaddr *)addr, sizeof *addr), 0);
    return fd;
}

/* A read from a server that accepted and never answers, as a blocking
 * client with a receive timeout makes it: the errno it gives up with. */
static int read_from_a_hung_server(void) {
    struct sockaddr_in addr;
    int lfd = listen_on_loopback(8, &addr);
    int c = connect_to(&addr);
    set_timeout(c, SO_RCVTIMEO, 50);
    char buf[16];
    ssize_t n = recv(c, buf, sizeof buf, 0);
    int err = n < 0 ? errno : 0;
    assert_true(n < 0);
    close(c);
    close(lfd);
    return err;
}

static void a_read_past_its_receive_timeout_is_a_failure(void **state) {
    (void)state;
    int err = read_from_a_hung_server();
    assert_true(err == EAGAIN || err == EWOULDBLOCK);
    assert_int_equal(breaker_classify_errno(err), BREAKER_FAILURE);
}

/* Twenty reads against a server that never answers open a breaker (before,
 * they were IGNORED: 0 failures and a closed breaker). */
static void read_timeouts_open_a_breaker(void **state) {
    (void)state;
    struct fake_clock clock = {0};
    breaker_config cfg;
    test_config(&cfg, &clock, NULL);
    cfg.trip = BREAKER_TRIP_CONSECUTIVE;
    cfg.failure_threshold = 5;
    breaker *b = make_breaker(&cfg);
    int refused = 0;
    for (int i = 0; i < 20; i++) {
        breaker_permit p;
        if (breaker_acquire(b, &p) != BREAKER_OK) {
            refused++;
            continue;
        }
        (void)breaker_complete(b, &p, breaker_classify_errno(read_from_a_hung_server()));
    }
    assert_int_equal(breaker_get_state(b), BREAKER_OPEN);
    assert_int_equal(stats_of(b).failures, 5);
    assert_int_equal(refused, 15);
    test_breaker_destroy(b);
}

/* A connect the listener never takes: backlog 0 and nobody accepting, so the
 * kernel drops the SYNs of every connect past the queue, and a connect with
 * a send timeout gives up with EINPROGRESS. @return that errno, or 0 if the
 * kernel kept accepting (then the test has nothing to show). */
static int connect_past_its_send_timeout(void) {
    struct sockaddr_in addr;
    int lfd = listen_on_loopback(0, &addr);
    int fds[16];
    int n = 0, err = 0;
    while (n < 16 && err == 0) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(c >= 0);
        set_timeout(c, SO_SNDTIMEO, 50);
        fds[n++] = c;
        if (connect(c, (struct sockaddr *)&addr, sizeof addr) != 0) err = errno;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    close(lfd);
    return err;
}

static void a_connect_past_its_send_timeout_is_a_failure(void **state) {
    (void)state;
    int err = connect_past_its_send_timeout();
    if (err == 0) skip(); /* the kernel queued every connect */
    assert_int_equal(err, EINPROGRESS);
    assert_int_equal(breaker_classify_errno(err), BREAKER_FAILURE);
}

static void a_refused_connect_is_a_failure(void **state) {
    (void)state;
    struct sockaddr_in addr;
    int lfd = listen_on_loopback(8, &addr);
    close(lfd); /* nobody listens on that port now */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c >= 0);
    int rc = connect(c, (struct sockaddr *)&addr, sizeof addr);
    int err = rc != 0 ? errno : 0;
    close(c);
    assert_int_equal(err, ECONNREFUSED);
    assert_int_equal(breaker_classify_errno(err), BREAKER_FAILURE);
}

/* The server resets the connection (SO_LINGER 0, then close): the client's
 * read ends with ECONNRESET. */
static void a_reset_is_a_failure(void **state) {
    (void)state;
    struct sockaddr_in addr;
    int lfd = listen_on_loopback(8, &addr);
    int c = connect_to(&addr);
    int s = accept(lfd, NULL, NULL);
    assert_true(s >= 0);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    assert_int_equal(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    close(s);
    set_timeout(c, SO_RCVTIMEO, 2000); /* the RST is there already: no wait */
    char buf[16];
    ssize_t n = recv(c, buf, sizeof buf, 0);
    int err = n < 0 ? errno : 0;
    close(c);
    close(lfd);
    assert_int_equal(err, ECONNRESET);
    assert_int_equal(breaker_classify_errno(err), BREAKER_FAILURE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_read_past_its_receive_timeout_is_a_failure),
        cmocka_unit_test(read_timeouts_open_a_breaker),
        cmocka_unit_test(a_connect_past_its_send_timeout_is_a_failure),
        cmocka_unit_test(a_refused_connect_is_a_failure),
        cmocka_unit_test(a_reset_is_a_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
