/* SPDX-License-Identifier: MIT */
/*
 * metrics_server.c - serve a breaker registry's metrics and health reports
 * over HTTP on the loopback interface, with libmicrohttpd.
 *
 * A background thread plays a service with three dependencies (one healthy,
 * one flaky, one down) through named breakers, so there is something to see:
 *
 *   GET /metrics         Prometheus text exposition (scrape this)
 *   GET /health          {"status":"ok"} or {"status":"degraded"}: no
 *                        dependency names, no counts, but "degraded" says a
 *                        dependency is failing (for a load balancer's check)
 *   GET /health/details  the operators' JSON report (names every dependency:
 *                        keep it off public interfaces)
 *
 * Usage: metrics_server [--port N] [--port-file PATH]
 *   --port N          TCP port on 127.0.0.1 (default 0: the system picks one)
 *   --port-file PATH  write the bound port there once the server is ready
 * Stops cleanly on SIGINT or SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L

#include <breaker.h>
#include <breaker/registry.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

#define MS 1000000ull

/* ---- The simulated service ------------------------------------------------- */

struct service {
    breaker_registry *reg;
    atomic_int stop;
};

/* The dependencies and how often each fails, in percent. */
static const struct {
    const char *name;
    int failure_percent;
} deps[] = {
    {"inventory.lookup", 2},
    {"payments.charge", 45},
    {"recommendations.fetch", 100},
};

static void *traffic(void *arg) {
    struct service *svc = arg;
    unsigned seed = 42;
    struct timespec tick = {0, 20 * 1000 * 1000};
    while (!atomic_load(&svc->stop)) {
        for (size_t i = 0; i < sizeof(deps) / sizeof(deps[0]); i++) {
            breaker *b;
            /* A real service would keep the handle; getting it per call shows
             * that a lookup is cheap (lock-free) and always safe. */
            if (breaker_registry_get(svc->reg, deps[i].name, &b) != BREAKER_OK) continue;
            breaker_permit p;
            if (breaker_acquire(b, &p) == BREAKER_OK) {
                int fails = (int)(rand_r(&seed) % 100) < deps[i].failure_percent;
                (void)breaker_complete(b, &p, fails ? BREAKER_FAILURE : BREAKER_SUCCESS);
            }
            breaker_registry_release(svc->reg, b);
        }
        nanosleep(&tick, NULL);
    }
    return NULL;
}

/* ---- HTTP ------------------------------------------------------------------- */

/* The allocating exports write the whole text in one call into a buffer the
 * caller frees: no size to guess, no retry when breakers appear meanwhile. */
typedef int export_fn(breaker_registry *reg, char **out, size_t *len);

static mhd_result reply(struct MHD_Connection *conn, unsigned status, const char *type, char *body,
                        size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    mhd_result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static mhd_result reply_static(struct MHD_Connection *conn, unsigned status, const char *text) {
    char *body = strdup(text);
    if (body == NULL) return MHD_NO;
    return reply(conn, status, "text/plain; charset=utf-8", body, strlen(body));
}

static mhd_result handle(void *cls, struct MHD_Connection *conn, const char *url,
                         const char *method, const char *version, const char *upload_data,
                         size_t *upload_data_size, void **req_cls) {
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    struct service *svc = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reply_static(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");

    export_fn *fn = NULL;
    const char *type = "application/json";
    if (strcmp(url, "/metrics") == 0) {
        fn = breaker_registry_export_prometheus_alloc;
        type = "text/plain; version=0.0.4; charset=utf-8";
    } else if (strcmp(url, "/health") == 0) {
        fn = breaker_registry_export_health_json_alloc;
    } else if (strcmp(url, "/health/details") == 0) {
        fn = breaker_registry_export_json_alloc;
    } else {
        return reply_static(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    }
    size_t len = 0;
    char *body = NULL;
    if (fn(svc->reg, &body, &len) != BREAKER_OK)
        return reply_static(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "export failed\n");
    return reply(conn, MHD_HTTP_OK, type, body, len);
}

/* ---- Main ------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, unsigned *port, const char **port_file) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            char *end;
            unsigned long v = strtoul(argv[++i], &end, 10);
            if (*end != '\0' || v > 65535) return -1;
            *port = (unsigned)v;
        } else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc) {
            *port_file = argv[++i];
        } else {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    unsigned port = 0;
    const char *port_file = NULL;
    if (parse_args(argc, argv, &port, &port_file) != 0) {
        fprintf(stderr, "usage: %s [--port N] [--port-file PATH]\n", argv[0]);
        return 2;
    }

    /* Block the stop signals in every thread (the server's threads inherit
     * the mask); main waits for them with sigwait(). */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    breaker_registry_config rc;
    breaker_registry_config_init(&rc);
    rc.max_breakers = 64;
    rc.defaults.trip = BREAKER_TRIP_COUNT_WINDOW;
    rc.defaults.window_size = 20;
    rc.defaults.min_calls = 10;
    rc.defaults.open_ns = 2000 * MS;
    rc.defaults.open_max_ns = 10000 * MS;
    rc.defaults.half_open_successes = 2;
    rc.flap_threshold = 6;
    rc.flap_window_ns = 60000 * MS;
    struct service svc = {0};
    if (breaker_registry_create(&rc, &svc.reg) != BREAKER_OK) {
        fprintf(stderr, "metrics_server: cannot create the registry\n");
        return 1;
    }

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, handle,
                         &svc, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&addr,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (d == NULL) {
        fprintf(stderr, "metrics_server: cannot listen on 127.0.0.1:%u\n", port);
        breaker_registry_destroy(svc.reg);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    unsigned bound = info != NULL ? info->port : port;

    pthread_t t;
    pthread_create(&t, NULL, traffic, &svc);

    printf("metrics_server: listening on http://127.0.0.1:%u/metrics\n", bound);
    fflush(stdout);
    if (port_file != NULL) {
        /* Written under a temporary name and renamed, so a reader never sees
         * a half-written port. */
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (f == NULL || fprintf(f, "%u\n", bound) < 0 || fclose(f) != 0 ||
            rename(tmp, port_file) != 0) {
            fprintf(stderr, "metrics_server: cannot write %s\n", port_file);
            atomic_store(&svc.stop, 1);
        }
    }

    if (!atomic_load(&svc.stop)) {
        int sig = 0;
        sigwait(&stop_signals, &sig);
    }
    atomic_store(&svc.stop, 1);
    pthread_join(t, NULL);
    MHD_stop_daemon(d);
    breaker_registry_destroy(svc.reg);
    return 0;
}
