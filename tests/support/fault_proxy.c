/* SPDX-License-Identifier: MIT */
/*
 * fault_proxy.c - a fault-injecting loopback TCP proxy (fault_proxy.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "fault_proxy.h"

#include <arpa/inet.h>
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

#define MAX_CONNS 256

struct chunk {
    struct chunk *next;
    uint64_t due_ns;
    size_t len, off;
    char data[];
};

struct conn {
    struct fault_proxy *p;
    int down, up; /* client side, server side (-1: none, a silent accept) */
    pthread_t thread;
};

struct fault_proxy {
    int listen_fd, port, upstream_port;
    _Atomic uint64_t latency_ns, jitter_ns;
    _Atomic size_t cut_pending; /* bytes + 1 of an armed cut, 0 = none */
    _Atomic int silent, stop;
    _Atomic unsigned cuts;
    _Atomic uint64_t seed;
    pthread_t acceptor;
    pthread_mutex_t mu; /* conns */
    struct conn *conns[MAX_CONNS];
    int nconns;
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(struct fault_proxy *p) {
    uint64_t z = atomic_fetch_add(&p->seed, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void reset_close(int fd) {
    if (fd < 0) return;
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

static int write_all(int fd, const char *b, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *conn_main(void *arg) {
    struct conn *c = arg;
    struct fault_proxy *p = c->p;
    struct chunk *head = NULL, **tail = &head;
    uint64_t last_due = 0;
    long cut_left = -1; /* reply bytes still forwarded before the reset */
    int dead = 0, silent = c->up < 0;
    char buf[65536];
    while (!dead && !atomic_load(&p->stop)) {
        uint64_t now = now_ns();
        int ms = 5;
        if (head != NULL) {
            uint64_t wait = head->due_ns > now ? head->due_ns - now : 0;
            if (wait / 1000000u < (uint64_t)ms) ms = (int)(wait / 1000000u);
        }
        struct pollfd pfd[2] = {{.fd = c->down, .events = POLLIN}, {.fd = c->up, .events = POLLIN}};
        (void)poll(pfd, 2, ms);
        if (atomic_load(&p->silent)) silent = 1;
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(c->down, buf, sizeof buf);
            if (n <= 0)
                dead = 1;
            else if (!silent && write_all(c->up, buf, (size_t)n) != 0)
                dead = 1;
        }
        if (!dead && c->up >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(c->up, buf, sizeof buf);
            if (n <= 0) {
                dead = 1;
            } else if (!silent) {
                struct chunk *k = malloc(sizeof *k + (size_t)n);
                if (k == NULL) {
                    dead = 1;
                } else {
                    uint64_t lat = atomic_load(&p->latency_ns), jit = atomic_load(&p->jitter_ns);
                    uint64_t due = now_ns() + lat + (jit ? rnd(p) % (jit + 1) : 0);
                    if (due < last_due) due = last_due; /* in order */
                    last_due = due;
                    k->next = NULL;
                    k->due_ns = due;
                    k->len = (size_t)n;
                    k->off = 0;
                    memcpy(k->data, buf, (size_t)n);
                    *tail = k;
                    tail = &k->next;
                }
            }
        }
        now = now_ns();
        while (!dead && head != NULL && head->due_ns <= now) {
            if (silent) break;
            if (cut_left < 0) {
                size_t armed = atomic_exchange(&p->cut_pending, 0);
                if (armed != 0) cut_left = (long)(armed - 1);
            }
            size_t n = head->len - head->off;
            if (cut_left >= 0 && (size_t)cut_left < n) n = (size_t)cut_left;
            if (n > 0 && write_all(c->down, head->data + head->off, n) != 0) {
                dead = 1;
                break;
            }
            head->off += n;
            if (cut_left >= 0) {
                cut_left -= (long)n;
                if (cut_left == 0) {
                    atomic_fetch_add(&p->cuts, 1);
                    dead = 1;
                    break;
                }
            }
            struct chunk *k = head;
            head = k->next;
            if (head == NULL) tail = &head;
            free(k);
        }
    }
    while (head != NULL) {
        struct chunk *k = head;
        head = k->next;
        free(k);
    }
    reset_close(c->down);
    if (c->up >= 0) close(c->up);
    c->down = c->up = -1;
    return NULL;
}

static void *accept_main(void *arg) {
    struct fault_proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pfd = {.fd = p->listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, 5) <= 0) continue;
        int d = accept(p->listen_fd, NULL, NULL);
        if (d < 0) continue;
        int u = -1;
        if (!atomic_load(&p->silent)) {
            u = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET,
                                    .sin_port = htons((uint16_t)p->upstream_port),
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
            if (u >= 0 && connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
                close(u);
                reset_close(d); /* the server is down: refused, as a direct connect is */
                continue;
            }
        }
        struct conn *c = calloc(1, sizeof *c);
        pthread_mutex_lock(&p->mu);
        int room = c != NULL && p->nconns < MAX_CONNS;
        if (room) {
            c->p = p;
            c->down = d;
            c->up = u;
            room = pthread_create(&c->thread, NULL, conn_main, c) == 0;
            if (room) p->conns[p->nconns++] = c;
        }
        pthread_mutex_unlock(&p->mu);
        if (!room) {
            free(c);
            reset_close(d);
            if (u >= 0) close(u);
        }
    }
    return NULL;
}

struct fault_proxy *fault_proxy_start(int upstream_port) {
    struct fault_proxy *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->upstream_port = upstream_port;
    atomic_init(&p->seed, now_ns());
    pthread_mutex_init(&p->mu, NULL);
    p->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->listen_fd, 64) != 0 ||
        getsockname(p->listen_fd, (struct sockaddr *)&a, &len) != 0 ||
        pthread_create(&p->acceptor, NULL, accept_main, p) != 0) {
        perror("fault_proxy_start");
        if (p->listen_fd >= 0) close(p->listen_fd);
        free(p);
        return NULL;
    }
    p->port = ntohs(a.sin_port);
    return p;
}

int fault_proxy_port(const struct fault_proxy *p) { return p->port; }

uint64_t fault_proxy_now_ns(void) { return now_ns(); }

void fault_proxy_nap_ms(long ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void fault_proxy_set_latency(struct fault_proxy *p, uint64_t latency_ns, uint64_t jitter_ns) {
    atomic_store(&p->latency_ns, latency_ns);
    atomic_store(&p->jitter_ns, jitter_ns);
}

void fault_proxy_cut_after(struct fault_proxy *p, size_t bytes) {
    atomic_store(&p->cut_pending, bytes + 1);
}

void fault_proxy_silent(struct fault_proxy *p, int on) { atomic_store(&p->silent, on); }

unsigned fault_proxy_cuts(const struct fault_proxy *p) { return atomic_load(&p->cuts); }

void fault_proxy_stop(struct fault_proxy *p) {
    if (p == NULL) return;
    atomic_store(&p->stop, 1);
    pthread_join(p->acceptor, NULL);
    for (int i = 0; i < p->nconns; i++) {
        pthread_join(p->conns[i]->thread, NULL);
        free(p->conns[i]);
    }
    close(p->listen_fd);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
