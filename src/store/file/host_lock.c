/* SPDX-License-Identifier: MIT */
/*
 * host_lock.c - the kernel locks by which one process of a host reports
 * each name of a store file (store/file/host.h): OFD byte-range locks,
 * fcntl(F_OFD_SETLK), on a file description of the lock's own, one byte per
 * name (the first byte of its entry) and the file's first byte for the
 * primary. Never a wait: a lock is taken if free, else left to its holder.
 *
 * Why OFD locks: they belong to the file description, not to the process
 * (a POSIX lock would be released by closing any descriptor of the file,
 * the store's own at a move included, and would not exclude two handles of
 * one process), and the kernel frees them when the description's last
 * descriptor closes: the holder's exit, its death, or
 * breaker__host_lock_close(). A fork would share the description with the
 * child: the child's descriptor is closed by the atfork handler below.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "store/file/host.h"

#include "store/file/file_store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct breaker__host_lock {
    breaker_store *st;
    struct breaker__store_file file; /* the file the lock is on */
    int fd;                          /* its own file description; -1 in a fork's child */
    int primary;                     /* holds the file's first byte */
    /* The list of open host locks, for the fork handler. */
    struct breaker__host_lock *next, *prev;
};

/* ---- fork(): the child closes its copies --------------------------------------- */

static pthread_mutex_t locks_mu = PTHREAD_MUTEX_INITIALIZER;
static breaker__host_lock *locks;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void before_fork(void) { pthread_mutex_lock(&locks_mu); }

static void after_fork_parent(void) { pthread_mutex_unlock(&locks_mu); }

/* The child shares each lock's file description with its parent; closing
 * its descriptor leaves the parent's locks as they are (an OFD lock ends
 * with the description's last descriptor), and the child holds nothing. */
static void after_fork_child(void) {
    for (breaker__host_lock *l = locks; l != NULL; l = l->next) {
        if (l->fd >= 0) close(l->fd);
        l->fd = -1;
        l->primary = 0;
    }
    pthread_mutex_unlock(&locks_mu);
}

static void fork_handlers(void) {
    (void)pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* ---- The locks --------------------------------------------------------------------- */

/* fcntl() of `type` (F_WRLCK, F_UNLCK) on the byte at `off`: `cmd` F_OFD_SETLK,
 * or F_OFD_GETLK (then `*type` says what holds it: F_UNLCK for nobody else).
 * @return 0 or an errno. */
static int lock_byte(int fd, int cmd, uint64_t off, short *type) {
    if (fd < 0) return EBADF;
    struct flock fl;
    memset(&fl, 0, sizeof fl); /* l_pid 0, as OFD locks require */
    fl.l_type = *type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)off;
    fl.l_len = 1;
    if (fcntl(fd, cmd, &fl) != 0) return errno;
    *type = fl.l_type;
    return 0;
}

int breaker__host_lock_open(breaker_store *st, breaker__host_lock **out, char *msg,
                            size_t msg_len) {
    *out = NULL;
    breaker__host_lock *l = calloc(1, sizeof *l);
    if (l == NULL) return BREAKER_ENOMEM;
    l->st = st;
    int rc = breaker__store_file_now(st, &l->file, &l->fd, msg, msg_len);
    if (rc != BREAKER_OK) {
        free(l);
        return rc;
    }
    pthread_once(&fork_once, fork_handlers);
    pthread_mutex_lock(&locks_mu);
    l->next = locks;
    if (locks != NULL) locks->prev = l;
    locks = l;
    pthread_mutex_unlock(&locks_mu);
    *out = l;
    return BREAKER_OK;
}

void breaker__host_lock_close(breaker__host_lock *l) {
    if (l == NULL) return;
    pthread_mutex_lock(&locks_mu);
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        locks = l->next;
    if (l->next != NULL) l->next->prev = l->prev;
    pthread_mutex_unlock(&locks_mu);
    if (l->fd >= 0) close(l->fd); /* every lock on it ends here */
    free(l);
}

int breaker__host_lock_current(const breaker__host_lock *l) {
    return breaker__store_maps(l->st, &l->file);
}

uint64_t breaker__host_lock_file_id(const breaker__host_lock *l) { return l->file.id; }

int breaker__host_lock_primary(breaker__host_lock *l) {
    if (!l->primary) {
        short type = F_WRLCK;
        l->primary = lock_byte(l->fd, F_OFD_SETLK, 0, &type) == 0;
    }
    return l->primary;
}

int breaker__host_lock_find(const breaker__host_lock *l, const char *name, uint32_t *slot) {
    return breaker__store_file_slot(&l->file, name, slot);
}

/* A slot comes from breaker__host_lock_find(); one that cannot be (above
 * the file's capacity) is never locked, looked at, or read. */
int breaker__host_lock_take(breaker__host_lock *l, uint32_t slot) {
    if (slot >= l->file.capacity) return 0;
    short type = F_WRLCK;
    return lock_byte(l->fd, F_OFD_SETLK, breaker__store_file_slot_offset(&l->file, slot), &type) ==
           0;
}

int breaker__host_lock_free(breaker__host_lock *l, uint32_t slot) {
    if (slot >= l->file.capacity) return 0;
    short type = F_WRLCK;
    return lock_byte(l->fd, F_OFD_GETLK, breaker__store_file_slot_offset(&l->file, slot), &type) ==
               0 &&
           type == F_UNLCK;
}

void breaker__host_lock_give(breaker__host_lock *l, uint32_t slot) {
    if (slot >= l->file.capacity) return;
    short type = F_UNLCK;
    (void)lock_byte(l->fd, F_OFD_SETLK, breaker__store_file_slot_offset(&l->file, slot), &type);
}

void breaker__host_lock_words(const breaker__host_lock *l, uint32_t slot, uint64_t *words,
                              int write) {
    if (slot >= l->file.capacity) {
        if (!write) memset(words, 0, BREAKER__HOST_WORDS * sizeof *words);
        return;
    }
    breaker__atomic64 *w = breaker__store_file_words(&l->file, slot);
    /* relaxed: each word whole, alone; the lock says who writes (host.h). */
    for (unsigned i = 0; i < BREAKER__HOST_WORDS; i++) {
        if (write)
            atomic_store_explicit(&w[i], words[i], memory_order_relaxed);
        else
            words[i] = atomic_load_explicit(&w[i], memory_order_relaxed);
    }
}
