/* SPDX-License-Identifier: MIT */
/*
 * stripes.c - which counter stripe a thread writes.
 *
 * The first time a thread touches any breaker it takes a stripe: one of the
 * BREAKER__OWNED_STRIPES owned stripes if one is free (it then is the only
 * writer of that stripe in every breaker, and counts with plain loads and
 * stores), otherwise one of the shared stripes, round-robin. An owned stripe
 * goes back to the pool when its thread exits, through a thread-specific-data
 * destructor, so thread pools that come and go do not exhaust it.
 *
 * This pool and the thread-local index are process-wide state. They decide
 * which cache line a thread writes, never what is counted.
 *
 * Blocks that several processes map (a store file) cannot use the process
 * pool: two processes would each think they own stripe 0. Their owned
 * stripes are claimed in the host domain instead: a table of
 * BREAKER__OWNED_STRIPES words in the store file, one per owned stripe,
 * holding the claiming process's pid and start time (0: free). A thread
 * claims a word with a CAS the first time it calls a breaker of that store
 * (a breaker__host_stripe() on its general path), and from then on writes
 * that stripe of every block in the store with plain stores on the same
 * short paths as a heap breaker: the handle's owned_tls points them at
 * breaker__tls_host_offset instead of breaker__tls_owned_offset. A thread
 * that exits gives its word back (a thread-specific-data destructor); a
 * process that dies cannot, and a claimer that finds no free word takes one
 * whose process is gone (no such pid, or a pid reused by a process started
 * at another time). Threads without a claim write the shared stripes with
 * atomic read-modify-writes. A process takes part in the domains of up to
 * BREAKER__HOST_DOMAINS store files (the first it opens); the blocks of
 * others count atomically.
 */
#define _GNU_SOURCE
#include "common/platform.h"
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* initial-exec on the definitions too: inside a shared library the
 * declarations' attribute alone leaves this file's own accesses general-
 * dynamic (a __tls_get_addr call each). */
_Thread_local unsigned breaker__tls_stripe_plus_one __attribute__((tls_model("initial-exec")));
_Thread_local uintptr_t breaker__tls_owned_offset __attribute__((tls_model("initial-exec")));
_Thread_local uintptr_t breaker__tls_host_offset[BREAKER__HOST_DOMAINS]
    __attribute__((tls_model("initial-exec")));
/* The word handles of other shared blocks read: never written, always 0. */
static _Thread_local uintptr_t owned_none __attribute__((tls_model("initial-exec")));

static _Atomic uint64_t owned_in_use; /* bit i: owned stripe i is taken */
static _Atomic unsigned next_shared;
static pthread_key_t release_key;
static pthread_once_t release_key_once = PTHREAD_ONCE_INIT;
static int release_key_ok;

/* ---- Per-CPU stripes -------------------------------------------------------------
 * With rseq, a heap block's stripes BREAKER__CPU_FIRST.. belong to the
 * process's concurrency ids rather than to threads (stripes.h), so the pool
 * owns fewer and shares the ones after the per-CPU run. glibc 2.35+
 * registers every thread's rseq area and exports where it is; the kernel
 * reports the fields it fills in AT_RSEQ_FEATURE_SIZE (28 or more: mm_cid,
 * Linux 6.3+). Decided once, before the pool hands out a stripe, and never
 * changed: the pool's split must not move under threads that hold stripes. */
#if BREAKER__CPU_SEQUENCES && defined(__GLIBC__)
#include <dlfcn.h>
#include <sys/auxv.h>
#define AT_RSEQ_FEATURE_SIZE_ 27 /* linux/auxvec.h, Linux 6.3 */
#endif

static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static uintptr_t cpu_rseq; /* written once, under cpu_once */

static void cpu_detect(void) {
#if BREAKER__CPU_SEQUENCES && defined(__GLIBC__)
    const char *off = getenv("BREAKER_CPU_STRIPES");
    if (off != NULL && strcmp(off, "0") == 0) return; /* documented switch */
    /* Looked up, not linked: a reference to them would make the library
     * need glibc 2.35 to load at all. (A static executable may find neither:
     * then the thread-owned scheme.) */
    const ptrdiff_t *offset = (const ptrdiff_t *)dlsym(RTLD_DEFAULT, "__rseq_offset");
    const unsigned int *size = (const unsigned int *)dlsym(RTLD_DEFAULT, "__rseq_size");
    if (offset == NULL || size == NULL || *size < 20) return;
    if (getauxval(AT_RSEQ_FEATURE_SIZE_) < BREAKER__RSEQ_MM_CID + 4) return;
    uintptr_t tp = breaker__thread_pointer(), rs = (uintptr_t)*offset;
    /* This thread's registration took (a failed one leaves cpu_id negative). */
    const volatile int32_t *cpu_id = (const volatile int32_t *)(tp + rs + BREAKER__RSEQ_CPU_ID);
    if (rs == 0 || *cpu_id < 0) return;
    cpu_rseq = rs;
#endif
}

uintptr_t breaker__cpu_stripes_rseq(void) {
    pthread_once(&cpu_once, cpu_detect);
    return cpu_rseq;
}

/* The owned stripes the pool hands out, and the first shared one. */
static unsigned pool_owned(void) {
    return breaker__cpu_stripes_rseq() != 0 ? BREAKER__CPU_FIRST : BREAKER__OWNED_STRIPES;
}
static unsigned pool_shared_first(void) {
    return breaker__cpu_stripes_rseq() != 0 ? BREAKER__CPU_FIRST + BREAKER__CPU_STRIPES
                                            : BREAKER__OWNED_STRIPES;
}

static unsigned take_shared(void) {
    unsigned first = pool_shared_first();
    return first + atomic_fetch_add_explicit(&next_shared, 1, memory_order_relaxed) %
                       (BREAKER__STRIPES - first);
}

static void release_owned(void *value) {
    unsigned i = (unsigned)(uintptr_t)value - 1;
    /* Anything this thread still does (another library's destructor calling
     * a breaker) goes through a shared stripe from now on. */
    breaker__tls_owned_offset = 0;
    breaker__tls_stripe_plus_one = take_shared() + 1;
    /* Release: the next owner's acquire CAS sees this thread's last plain
     * stores, so its first load-and-store continues from them. */
    atomic_fetch_and_explicit(&owned_in_use, ~(UINT64_C(1) << i), memory_order_release);
}

static void make_release_key(void) {
    release_key_ok = pthread_key_create(&release_key, release_owned) == 0;
}

unsigned breaker__stripe_assign(void) {
    pthread_once(&release_key_once, make_release_key);
    unsigned index = BREAKER__STRIPES;
    if (release_key_ok) {
        const uint64_t owned_mask = (UINT64_C(1) << pool_owned()) - 1;
        uint64_t used = atomic_load_explicit(&owned_in_use, memory_order_relaxed);
        while ((~used & owned_mask) != 0) {
            unsigned i = (unsigned)__builtin_ctzll(~used & owned_mask);
            /* Acquire: pairs with the release in release_owned() of the
             * previous owner of stripe i. */
            if (atomic_compare_exchange_weak_explicit(&owned_in_use, &used,
                                                      used | (UINT64_C(1) << i),
                                                      memory_order_acquire, memory_order_relaxed)) {
                if (pthread_setspecific(release_key, (void *)(uintptr_t)(i + 1)) == 0) {
                    index = i;
                } else {
                    atomic_fetch_and_explicit(&owned_in_use, ~(UINT64_C(1) << i),
                                              memory_order_release);
                }
                break;
            }
        }
    }
    if (index == BREAKER__STRIPES) index = take_shared();
    breaker__tls_stripe_plus_one = index + 1;
    breaker__tls_owned_offset =
        index < pool_owned() ? index * sizeof(struct breaker__stripe) + 1 : 0;
    return index;
}

/* ---- Which word a handle reads ------------------------------------------------*/

#if BREAKER__OWNED_TLS_DIRECT
/* An initial-exec variable lies at the same offset from the thread pointer
 * in every thread. */
static uintptr_t tls_offset_of(const uintptr_t *word) {
    return (uintptr_t)word - breaker__thread_pointer();
}
uintptr_t breaker__owned_tls_heap(void) { return tls_offset_of(&breaker__tls_owned_offset); }
uintptr_t breaker__owned_tls_host(unsigned k) {
    return tls_offset_of(&breaker__tls_host_offset[k]);
}
uintptr_t breaker__owned_tls_none(void) { return tls_offset_of(&owned_none); }
#else
uintptr_t breaker__owned_tls_heap(void) { return 0; }
uintptr_t breaker__owned_tls_host(unsigned k) { return 1 + k; }
uintptr_t breaker__owned_tls_none(void) {
    (void)owned_none;
    return BREAKER__HOST_DOMAINS + 1;
}
#endif

/* ---- Host domains ---------------------------------------------------------------*/

struct host_domain {
    _Atomic uint64_t id;       /* 0: free; set once, with claims (release) */
    breaker__atomic64 *claims; /* the store's table, mapped for good */
    pthread_key_t key;         /* a thread's claim here: its index + 1 */
};

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_domain domains[BREAKER__HOST_DOMAINS];
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static int host_ok;
/* This process's claim word; 0 = not read yet. Threads may compute it at
 * once: they compute the same value, so relaxed is enough. */
static _Atomic uint64_t host_token;
/* Claims are tried again after this many general-path calls without one: a
 * thread that found the table full may find a word given back later. */
#define HOST_RETRY_CALLS 65536u
static _Thread_local unsigned host_retry[BREAKER__HOST_DOMAINS]
    __attribute__((tls_model("initial-exec")));

int breaker__proc_stat(pid_t pid, char *state, uint64_t *ticks) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), BREAKER__PROC_STAT_PATH, (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    int err = errno;
    close(fd);
    if (n <= 0) return n < 0 ? err : EIO;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and ')': the fields after
     * the last ')' are plain: the state first, starttime the 20th. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0') return EIO;
    *state = p[2];
    for (int field = 2; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (p == NULL) return EIO;
    }
    *ticks = strtoull(p + 1, NULL, 10);
    return 0;
}

/* A process's start time in clock ticks since boot. @return as
 * breaker__proc_stat(). */
static int start_ticks(pid_t pid, uint64_t *ticks) {
    char state = 0;
    return breaker__proc_stat(pid, &state, ticks);
}

/* This process's claim word: its pid in the high half and the low 32 bits
 * of its start time in the low half, so that a reused pid does not look
 * alive. Read once per process (fork resets it). */
static uint64_t my_token(void) {
    uint64_t t = atomic_load_explicit(&host_token, memory_order_relaxed);
    if (t == 0) {
        uint64_t ticks = 0;
        /* Without its own start time a process cannot write a claim others
         * can judge, nor judge theirs: it claims nothing (counts atomically)
         * and tries again later. */
        if (start_ticks(getpid(), &ticks) != 0) return 0;
        t = ((uint64_t)(uint32_t)getpid() << 32) | (uint32_t)ticks;
        atomic_store_explicit(&host_token, t, memory_order_relaxed);
    }
    return t;
}

/* Whether the process that wrote claim word `w` may still be running. When
 * in doubt (no permission to look, /proc hiding other users' processes), yes:
 * a live claim is never taken. Called only by a process that read its own
 * start time from /proc, so /proc is there and ENOENT means gone; and only
 * by processes of the file's PID namespace (file_store.c checks it before
 * joining the domain), so the pid is the claimant's. */
static bool claimant_alive(uint64_t w) {
    uint64_t ticks = 0;
    int err = start_ticks((pid_t)(w >> 32), &ticks);
    if (err == ENOENT || err == ESRCH) return false;
    if (err != 0) return true;
    return (uint32_t)ticks == (uint32_t)w;
}

/* Give back claim `i` of domain `k`. Release: the next claimant's acquire
 * CAS sees this thread's last plain stores to stripe i, in every block of
 * the store. */
static void give_back(unsigned k, unsigned i) {
    uint64_t mine = my_token();
    atomic_compare_exchange_strong_explicit(&domains[k].claims[i], &mine, 0, memory_order_release,
                                            memory_order_relaxed);
}

/* A thread exits: the destructor of domain k's key. */
#define HOST_DESTRUCTOR(k)                                                 \
    static void release_host_##k(void *value) {                            \
        breaker__tls_host_offset[k] = 0;                                   \
        host_retry[k] = UINT32_MAX; /* an exiting thread claims no more */ \
        give_back(k, (unsigned)(uintptr_t)value - 1);                      \
    }
HOST_DESTRUCTOR(0)
HOST_DESTRUCTOR(1)
HOST_DESTRUCTOR(2)
HOST_DESTRUCTOR(3)
HOST_DESTRUCTOR(4)
HOST_DESTRUCTOR(5)
HOST_DESTRUCTOR(6)
HOST_DESTRUCTOR(7)
_Static_assert(BREAKER__HOST_DOMAINS == 8, "one destructor per host domain");
static void (*const release_host[BREAKER__HOST_DOMAINS])(void *) = {
    release_host_0, release_host_1, release_host_2, release_host_3,
    release_host_4, release_host_5, release_host_6, release_host_7};

/* In the child of fork(): the thread that forked is the only one, and its
 * claims are the parent's (the parent's thread still writes those stripes).
 * The child starts without any, with its own pid in its claim word. */
static void host_after_fork_child(void) {
    pthread_mutex_unlock(&host_lock); /* held by host_before_fork */
    atomic_store_explicit(&host_token, 0, memory_order_relaxed);
    for (unsigned k = 0; k < BREAKER__HOST_DOMAINS; k++) {
        breaker__tls_host_offset[k] = 0;
        host_retry[k] = 0;
        if (atomic_load_explicit(&domains[k].id, memory_order_relaxed) != 0)
            (void)pthread_setspecific(domains[k].key, NULL);
    }
}

/* fork() while another thread joins a domain would leave host_lock held in
 * the child: hold it across the fork. */
static void host_before_fork(void) { pthread_mutex_lock(&host_lock); }
static void host_after_fork_parent(void) { pthread_mutex_unlock(&host_lock); }

static void host_init(void) {
    host_ok = pthread_atfork(host_before_fork, host_after_fork_parent, host_after_fork_child) == 0;
}

void breaker__host_fork_handlers(void) { pthread_once(&host_once, host_init); }

enum breaker__host_join breaker__host_domain_join(uint64_t id, breaker__atomic64 *claims) {
    pthread_once(&host_once, host_init);
    if (!host_ok || id == 0) return BREAKER__HOST_FULL;
    enum breaker__host_join r = BREAKER__HOST_FULL;
    pthread_mutex_lock(&host_lock);
    for (unsigned k = 0; k < BREAKER__HOST_DOMAINS; k++) {
        uint64_t cur = atomic_load_explicit(&domains[k].id, memory_order_relaxed);
        if (cur == id) {
            r = BREAKER__HOST_ALREADY;
            break;
        }
        if (cur != 0) continue;
        if (pthread_key_create(&domains[k].key, release_host[k]) != 0) break;
        domains[k].claims = claims;
        /* Release: a thread that finds the id sees the table and the key. */
        atomic_store_explicit(&domains[k].id, id, memory_order_release);
        r = BREAKER__HOST_JOINED;
        break;
    }
    pthread_mutex_unlock(&host_lock);
    return r;
}

unsigned breaker__host_domain_of(uint64_t id) {
    for (unsigned k = 0; k < BREAKER__HOST_DOMAINS; k++)
        if (id != 0 && atomic_load_explicit(&domains[k].id, memory_order_acquire) == id) return k;
    return BREAKER__HOST_NONE;
}

/* Claim a word of domain k's table: a free one, else one whose process is
 * gone. acq_rel: acquire, to continue from the previous holder's plain
 * stores (the release of a thread that gave it back; a dead process's were
 * made before it died). @return the stripe's offset + 1, or 0. */
static uintptr_t host_claim(unsigned k) {
    breaker__atomic64 *claims = domains[k].claims;
    uint64_t me = my_token();
    if (me == 0) return 0;
    int got = -1;
    for (unsigned i = 0; i < BREAKER__OWNED_STRIPES && got < 0; i++) {
        uint64_t w = 0;
        if (atomic_compare_exchange_strong_explicit(&claims[i], &w, me, memory_order_acq_rel,
                                                    memory_order_relaxed))
            got = (int)i;
    }
    for (unsigned i = 0; i < BREAKER__OWNED_STRIPES && got < 0; i++) {
        uint64_t w = atomic_load_explicit(&claims[i], memory_order_relaxed);
        if (w == 0 || w == me || claimant_alive(w)) continue;
        if (atomic_compare_exchange_strong_explicit(&claims[i], &w, me, memory_order_acq_rel,
                                                    memory_order_relaxed))
            got = (int)i;
    }
    if (got < 0) return 0;
    if (pthread_setspecific(domains[k].key, (void *)(uintptr_t)(got + 1)) != 0) {
        give_back(k, (unsigned)got);
        return 0;
    }
    breaker__tls_host_offset[k] = (uintptr_t)got * sizeof(struct breaker__stripe) + 1;
    return breaker__tls_host_offset[k];
}

struct breaker__stripe_ref breaker__host_stripe(const struct breaker *b) {
    unsigned k = b->host_domain;
    if (k < BREAKER__HOST_DOMAINS) {
        uintptr_t o = breaker__tls_host_offset[k];
        if (o == 0 && host_retry[k]-- == 0) {
            o = host_claim(k);
            host_retry[k] = HOST_RETRY_CALLS;
        }
        if (o != 0) {
            unsigned i = (unsigned)((o - 1) / sizeof(struct breaker__stripe));
            struct breaker__stripe_ref r = {&b->stripes[i], i, true};
            return r;
        }
    }
    unsigned local = breaker__tls_stripe_plus_one;
    local = local != 0 ? local - 1 : breaker__stripe_assign();
    unsigned i = BREAKER__OWNED_STRIPES + local % (BREAKER__STRIPES - BREAKER__OWNED_STRIPES);
    struct breaker__stripe_ref r = {&b->stripes[i], i, false};
    return r;
}
