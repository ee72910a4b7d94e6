/* SPDX-License-Identifier: MIT */
/*
 * http_fault_server.c - a real HTTP server with chosen faults for the tests
 * (see http_fault_server.h).
 */
#define _GNU_SOURCE
#include "http_fault_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 256

struct connection {
    struct test_http *server;
    int fd;
    enum http_fault fault;
    pthread_t thread;
};

struct test_http {
    int listen_fd;
    int port;
    int stop_pipe[2]; /* written once at stop: readable forever after */
    _Atomic int fault;
    _Atomic unsigned accepted;
    pthread_t acceptor;
    pthread_mutex_t lock;
    unsigned nconn;
    struct connection conns[MAX_CONNECTIONS];
};

/* Waits until `fd` is readable or the server stops, at most `ms` (-1: no
 * limit). @return 1 readable, 0 timed out, -1 stopping. */
static int wait_readable(struct test_http *s, int fd, int ms) {
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop_pipe[0], .events = POLLIN}};
    int n = poll(p, 2, ms);
    if (n > 0 && (p[1].revents & POLLIN)) return -1;
    return n > 0 ? 1 : 0;
}

/* Reads the request's head (up to the blank line). @return 0, or -1. */
static int read_request(struct test_http *s, int fd) {
    char buf[4096];
    size_t len = 0;
    while (len < sizeof(buf) - 1) {
        if (wait_readable(s, fd, -1) != 1) return -1;
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0) return -1;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") != NULL) return 0;
    }
    return -1;
}

static void send_text(int fd, const char *text) {
    (void)send(fd, text, strlen(text), MSG_NOSIGNAL);
}

static void answer_503_date(int fd) {
    char date[64], head[256];
    time_t at = time(NULL) + 30;
    struct tm tm;
    gmtime_r(&at, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(head, sizeof(head),
             "HTTP/1.1 503 Service Unavailable\r\nRetry-After: %s\r\nContent-Length: 0\r\n"
             "Connection: close\r\n\r\n",
             date);
    send_text(fd, head);
}

static void reset_mid_body(int fd) {
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n");
    char body[100];
    memset(body, 'x', sizeof(body));
    (void)send(fd, body, sizeof(body), MSG_NOSIGNAL);
    struct linger l = {.l_onoff = 1, .l_linger = 0}; /* close sends RST */
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static void slow_body(struct test_http *s, int fd) {
    send_text(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < 100; i++) {
        if (wait_readable(s, s->stop_pipe[0], 200) != 0) return;
        if (send(fd, "x", 1, MSG_NOSIGNAL) != 1) return; /* the client left */
    }
}

static void *serve_connection(void *arg) {
    struct connection *c = arg;
    struct test_http *s = c->server;
    if (read_request(s, c->fd) == 0) {
        switch (c->fault) {
        case HTTP_FAULT_OK:
            send_text(c->fd,
                      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n");
            break;
        case HTTP_FAULT_NOT_FOUND:
            send_text(c->fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                             "Connection: close\r\n\r\n");
            break;
        case HTTP_FAULT_503_SECONDS:
            send_text(c->fd, "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n"
                             "Content-Length: 0\r\nConnection: close\r\n\r\n");
            break;
        case HTTP_FAULT_503_DATE:
            answer_503_date(c->fd);
            break;
        case HTTP_FAULT_429_SECONDS:
            send_text(c->fd, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\n"
                             "Content-Length: 0\r\nConnection: close\r\n\r\n");
            break;
        case HTTP_FAULT_SILENT:
            /* Until the client leaves, the server stops, or 5 s. */
            while (wait_readable(s, c->fd, 5000) == 1) {
                char b[256];
                if (read(c->fd, b, sizeof(b)) <= 0) break;
            }
            break;
        case HTTP_FAULT_RESET_MID_BODY:
            reset_mid_body(c->fd);
            break;
        case HTTP_FAULT_SLOW_BODY:
            slow_body(s, c->fd);
            break;
        }
    }
    close(c->fd);
    return NULL;
}

static void *accept_loop(void *arg) {
    struct test_http *s = arg;
    while (wait_readable(s, s->listen_fd, -1) == 1) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        atomic_fetch_add(&s->accepted, 1);
        pthread_mutex_lock(&s->lock);
        struct connection *c = s->nconn < MAX_CONNECTIONS ? &s->conns[s->nconn] : NULL;
        if (c != NULL) {
            *c = (struct connection){.server = s, .fd = fd, .fault = atomic_load(&s->fault)};
            if (pthread_create(&c->thread, NULL, serve_connection, c) == 0)
                s->nconn++;
            else
                c = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        if (c == NULL) close(fd);
    }
    return NULL;
}

struct test_http *test_http_start(enum http_fault fault) {
    struct test_http *s = calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    atomic_init(&s->fault, (int)fault);
    pthread_mutex_init(&s->lock, NULL);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(s->listen_fd, 64) != 0 ||
        getsockname(s->listen_fd, (struct sockaddr *)&a, &len) != 0 ||
        pipe2(s->stop_pipe, O_CLOEXEC) != 0 ||
        pthread_create(&s->acceptor, NULL, accept_loop, s) != 0) {
        perror("http_fault_server");
        if (s->listen_fd >= 0) close(s->listen_fd);
        free(s);
        return NULL;
    }
    s->port = ntohs(a.sin_port);
    return s;
}

void test_http_set(struct test_http *s, enum http_fault fault) {
    atomic_store(&s->fault, (int)fault);
}

int test_http_port(const struct test_http *s) { return s->port; }

unsigned test_http_accepted(struct test_http *s) { return atomic_load(&s->accepted); }

void test_http_stop(struct test_http *s) {
    if (s == NULL) return;
    if (write(s->stop_pipe[1], "x", 1) != 1) perror("http_fault_server: stop");
    pthread_join(s->acceptor, NULL);
    close(s->listen_fd);
    for (unsigned i = 0; i < s->nconn; i++)
        pthread_join(s->conns[i].thread, NULL);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
