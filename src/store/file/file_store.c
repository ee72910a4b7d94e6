/* SPDX-License-Identifier: MIT */
/*
 * file_store.c - named breakers in a memory-mapped file, shared by the
 * processes of one host (include/breaker/store.h). Its backend table, for
 * registries (breaker_store_backend()), is backend.c.
 *
 * The file: a header page, a directory of `capacity` entries (a name, the
 * offset and size of its block, and its state), then the blocks, allocated
 * one after the other and never freed (a name, once created, lives as long
 * as the file). Everything is written under an exclusive flock() of the file
 * and published with release stores; the call path never looks at any of
 * it: an attached handle works on its block exactly as on a heap block,
 * with counters in ATOMIC stripe mode (other processes' threads write the
 * same stripes).
 *
 * Crash safety: the lock dies with its holder, and an entry is READY only
 * after its block is initialised (magic last, then the state with release);
 * an entry left INITIALISING by a dead creator is taken over by the next
 * attacher under the lock.
 */
#define _GNU_SOURCE
#include "breaker/store.h"

#include "common/message.h"
#include "common/platform.h"
#include "common/splitmix.h"
#include "common/text.h"
#include "common/time_ns.h"
#include "core/block.h"
#include "core/internal.h"
#include "store/file/file_lock.h"
#include "store/file/file_store.h"
#include "store/file/host.h"
#include "store/file/watcher.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STORE_MAGIC UINT64_C(0x45524f54534b5242) /* "BRKSTORE" */
/* The magic word while a file is being laid out: "BRKI" in the high half,
 * the capacity being laid out in the low half. Written first, before any
 * other byte of the layout, and replaced by STORE_MAGIC last: an opener that
 * finds it (under the lock, so its writer is dead) lays the file out again. */
#define STORE_LAYING_OUT      UINT64_C(0x494b524200000000) /* "BRKI" */
#define STORE_LAYING_OUT_MASK UINT64_C(0xffffffff00000000)
/* 3: a host-wide backend's words per entry (store/file/host.h; four more
 * in the header, unused since). 4: the last operator control per entry
 * (struct store_control). */
#define STORE_VERSION 4u
#define BOOT_ID_LEN   36

#define DEFAULT_CAPACITY     256u
#define MAX_CAPACITY         65536u
#define DEFAULT_SIZE         (UINT64_C(16) << 20)
#define MAX_SIZE             (UINT64_C(1) << 40)
#define DEFAULT_CHECK_NS     UINT64_C(1000000000)
#define MIN_CHECK_NS         UINT64_C(1000000)
#define MAX_CHECK_NS         (UINT64_C(3600) * UINT64_C(1000000000))
#define DEFAULT_LOCK_WAIT_NS UINT64_C(1000000000)
#define MIN_LOCK_WAIT_NS     UINT64_C(1000000)
#define MAX_LOCK_WAIT_NS     (UINT64_C(60) * UINT64_C(1000000000))
/* A control's record and the host lock wait briefly: a flusher applying a
 * fleet order comes with its rounds waiting. */
#define BRIEF_LOCK_WAIT_NS UINT64_C(10000000)

enum entry_state { ENTRY_FREE = 0, ENTRY_INITIALISING = 1, ENTRY_READY = 2 };

/* The last operator control of a name (breaker_store_last_control()), as
 * the words of its entry hold it: written whole by one process under the
 * file lock, read by any without it (control_write(), control_read()). */
struct store_control {
    uint32_t action; /* enum breaker_store_control_action; 0: none */
    uint32_t pad_;
    uint64_t at_ns;      /* CLOCK_REALTIME when it was made */
    uint64_t until_ns;   /* CLOCK_REALTIME when a timed one ends; else 0 */
    uint64_t generation; /* the generation its transition started */
    char who[72];        /* NUL-terminated printable text, at most BREAKER_WHO_MAX */
    char why[208];       /* the same, at most BREAKER_WHY_MAX */
};
_Static_assert(sizeof(((struct store_control *)0)->who) > BREAKER_WHO_MAX, "who's room");
_Static_assert(sizeof(((struct store_control *)0)->why) > BREAKER_WHY_MAX, "why's room");
_Static_assert(sizeof(struct store_control) % 8 == 0, "a record is whole words");
#define STORE_CONTROL_WORDS (sizeof(struct store_control) / 8)

struct store_header {
    _Atomic uint64_t magic; /* stored last, with release */
    uint32_t version;
    uint32_t header_size;
    uint64_t abi; /* the sizes this build lays the file out with */
    char boot_id[BOOT_ID_LEN + 1];
    uint64_t file_size;
    uint32_t capacity;
    uint32_t entry_size;
    uint64_t entries_off;
    uint64_t data_off;
    _Atomic uint64_t data_used; /* bytes of the data area handed to blocks */
    _Atomic uint32_t names;     /* entries used, in creation order */
    uint32_t pad_;
    /* Drawn when the file is laid out: which host domain its blocks are in. */
    uint64_t store_id;
    /* CLOCK_MONOTONIC when the file was laid out: the clock every block's
     * times count on, which no process of this boot can see run backwards. */
    uint64_t created_ns;
    /* The creator's PID namespace (its inode): only processes of it share
     * the owned stripes. */
    uint64_t pid_ns;
    /* The host domain's claims of the owned stripes of every block in the
     * file: a claimant's pid and start time, 0 when free (core/stripes.c). */
    breaker__atomic64 claims[BREAKER__OWNED_STRIPES];
    /* Unused (a host-wide backend's view, before its words per name held
     * it); kept so that the layout stays version 4. */
    breaker__atomic64 host_view[4];
};

struct store_entry {
    _Atomic uint32_t state; /* enum entry_state */
    uint32_t pad_;
    uint64_t block_off;
    uint64_t block_size;
    char name[BREAKER_NAME_MAX + 1];
    /* A host-wide backend's words for the name (store/file/host.h): written
     * by the holder of the name's host lock; 0 when the entry is created. */
    breaker__atomic64 host[BREAKER__HOST_WORDS];
    /* The last operator control (struct store_control) under a seqlock:
     * control_seq is 0 while none was ever written, odd while one is being
     * written (and after its writer died in the middle), even when the
     * words hold a whole record. */
    breaker__atomic64 control_seq;
    breaker__atomic64 control[STORE_CONTROL_WORDS];
};

/* The sizes this build lays the file out with, and its byte order (bit 8). */
#define STORE_LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define STORE_ABI                                                                               \
    (((uint64_t)sizeof(struct store_header) << 40) |                                            \
     ((uint64_t)sizeof(struct store_entry) << 24) | ((uint64_t)BREAKER__LAYOUT_VERSION << 16) | \
     ((uint64_t)STORE_LITTLE_ENDIAN << 8) | (uint64_t)sizeof(void *))

struct breaker_store {
    /* What breaker_store_backend() hands out: breaker__file_backend_ops
     * with this store. */
    breaker_backend backend;
    uint64_t store_id; /* this file's host domain: the header's id, the inode */
    uint64_t pid_ns;   /* the header's */
    /* The header's layout, checked once at open and never read again from
     * the file (which another writer could change meanwhile). */
    uint32_t capacity;
    uint64_t entries_off;
    uint64_t data_off;
    int fd;
    char *map;
    size_t size;
    dev_t dev; /* the file mapped: checked against the path at attach */
    ino_t ino;
    /* The configuration it was opened with, to open the path again when
     * the file there is another (breaker_store.h, "replaced"). */
    breaker_store_config cfg;
    /* Guards the fields above against a move to the file at the path
     * (move_locked()) and the handle list: attach, foreach, check and the
     * watcher take it; the call path never. */
    pthread_mutex_t lock;
    /* Files this store mapped before a move: still mapped, since handles
     * attached to them go on using them; unmapped at close. */
    struct retired_map {
        char *map;
        size_t size;
    } * retired;
    size_t n_retired;
    /* The handles attached through this store, each the live end of its
     * forward chain, with the mapping it works on and its name: the ones a
     * move must forward. Under the lock; a handle leaves it when destroyed
     * (store_detach, its home hook). */
    struct store_handle {
        breaker *b;
        char *map;
        char name[BREAKER_NAME_MAX + 1];
    } * handles;
    size_t n_handles, cap_handles;
    breaker_store_stats stats; /* under the lock, but checks */
    /* The watcher's view, written under the lock and read without it: the
     * file mapped (its device and inode) and the checks made. The watcher
     * takes the lock only when the path names another file, so a fork() in
     * another thread almost never finds it held. */
    breaker__atomic64 mapped_dev, mapped_ino, checks, stranded_now;
    struct breaker__watcher *watcher;
    /* The list of stores open in this process (fork handlers, below). */
    struct breaker_store *next_open, *prev_open;
    bool listed; /* in that list: a store breaker_store_open() returned */
    char path[4096];
};

void breaker_store_config_init(breaker_store_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->flags = BREAKER_STORE_CREATE;
    cfg->mode = 0600;
    cfg->capacity = DEFAULT_CAPACITY;
    cfg->size = DEFAULT_SIZE;
    cfg->check_ns = DEFAULT_CHECK_NS;
    cfg->lock_wait_ns = DEFAULT_LOCK_WAIT_NS;
}

static size_t page_up(size_t n) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* This boot's identifier. @return 0, or an errno: then no file may be
 * judged "from an earlier boot" (and wiped) by this process. */
static int boot_id(char out[BOOT_ID_LEN + 1]) {
    memset(out, 0, BOOT_ID_LEN + 1);
    FILE *f = fopen(BREAKER__BOOT_ID_PATH, "re");
    if (f == NULL) return errno != 0 ? errno : EIO;
    bool ok = fgets(out, BOOT_ID_LEN + 1, f) != NULL;
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
    return ok && out[0] != '\0' ? 0 : EIO;
}

/* The inode of this process's PID namespace, 0 if unknown: processes share
 * owned stripes only within the file's namespace (a claim is a pid). */
static uint64_t pid_namespace(void) {
    struct stat sb;
    return stat(BREAKER__PID_NS_PATH, &sb) == 0 ? (uint64_t)sb.st_ino : 0;
}

/* Whether the first `n` bytes of the file are all zero: a file whose
 * creator died between sizing it and writing the header. */
static bool header_unwritten(int fd) {
    unsigned char buf[sizeof(struct store_header)];
    if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) return false;
    for (size_t i = 0; i < sizeof(buf); i++)
        if (buf[i] != 0) return false;
    return true;
}

static uint64_t entries_off_for(void);
static uint64_t data_off_for(uint32_t capacity);

/* Whether the file holds the mark of a layout its writer never finished
 * (layout_file): then `*capacity` is the capacity it was laying out, checked
 * against the file's size; else 0. A mark with a capacity out of range, or
 * one the file's size cannot hold, is no layout of ours: refused, named. */
static int laying_out(int fd, const struct stat *sb, uint32_t *capacity, const char *path,
                      char *msg, size_t len) {
    *capacity = 0;
    uint64_t magic = 0;
    if (pread(fd, &magic, sizeof(magic), 0) != (ssize_t)sizeof(magic)) return BREAKER_OK;
    if ((magic & STORE_LAYING_OUT_MASK) != STORE_LAYING_OUT) return BREAKER_OK;
    uint64_t cap = magic & ~STORE_LAYING_OUT_MASK;
    uint64_t size = (uint64_t)sb->st_size;
    if (cap == 0 || cap > MAX_CAPACITY || size > MAX_SIZE || size < data_off_for((uint32_t)cap))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: left half laid out for %llu names in %llu bytes, which "
                             "cannot be: not a breaker store (magic)",
                             path, (unsigned long long)cap, (unsigned long long)size);
    *capacity = (uint32_t)cap;
    return BREAKER_OK;
}

static struct store_header *header_of(const breaker_store *st) {
    return (struct store_header *)(void *)st->map;
}

static struct store_entry *entries_of(const breaker_store *st) {
    return (struct store_entry *)(void *)(st->map + st->entries_off);
}

/* Where the directory and the data of a file holding `capacity` names start:
 * each on a page, so every entry and every block is aligned. */
static uint64_t entries_off_for(void) { return page_up(sizeof(struct store_header)); }

static uint64_t data_off_for(uint32_t capacity) {
    return page_up(entries_off_for() + (uint64_t)capacity * sizeof(struct store_entry));
}

/* A store id: random, never 0. */
static uint64_t new_store_id(void) {
    uint64_t id = 0;
    if (breaker__random_bytes(&id, sizeof(id)) != 0)
        id = breaker__splitmix64(breaker__clock_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32));
    return id != 0 ? id : 1;
}

/* Lay out a new (or reinitialised) file of `size` bytes: header, directory,
 * data. Called under the exclusive lock with the file mapped. A process may
 * be killed at any instruction of it: the first store marks the file as
 * being laid out (with the capacity), the last one publishes the magic, and
 * an opener that finds the mark lays the file out again (open_locked). */
static void layout_file(breaker_store *st, uint32_t capacity, const char *boot) {
    struct store_header *h = header_of(st);
    atomic_store_explicit(&h->magic, STORE_LAYING_OUT | capacity, memory_order_relaxed);
    memset(st->map + sizeof(h->magic), 0, page_up(sizeof(struct store_header)) - sizeof(h->magic));
    h->version = STORE_VERSION;
    h->header_size = (uint32_t)sizeof(*h);
    h->abi = STORE_ABI;
    memcpy(h->boot_id, boot, BOOT_ID_LEN + 1);
    h->file_size = st->size;
    h->capacity = capacity;
    h->entry_size = (uint32_t)sizeof(struct store_entry);
    h->entries_off = entries_off_for();
    h->data_off = data_off_for(capacity);
    memset(st->map + h->entries_off, 0, (size_t)(h->data_off - h->entries_off));
    atomic_store_explicit(&h->data_used, 0, memory_order_relaxed);
    atomic_store_explicit(&h->names, 0, memory_order_relaxed);
    h->store_id = new_store_id();
    h->created_ns = breaker__clock_ns(CLOCK_MONOTONIC);
    h->pid_ns = pid_namespace();
    for (unsigned i = 0; i < BREAKER__OWNED_STRIPES; i++)
        atomic_store_explicit(&h->claims[i], 0, memory_order_relaxed);
    /* Release: a process that sees the magic sees the layout above. */
    atomic_store_explicit(&h->magic, STORE_MAGIC, memory_order_release);
}

/* Whether the mapped file is one this build can use. */
static int check_file(const breaker_store *st, char *msg, size_t len) {
    const struct store_header *h = header_of(st);
    uint64_t magic = atomic_load_explicit(&h->magic, memory_order_acquire);
    if (magic == __builtin_bswap64(STORE_MAGIC))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: a breaker store of the other byte order (magic)", st->path);
    if (magic != STORE_MAGIC)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len, "%s: not a breaker store (magic)",
                             st->path);
    if (h->version != STORE_VERSION || h->abi != STORE_ABI ||
        h->header_size != sizeof(struct store_header) ||
        h->entry_size != sizeof(struct store_entry))
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store version %u, abi 0x%llx; this build reads version %u, "
                             "abi 0x%llx",
                             st->path, h->version, (unsigned long long)h->abi, STORE_VERSION,
                             (unsigned long long)STORE_ABI);
    /* Every offset must be the one this build lays the file out with: then
     * the directory and the blocks are aligned and inside the file, whatever
     * the rest of the header holds, and a file of another boot is laid out
     * again at the same places. */
    if (h->file_size != st->size)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store file_size %llu, the file has %zu bytes", st->path,
                             (unsigned long long)h->file_size, st->size);
    if (h->capacity == 0 || h->capacity > MAX_CAPACITY)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store capacity %u, must be 1 to %u names", st->path, h->capacity,
                             MAX_CAPACITY);
    uint64_t entries_off = entries_off_for(), data_off = data_off_for(h->capacity);
    if (h->entries_off != entries_off || h->data_off != data_off)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store entries_off %llu and data_off %llu; %u names are laid "
                             "out at %llu and %llu",
                             st->path, (unsigned long long)h->entries_off,
                             (unsigned long long)h->data_off, h->capacity,
                             (unsigned long long)entries_off, (unsigned long long)data_off);
    if (data_off > st->size)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store capacity %u needs %llu bytes before its data, the file "
                             "has %zu",
                             st->path, h->capacity, (unsigned long long)data_off, st->size);
    uint64_t used = atomic_load_explicit(&h->data_used, memory_order_relaxed);
    if (used > st->size - data_off)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store data_used %llu, the data area has %llu bytes", st->path,
                             (unsigned long long)used, (unsigned long long)(st->size - data_off));
    return BREAKER_OK;
}

static int fail_errno(int status, char *msg, size_t len, const char *what, const char *path) {
    return breaker__fail(status, msg, len, "%s: %s: %s", path, what, strerror(errno));
}

/* The file's exclusive lock on `fd`, by `deadline`: BREAKER_OK; past it,
 * BREAKER_EBUSY naming the holder and how long this call waited (`wait_ns`,
 * the store's lock_wait_ns); BREAKER_EIO when flock() fails otherwise. */
static int lock_file(int fd, uint64_t deadline, uint64_t wait_ns, const char *path, char *msg,
                     size_t len) {
    int err = breaker__file_lock_until(fd, deadline);
    if (err == 0) return BREAKER_OK;
    if (err != ETIMEDOUT) {
        errno = err;
        return fail_errno(BREAKER_EIO, msg, len, "flock", path);
    }
    char holder[64] = "another process";
    struct stat sb;
    if (fstat(fd, &sb) == 0)
        breaker__file_lock_holder((uint64_t)sb.st_dev, (uint64_t)sb.st_ino, holder, sizeof(holder));
    return breaker__fail(BREAKER_EBUSY, msg, len,
                         "%s: its lock is held by %s: waited %llu ms (lock_wait_ns); try again",
                         path, holder, (unsigned long long)(wait_ns / 1000000));
}

/* The store's mutex by `deadline`, as lock_file() says. A thread of this
 * process holds it while it waits for the file's lock. */
static int lock_store(breaker_store *st, uint64_t deadline, char *msg, size_t len) {
    if (breaker__mutex_lock_until(&st->lock, deadline) == 0) return BREAKER_OK;
    char holder[64];
    breaker__file_lock_holder(breaker__read(&st->mapped_dev), breaker__read(&st->mapped_ino),
                              holder, sizeof(holder));
    return breaker__fail(BREAKER_EBUSY, msg, len,
                         "%s: another thread of this process waits for its lock (held by %s): "
                         "waited %llu ms (lock_wait_ns); try again",
                         st->path, holder, (unsigned long long)(st->cfg.lock_wait_ns / 1000000));
}

/* The deadline of one call's lock waits: lock_wait_ns from now. */
static uint64_t call_deadline(const breaker_store *st) {
    return breaker__lock_deadline(st->cfg.lock_wait_ns);
}

/* The file's owner and permissions, unless the caller accepts shared files. */
static int check_permissions(const struct stat *sb, unsigned flags, const char *path, char *msg,
                             size_t len) {
    if (!S_ISREG(sb->st_mode))
        return breaker__fail(BREAKER_EIO, msg, len, "%s: not a regular file", path);
    if (flags & BREAKER_STORE_ALLOW_SHARED) return BREAKER_OK;
    if (sb->st_uid != geteuid())
        return breaker__fail(BREAKER_EIO, msg, len,
                             "%s: owned by uid %u, not this user (allow with "
                             "BREAKER_STORE_ALLOW_SHARED)",
                             path, (unsigned)sb->st_uid);
    if (sb->st_mode & (S_IWGRP | S_IWOTH))
        return breaker__fail(BREAKER_EIO, msg, len,
                             "%s: writable by group or others (mode %03o; allow with "
                             "BREAKER_STORE_ALLOW_SHARED)",
                             path, (unsigned)(sb->st_mode & 0777));
    return BREAKER_OK;
}

static int validate_config(const breaker_store_config *c, char *msg, size_t len) {
    if (c->capacity > MAX_CAPACITY)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "capacity: must be between 1 and %u names (got %u)", MAX_CAPACITY,
                             c->capacity);
    if (c->size > MAX_SIZE)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "size: must be at most %llu bytes (got %llu)",
                             (unsigned long long)MAX_SIZE, (unsigned long long)c->size);
    if (c->mode > 0777)
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "mode: must be a permission mode up to 0777 (got %o)", c->mode);
    if (c->check_ns != 0 && (c->check_ns < MIN_CHECK_NS || c->check_ns > MAX_CHECK_NS))
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "check_ns: must be between 1 ms and 1 h (got %llu ns)",
                             (unsigned long long)c->check_ns);
    if (c->lock_wait_ns != 0 &&
        (c->lock_wait_ns < MIN_LOCK_WAIT_NS || c->lock_wait_ns > MAX_LOCK_WAIT_NS))
        return breaker__fail(BREAKER_EINVAL, msg, len,
                             "lock_wait_ns: must be between 1 ms and 1 min (got %llu ns)",
                             (unsigned long long)c->lock_wait_ns);
    return BREAKER_OK;
}

/* Take part in this file's host domain, so that its breakers' threads own
 * stripes (core/stripes.c). The claim table must stay mapped while any
 * thread of the process may hold or give back a claim, that is for the life
 * of the process: the header page is mapped a second time, for good (once
 * per store file). When that fails, or the process is in too many domains,
 * this store's breakers count atomically: slower, never wrong. */
static void join_host_domain(breaker_store *st) {
    if (breaker__host_domain_of(st->store_id) != BREAKER__HOST_NONE) return;
    /* Claims are judged by pid: only processes of the file's PID namespace
     * (the creator's) may hold them. Others count atomically. */
    uint64_t ns = pid_namespace();
    if (ns == 0 || ns != st->pid_ns) return;
    size_t len = page_up(sizeof(struct store_header));
    void *keep = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, 0);
    if (keep == MAP_FAILED) return;
    struct store_header *h = keep;
    if (breaker__host_domain_join(st->store_id, h->claims) != BREAKER__HOST_JOINED)
        munmap(keep, len);
}

/* Open (or create), lock (by `deadline`), size, map and check: the whole of
 * open under the exclusive lock, so two processes creating the file at once
 * agree. */
static int open_locked(breaker_store *st, const breaker_store_config *c, uint64_t deadline,
                       char *msg, size_t len) {
    int oflags =
        O_RDWR | O_CLOEXEC | O_NOFOLLOW | ((c->flags & BREAKER_STORE_CREATE) ? O_CREAT : 0);
    st->fd = open(st->path, oflags, (mode_t)c->mode);
    if (st->fd < 0) {
        if (errno == ENOENT)
            return breaker__fail(BREAKER_NOT_FOUND, msg, len, "%s: no such store", st->path);
        if (errno == ELOOP)
            return breaker__fail(BREAKER_EIO, msg, len, "%s: a symbolic link (refused)", st->path);
        return fail_errno(BREAKER_EIO, msg, len, "open", st->path);
    }
    int rc = lock_file(st->fd, deadline, c->lock_wait_ns, st->path, msg, len);
    if (rc != BREAKER_OK) return rc;
    struct stat sb;
    if (fstat(st->fd, &sb) != 0) return fail_errno(BREAKER_EIO, msg, len, "fstat", st->path);
    st->dev = sb.st_dev;
    st->ino = sb.st_ino;
    breaker__write(&st->mapped_dev, (uint64_t)st->dev);
    breaker__write(&st->mapped_ino, (uint64_t)st->ino);
    rc = check_permissions(&sb, c->flags, st->path, msg, len);
    if (rc != BREAKER_OK) return rc;
    /* Fresh: empty, or sized by a creator that died before it wrote the
     * header (under this lock no one else is writing it). */
    bool fresh = sb.st_size == 0 || header_unwritten(st->fd);
    /* Or being laid out: a process died laying it out (a creation, or the
     * reinitialisation of an earlier boot's file); nobody could open it
     * since, so it is laid out again with the capacity its mark names. */
    uint32_t relayout = 0;
    if (!fresh) {
        int lrc = laying_out(st->fd, &sb, &relayout, st->path, msg, len);
        if (lrc != BREAKER_OK) return lrc;
    }
    if (fresh) {
        if (!(c->flags & BREAKER_STORE_CREATE))
            return breaker__fail(BREAKER_NOT_FOUND, msg, len, "%s: empty store", st->path);
        if (ftruncate(st->fd, (off_t)c->size) != 0)
            return fail_errno(BREAKER_EIO, msg, len, "ftruncate", st->path);
        st->size = (size_t)c->size;
    } else {
        if ((uint64_t)sb.st_size < sizeof(struct store_header) || (uint64_t)sb.st_size > MAX_SIZE)
            return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                                 "%s: %lld bytes, not a breaker store (file_size: a store "
                                 "is %zu to %llu bytes)",
                                 st->path, (long long)sb.st_size, sizeof(struct store_header),
                                 (unsigned long long)MAX_SIZE);
        st->size = (size_t)sb.st_size;
    }
    void *map = mmap(NULL, st->size, PROT_READ | PROT_WRITE, MAP_SHARED, st->fd, 0);
    if (map == MAP_FAILED) return fail_errno(BREAKER_EIO, msg, len, "mmap", st->path);
    st->map = map;
    char boot[BOOT_ID_LEN + 1];
    int err = boot_id(boot);
    if (err != 0)
        return breaker__fail(BREAKER_EIO, msg, len,
                             "%s: cannot read this boot's id (" BREAKER__BOOT_ID_PATH
                             ": %s), so the file's boot cannot be checked",
                             st->path, strerror(err));
    if (fresh) {
        layout_file(st, c->capacity, boot);
    } else if (relayout != 0) {
        layout_file(st, relayout, boot);
    } else {
        rc = check_file(st, msg, len);
        if (rc != BREAKER_OK) return rc;
        /* A file from an earlier boot: its times are another boot's clock,
         * and no process of that boot is left to use it. */
        if (strncmp(header_of(st)->boot_id, boot, BOOT_ID_LEN + 1) != 0) {
            layout_file(st, header_of(st)->capacity, boot);
        } else if (breaker__clock_ns(CLOCK_MONOTONIC) < header_of(st)->created_ns) {
            /* This boot's id, yet a clock that has not reached the file's
             * creation (a restored container, a faked boot id): its times
             * cannot be trusted, and neither can wiping it. */
            return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                                 "%s: created at %llu ns of CLOCK_MONOTONIC, which now reads "
                                 "less: not this clock's file",
                                 st->path, (unsigned long long)header_of(st)->created_ns);
        }
    }
    /* The host domain is this file, not its id alone: a copy of the file
     * (another inode) has the same id in its header but its own claims. */
    st->store_id =
        breaker__splitmix64(header_of(st)->store_id ^ breaker__splitmix64((uint64_t)sb.st_dev) ^
                            ((uint64_t)sb.st_ino * UINT64_C(0x9e3779b97f4a7c15)));
    if (st->store_id == 0) st->store_id = 1;
    st->pid_ns = header_of(st)->pid_ns;
    st->capacity = header_of(st)->capacity;
    st->entries_off = header_of(st)->entries_off;
    st->data_off = header_of(st)->data_off;
    join_host_domain(st);
    return BREAKER_OK;
}

static void watch_path(void *ctx);

/* ---- fork() ----------------------------------------------------------------------
 * A fork while another thread holds a store's lock (the watcher moving it,
 * an attach) would leave the lock held for ever in the child, whose first
 * attach, check or stats call would then hang. The stores open in the
 * process are listed, and fork takes every store's lock in its prepare
 * step (after the list's) and gives them back in the parent and the child.
 * The host domains' handlers are registered first, so these run before
 * theirs at the fork: store locks before host_lock, the order of a move. */
static pthread_mutex_t open_stores_mu = PTHREAD_MUTEX_INITIALIZER;
static breaker_store *open_stores;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void stores_before_fork(void) {
    pthread_mutex_lock(&open_stores_mu);
    for (breaker_store *st = open_stores; st != NULL; st = st->next_open)
        pthread_mutex_lock(&st->lock);
}

static void stores_after_fork(void) {
    for (breaker_store *st = open_stores; st != NULL; st = st->next_open)
        pthread_mutex_unlock(&st->lock);
    pthread_mutex_unlock(&open_stores_mu);
}

static void fork_handlers(void) {
    breaker__host_fork_handlers();
    (void)pthread_atfork(stores_before_fork, stores_after_fork, stores_after_fork);
}

static void list_open(breaker_store *st) {
    pthread_once(&fork_once, fork_handlers);
    pthread_mutex_lock(&open_stores_mu);
    st->next_open = open_stores;
    if (open_stores != NULL) open_stores->prev_open = st;
    open_stores = st;
    st->listed = true;
    pthread_mutex_unlock(&open_stores_mu);
}

/* A store a move opened for a moment (move_locked(), under the store's
 * lock) was never listed and takes no list lock here: the fork handler
 * takes the list's lock before the stores', never after. */
static void unlist_open(breaker_store *st) {
    if (!st->listed) return;
    pthread_mutex_lock(&open_stores_mu);
    if (st->prev_open != NULL)
        st->prev_open->next_open = st->next_open;
    else
        open_stores = st->next_open;
    if (st->next_open != NULL) st->next_open->prev_open = st->prev_open;
    pthread_mutex_unlock(&open_stores_mu);
}

/* A store on the file at `path` (checked: 1..4095 bytes) with the complete
 * configuration `c`, its file's lock taken by `deadline`. */
static int store_new(const char *path, const breaker_store_config *c, uint64_t deadline,
                     breaker_store **out, char *msg, size_t msg_len) {
    *out = NULL;
    breaker_store *st = calloc(1, sizeof(*st));
    if (st == NULL) return BREAKER_ENOMEM;
    memcpy(st->path, path, strlen(path) + 1);
    st->cfg = *c;
    st->fd = -1;
    st->backend.ops = &breaker__file_backend_ops;
    st->backend.ctx = st;
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return BREAKER_ENOMEM;
    }
    int rc = open_locked(st, c, deadline, msg, msg_len);
    if (st->fd >= 0) flock(st->fd, LOCK_UN);
    if (rc != BREAKER_OK) {
        breaker_store_close(st);
        return rc;
    }
    *out = st;
    return BREAKER_OK;
}

int breaker_store_open(const char *path, const breaker_store_config *cfg, breaker_store **out,
                       char *msg, size_t msg_len) {
    *out = NULL;
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    breaker_store_config c;
    breaker_store_config_init(&c);
    if (cfg != NULL) {
        int rc = validate_config(cfg, msg, msg_len);
        if (rc != BREAKER_OK) return rc;
        c.flags = cfg->flags;
        if (cfg->mode != 0) c.mode = cfg->mode;
        if (cfg->capacity != 0) c.capacity = cfg->capacity;
        if (cfg->size != 0) c.size = cfg->size;
        if (cfg->check_ns != 0) c.check_ns = cfg->check_ns;
        if (cfg->lock_wait_ns != 0) c.lock_wait_ns = cfg->lock_wait_ns;
    }
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(((breaker_store *)0)->path))
        return breaker__fail(BREAKER_EINVAL, msg, msg_len, "path: 1 to %zu bytes (got %zu)",
                             sizeof(((breaker_store *)0)->path) - 1, n);
    uint64_t need = page_up(sizeof(struct store_header)) +
                    page_up((uint64_t)c.capacity * sizeof(struct store_entry)) + 4096;
    if (c.size < need)
        return breaker__fail(BREAKER_EINVAL, msg, msg_len,
                             "size: %llu bytes cannot hold %u names (at least %llu)",
                             (unsigned long long)c.size, c.capacity, (unsigned long long)need);
    int rc = store_new(path, &c, breaker__lock_deadline(c.lock_wait_ns), out, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    list_open(*out);
    if (c.flags & BREAKER_STORE_NO_WATCHER) return BREAKER_OK;
    (*out)->watcher = breaker__watcher_start(watch_path, *out, c.check_ns);
    if ((*out)->watcher == NULL) {
        int err = errno;
        breaker_store_close(*out);
        *out = NULL;
        return breaker__fail(BREAKER_ENOMEM, msg, msg_len,
                             "%s: cannot start the thread that watches the path (%s)", path,
                             strerror(err));
    }
    return BREAKER_OK;
}

void breaker_store_close(breaker_store *st) {
    if (st == NULL) return;
    breaker__watcher_stop(st->watcher); /* first: it takes the lock */
    unlist_open(st);
    /* Handles destroyed after this (which the documentation forbids, but a
     * fork's child cleaning up may do) must not tell a freed store. */
    for (size_t i = 0; i < st->n_handles; i++) {
        breaker *b = st->handles[i].b;
        for (breaker *l = b->face != NULL ? b->face : b; l != NULL;
             l = atomic_load_explicit(&l->forward, memory_order_acquire)) {
            breaker__set_home(l, NULL, NULL);
            breaker__set_home_lock(l, NULL);
            breaker__set_home_control(l, NULL);
        }
    }
    free(st->handles);
    if (st->map != NULL) munmap(st->map, st->size);
    if (st->fd >= 0) close(st->fd);
    for (size_t i = 0; i < st->n_retired; i++)
        munmap(st->retired[i].map, st->retired[i].size);
    free(st->retired);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

/* Whether the file this store maps is still the one at its path: not
 * unlinked (a tmp cleaner, a logout), not replaced by another (a rename over
 * it, a new file after an unlink). */
static bool still_at_path(const breaker_store *st) {
    struct stat sb;
    if (fstat(st->fd, &sb) == 0 && sb.st_nlink == 0) return false;
    if (lstat(st->path, &sb) != 0) return errno != ENOENT; /* unknown: stay */
    return sb.st_dev == st->dev && sb.st_ino == st->ino;
}

/* Under st->lock: if the file at the path is not the one mapped, move to it
 * (opened as at breaker_store_open(), created again when it is gone and the
 * store was opened with CREATE), so that every process attaches to the
 * file at the path. The old mapping stays for the handles attached to it
 * until follow_locked() forwards them (and for calls still in flight on it).
 * When the path cannot be opened (gone without CREATE, a foreign file, an
 * error), the store stays on its file, says why, and tries again at the
 * next check. */
static int move_locked(breaker_store *st, uint64_t deadline, char *msg, size_t len) {
    if (still_at_path(st)) return BREAKER_OK;
    struct retired_map *more = realloc(st->retired, (st->n_retired + 1) * sizeof(*more));
    if (more == NULL) return BREAKER_ENOMEM;
    st->retired = more;
    breaker_store *next = NULL;
    int rc = store_new(st->path, &st->cfg, deadline, &next, msg, len);
    if (rc != BREAKER_OK) return rc;
    st->stats.moves++;
    st->retired[st->n_retired++] = (struct retired_map){st->map, st->size};
    close(st->fd);
    st->store_id = next->store_id;
    st->pid_ns = next->pid_ns;
    st->capacity = next->capacity;
    st->entries_off = next->entries_off;
    st->data_off = next->data_off;
    st->fd = next->fd;
    st->map = next->map;
    st->size = next->size;
    st->dev = next->dev;
    st->ino = next->ino;
    breaker__write(&st->mapped_dev, (uint64_t)st->dev);
    breaker__write(&st->mapped_ino, (uint64_t)st->ino);
    next->fd = -1;
    next->map = NULL;
    breaker_store_close(next);
    return BREAKER_OK;
}

/* Whether two configurations have the same limits (callbacks aside). */
static bool same_limits(const breaker_config *a, const breaker_config *b) {
    struct breaker__limits la, lb;
    breaker__limits_from_config(a, &la);
    breaker__limits_from_config(b, &lb);
    la.seed = lb.seed = 0; /* a drawn seed differs by design */
    return memcmp(&la, &lb, sizeof(la)) == 0;
}

/* Blocks start on 128 bytes (two cache lines) from the data area's start. */
#define BLOCK_ALIGN UINT64_C(128)

/* The data area's bytes handed out so far, or UINT64_MAX when the header
 * says more than the area holds (a damaged file). */
static uint64_t data_used(const breaker_store *st) {
    uint64_t used = atomic_load_explicit(&header_of(st)->data_used, memory_order_relaxed);
    return used <= st->size - st->data_off ? used : UINT64_MAX;
}

/* Whether the entry `self`'s block (read once by the caller) lies in the
 * handed-out part of the data area, is aligned and shares no byte with
 * another entry's block (which a takeover would zero, or whose counters
 * would overwrite this one's limits): anything else is a damaged file,
 * refused rather than mapped. Under the lock. */
static int check_block(const breaker_store *st, const struct store_entry *self, const char *name,
                       uint64_t off, uint64_t size, char *msg, size_t len) {
    uint64_t used = data_used(st);
    if (used == UINT64_MAX)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: store data_used exceeds the data area of %llu bytes", st->path,
                             (unsigned long long)(st->size - st->data_off));
    if (off < st->data_off || off - st->data_off > used || size > used - (off - st->data_off) ||
        (off - st->data_off) % BLOCK_ALIGN != 0)
        return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                             "%s: %s has block_off %llu, block_size %llu: not an aligned block "
                             "of the %llu bytes of data from %llu",
                             st->path, name, (unsigned long long)off, (unsigned long long)size,
                             (unsigned long long)used, (unsigned long long)st->data_off);
    const struct store_entry *e = entries_of(st);
    uint32_t names = atomic_load_explicit(&header_of(st)->names, memory_order_acquire);
    if (names > st->capacity) names = st->capacity;
    for (uint32_t i = 0; i < names; i++) {
        uint64_t o = e[i].block_off, n = e[i].block_size;
        if (&e[i] == self || n == 0) continue;
        uint64_t end = n > UINT64_MAX - o ? UINT64_MAX : o + n;
        if (o < off + size && off < end)
            return breaker__fail(BREAKER_EINCOMPATIBLE, msg, len,
                                 "%s: %s has block_off %llu, block_size %llu: it overlaps entry "
                                 "%u's block (block_off %llu, block_size %llu)",
                                 st->path, name, (unsigned long long)off, (unsigned long long)size,
                                 i, (unsigned long long)o, (unsigned long long)n);
    }
    return BREAKER_OK;
}

/* Find `name`, or create it: under the exclusive lock. `*block_off` and
 * `*block_size`: where its block is, checked (the entry itself may be
 * rewritten by a broken writer after the lock is released). */
static int find_or_create(breaker_store *st, const char *name, const breaker_config *cfg,
                          uint64_t *block_off, uint64_t *block_size, bool *created, char *msg,
                          size_t len) {
    struct store_header *h = header_of(st);
    struct store_entry *e = entries_of(st);
    uint32_t used = atomic_load_explicit(&h->names, memory_order_acquire);
    if (used > st->capacity) used = st->capacity;
    *created = false;
    struct store_entry *slot = NULL;
    for (uint32_t i = 0; i < used; i++) {
        if (strncmp(e[i].name, name, sizeof(e[i].name)) != 0) continue;
        slot = &e[i];
        bool ready = atomic_load_explicit(&slot->state, memory_order_acquire) == ENTRY_READY;
        *block_off = slot->block_off;
        *block_size = slot->block_size;
        if (ready) return check_block(st, slot, name, *block_off, *block_size, msg, len);
        /* INITIALISING under our exclusive lock: its creator died holding
         * the lock (the kernel released it). Take it over below. */
        break;
    }
    breaker_config eff;
    size_t size;
    int rc = breaker__block_plan(cfg, &eff, &size, msg, len);
    if (rc != BREAKER_OK) return rc;
    if (slot == NULL) {
        if (used >= st->capacity)
            return breaker__fail(BREAKER_ENOSPC, msg, len, "%s: all %u names are used", st->path,
                                 st->capacity);
        slot = &e[used];
        memset(slot, 0, sizeof(*slot));
        memcpy(slot->name, name, strlen(name) + 1);
        *block_off = *block_size = 0;
    }
    if (*block_size < size) { /* a new name, or a dead creator's too small */
        uint64_t off = data_used(st);
        if (off == UINT64_MAX) return check_block(st, NULL, name, 0, 0, msg, len); /* says why */
        off = (off + BLOCK_ALIGN - 1) & ~(BLOCK_ALIGN - 1);
        uint64_t room = st->size - st->data_off;
        if (off > room || size > room - off)
            return breaker__fail(BREAKER_ENOSPC, msg, len,
                                 "%s: no room for %s (%zu bytes; %llu of %zu used)", st->path, name,
                                 size, (unsigned long long)off, st->size);
        atomic_store_explicit(&h->data_used, off + size, memory_order_relaxed);
        *block_off = st->data_off + off;
        *block_size = size;
        slot->block_off = *block_off;
        slot->block_size = *block_size;
    } else { /* a dead creator's block, reused: only if it is one */
        rc = check_block(st, slot, name, *block_off, *block_size, msg, len);
        if (rc != BREAKER_OK) return rc;
    }
    atomic_store_explicit(&slot->state, ENTRY_INITIALISING, memory_order_relaxed);
    for (unsigned i = 0; i < BREAKER__HOST_WORDS; i++) /* a dead creator's too */
        atomic_store_explicit(&slot->host[i], 0, memory_order_relaxed);
    if (slot == &e[used]) atomic_store_explicit(&h->names, used + 1, memory_order_release);
    void *mem = st->map + *block_off;
    memset(mem, 0, (size_t)*block_size);
    uint64_t epoch =
        eff.clock != NULL ? eff.clock(eff.clock_ctx) : breaker__clock_ns(CLOCK_MONOTONIC);
    breaker__block_create_at(mem, (size_t)*block_size, &eff, epoch);
    atomic_store_explicit(&slot->state, ENTRY_READY, memory_order_release);
    *created = true;
    return BREAKER_OK;
}

static void carry_state(breaker *from, breaker *to);
static void store_record_control(void *ctx, breaker *b, const struct breaker__control_made *made);
static int store_attach(breaker_store *st, const char *name, const breaker_config *cfg,
                        const breaker_owner *owner, const breaker_probe_gate *gate, breaker **out,
                        char *msg, size_t msg_len);

/* Attach `name` in the file mapped now: under st->lock, the file's lock
 * taken by `deadline`. `carry_from` (non-NULL for a move): the handle whose
 * state a block this call creates starts with, given while the file lock is
 * still held, so no other process attaches the new block in between and
 * sees it CLOSED. */
static int attach_locked(breaker_store *st, const char *name, const breaker_config *cfg,
                         const breaker_owner *owner, const breaker_probe_gate *gate,
                         breaker *carry_from, uint64_t deadline, breaker **out, bool *created,
                         char *msg, size_t len) {
    int rc = lock_file(st->fd, deadline, st->cfg.lock_wait_ns, st->path, msg, len);
    if (rc != BREAKER_OK) return rc;
    uint64_t block_off = 0, block_size = 0;
    rc = find_or_create(st, name, cfg, &block_off, &block_size, created, msg, len);
    if (rc == BREAKER_OK)
        rc = breaker__attach_block(st->map + block_off, (size_t)block_size, st->store_id, cfg,
                                   owner, gate, out, msg, len);
    if (rc == BREAKER_OK && *created && carry_from != NULL) carry_state(carry_from, *out);
    flock(st->fd, LOCK_UN);
    return rc;
}

/* breaker_destroy()'s word to the store (breaker__set_home): `b` leaves the
 * list of handles a move forwards. A handle already forwarded is not in it
 * (its forward is), and nothing happens. */
static void store_detach(void *ctx, breaker *b) {
    breaker_store *st = ctx;
    pthread_mutex_lock(&st->lock);
    for (size_t i = 0; i < st->n_handles; i++) {
        if (st->handles[i].b != b) continue;
        st->handles[i] = st->handles[--st->n_handles];
        break;
    }
    pthread_mutex_unlock(&st->lock);
}

/* A live change of a handle's limits (core/reconfig.c): the store's lock,
 * then the file's, as attach takes them (each by lock_wait_ns from now:
 * BREAKER_EBUSY past it), so that writers of the limits in every process of
 * the host exclude each other, and one that dies leaves its half-made
 * change to the next holder (breaker__limits_repair()). */
static int store_lock_limits(void *ctx, bool lock, char *msg, size_t msg_len) {
    breaker_store *st = ctx;
    if (!lock) {
        flock(st->fd, LOCK_UN);
        pthread_mutex_unlock(&st->lock);
        return BREAKER_OK;
    }
    uint64_t deadline = call_deadline(st);
    int rc = lock_store(st, deadline, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    rc = lock_file(st->fd, deadline, st->cfg.lock_wait_ns, st->path, msg, msg_len);
    if (rc != BREAKER_OK) pthread_mutex_unlock(&st->lock);
    return rc;
}

/* Under st->lock: list `b`, attached to `name` in the file mapped now. */
static int track_locked(breaker_store *st, breaker *b, const char *name) {
    if (st->n_handles == st->cap_handles) {
        size_t cap = st->cap_handles != 0 ? st->cap_handles * 2 : 16;
        struct store_handle *more = realloc(st->handles, cap * sizeof(*more));
        if (more == NULL) return BREAKER_ENOMEM;
        st->handles = more;
        st->cap_handles = cap;
    }
    struct store_handle *h = &st->handles[st->n_handles++];
    h->b = b;
    h->map = st->map;
    memcpy(h->name, name, strlen(name) + 1);
    return BREAKER_OK;
}

/* Give a breaker this process has just created in the new file the state of
 * the one it replaces, so that a move costs no protection: an open wait goes
 * on for what it had left, a forced state stays forced (a forced close's
 * expiry with it), shadow mode stays on. A HALF_OPEN is
 * carried as a wait of 1 ns: probing starts again at once, bounded as ever.
 * Its callbacks are silenced meanwhile: the user sees one breaker whose
 * state went on, not a transition (and the store's lock is held). */
static void carry_state(breaker *from, breaker *to) {
    breaker_event_fn *on_event = to->cfg.on_event;
    void (*owner_on_event)(void *, breaker *, const breaker_event *) = to->owner.on_event;
    to->cfg.on_event = NULL;
    to->owner.on_event = NULL;
    breaker_evidence none;
    memset(&none, 0, sizeof(none));
    unsigned k = breaker__backoff_level(from); /* the next failed probe backs off as it would */
    switch (breaker_state_peek(from)) {
    case BREAKER_OPEN:
        (void)breaker__trip_outside_k(to, breaker_generation(to), breaker__open_left_ns(from), k,
                                      &none);
        break;
    case BREAKER_HALF_OPEN:
        (void)breaker__trip_outside_k(to, breaker_generation(to), 1, k, &none);
        break;
    case BREAKER_FORCED_OPEN:
        (void)breaker_force_open(to);
        break;
    case BREAKER_FORCED_CLOSED: {
        uint64_t left = breaker__forced_left_ns(from);
        (void)(left != 0 ? breaker_force_closed_for(to, left) : breaker_force_closed(to));
        break;
    }
    case BREAKER_CLOSED:
        break;
    }
    if (breaker_shadow(from)) (void)breaker_set_shadow(to, 1);
    to->cfg.on_event = on_event;
    to->owner.on_event = owner_on_event;
}

/* Under st->lock: attach the handle `h` lists to its name in the file
 * mapped now, and forward it there; the file's lock by `deadline`. */
static int forward_locked(breaker_store *st, struct store_handle *h, uint64_t deadline, char *msg,
                          size_t len) {
    breaker *from = h->b;
    breaker *to = NULL;
    bool created = false;
    /* The limits as they are now, if this process makes the new file's
     * breaker: a live change (breaker_reconfigure()) moves with it. The
     * handle's seed as it was attached (0: drawn, see seed_drawn). */
    breaker_config cfg;
    breaker_get_config(from, &cfg);
    cfg.seed = from->cfg.seed;
    int rc = attach_locked(st, h->name, &cfg, &from->owner, &from->gate, from, deadline, &to,
                           &created, msg, len);
    if (rc != BREAKER_OK) return rc;
    breaker__set_home(to, store_detach, st);
    breaker__set_home_lock(to, store_lock_limits);
    breaker__set_home_control(to, store_record_control);
    breaker__forward(from, to);
    h->b = to;
    h->map = st->map;
    st->stats.forwarded++;
    return BREAKER_OK;
}

/* Under st->lock: move to the file at the path if it is another, then
 * forward every handle still on an older file, each file lock taken by
 * `deadline` (once it has passed, tried once: a handle not forwarded then
 * is the next check's). The first failure is the return (and `msg`); the
 * others are tried all the same. */
static int follow_locked(breaker_store *st, uint64_t deadline, char *msg, size_t len) {
    breaker__count(&st->checks);
    int moved = move_locked(st, deadline, msg, len);
    int rc = moved;
    uint64_t stranded = 0;
    for (size_t i = 0; i < st->n_handles; i++) {
        if (st->handles[i].map == st->map) continue;
        /* Each handle is tried, whatever the ones before it did; the
         * message keeps the first failure. */
        int frc = moved == BREAKER_OK
                      ? forward_locked(st, &st->handles[i], deadline, rc == BREAKER_OK ? msg : NULL,
                                       rc == BREAKER_OK ? len : 0)
                      : moved;
        if (frc != BREAKER_OK) {
            stranded++;
            if (rc == BREAKER_OK) rc = frc;
        }
    }
    st->stats.stranded = stranded;
    breaker__write(&st->stranded_now, stranded);
    st->stats.last_status = rc;
    return rc;
}

int breaker_store_check(breaker_store *st, char *msg, size_t msg_len) {
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    uint64_t deadline = call_deadline(st);
    int rc = lock_store(st, deadline, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    rc = follow_locked(st, deadline, msg, msg_len);
    pthread_mutex_unlock(&st->lock);
    return rc;
}

/* The watcher's call (watcher.h): a look at the path without the lock, and
 * a check under it when the path names another file (or none), or a handle
 * is still stranded on an older one. The message is unused (the stats keep
 * the status). */
static void watch_path(void *ctx) {
    breaker_store *st = ctx;
    struct stat sb;
    bool same = lstat(st->path, &sb) == 0 &&
                (uint64_t)sb.st_dev == breaker__read(&st->mapped_dev) &&
                (uint64_t)sb.st_ino == breaker__read(&st->mapped_ino);
    if (same && breaker__read(&st->stranded_now) == 0) {
        breaker__count(&st->checks);
        return;
    }
    (void)breaker_store_check(st, NULL, 0);
}

void breaker_store_stats_get(breaker_store *st, breaker_store_stats *out) {
    pthread_mutex_lock(&st->lock);
    *out = st->stats;
    out->checks = breaker__read(&st->checks);
    out->handles = st->n_handles;
    pthread_mutex_unlock(&st->lock);
}

int breaker_store_attach(breaker_store *st, const char *name, const breaker_config *cfg,
                         breaker **out, char *msg, size_t msg_len) {
    *out = NULL;
    int rc = breaker_name_validate(name, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    return breaker__store_attach_owned(st, name, cfg, NULL, out, msg, msg_len);
}

int breaker__store_attach_bound(breaker_store *st, const char *name, const breaker_config *cfg,
                                const breaker_owner *owner, const breaker_probe_gate *gate,
                                breaker **out, char *msg, size_t msg_len) {
    if (out == NULL) return BREAKER_EINVAL;
    *out = NULL;
    int rc = breaker_name_validate(name, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    return store_attach(st, name, cfg, owner, gate, out, msg, msg_len);
}

int breaker__store_attach_owned(breaker_store *st, const char *name, const breaker_config *cfg,
                                const breaker_owner *owner, breaker **out, char *msg,
                                size_t msg_len) {
    return store_attach(st, name, cfg, owner, NULL, out, msg, msg_len);
}

/* Attach `name` (validated) with `owner` and `gate` (either may be NULL). */
static int store_attach(breaker_store *st, const char *name, const breaker_config *cfg,
                        const breaker_owner *owner, const breaker_probe_gate *gate, breaker **out,
                        char *msg, size_t msg_len) {
    *out = NULL;
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    int rc;
    if (cfg != NULL && (rc = breaker_config_validate(cfg, msg, msg_len)) != BREAKER_OK) return rc;
    /* Every lock of this call by one deadline: a registry's get of a new
     * name waits no longer than lock_wait_ns, whoever holds what. */
    uint64_t deadline = call_deadline(st);
    if ((rc = lock_store(st, deadline, msg, msg_len)) != BREAKER_OK) return rc;
    /* The file at the path first; a failure to get there is the next
     * check's business (this attach goes to the file mapped now). */
    (void)follow_locked(st, deadline, NULL, 0);
    bool created = false;
    rc = attach_locked(st, name, cfg, owner, gate, NULL, deadline, out, &created, msg, msg_len);
    if (rc == BREAKER_OK && (rc = track_locked(st, *out, name)) != BREAKER_OK) {
        breaker_destroy(*out); /* no home yet: does not take the lock */
        *out = NULL;
    }
    if (rc == BREAKER_OK) {
        breaker__set_home(*out, store_detach, st);
        breaker__set_home_lock(*out, store_lock_limits);
        breaker__set_home_control(*out, store_record_control);
    }
    pthread_mutex_unlock(&st->lock);
    if (rc != BREAKER_OK) return rc;
    if (!created && cfg != NULL) {
        breaker_config mine, stored;
        breaker_config_effective(cfg, &mine);
        breaker__block_config((*out)->shared, &stored);
        if (!same_limits(&mine, &stored))
            return breaker__fail(BREAKER_CONFIG_DIFFERS, msg, msg_len,
                                 "%s: %s exists with other limits; they win "
                                 "(breaker_get_config() shows them)",
                                 st->path, name);
    }
    return BREAKER_OK;
}

breaker_backend *breaker_store_backend(breaker_store *st) { return &st->backend; }

int breaker_store_foreach(breaker_store *st, int (*fn)(void *ctx, const char *name), void *ctx) {
    /* The file at the path, as at attach; its mapping stays while the store
     * is open, so the walk needs no lock (fn may attach). The store's mutex
     * is held by another thread for its own bounded wait at most; a move
     * that cannot take the new file's lock in time waits for the next
     * look, and the walk is of the file mapped now. */
    pthread_mutex_lock(&st->lock);
    (void)follow_locked(st, call_deadline(st), NULL, 0);
    const struct store_header *h = header_of(st);
    const struct store_entry *e = entries_of(st);
    uint32_t capacity = st->capacity;
    pthread_mutex_unlock(&st->lock);
    uint32_t used = atomic_load_explicit(&h->names, memory_order_acquire);
    if (used > capacity) used = capacity;
    for (uint32_t i = 0; i < used; i++) {
        if (atomic_load_explicit(&e[i].state, memory_order_acquire) != ENTRY_READY) continue;
        char name[BREAKER_NAME_MAX + 1];
        memcpy(name, e[i].name, sizeof(name));
        /* A damaged entry's name (no NUL in its field, or not a valid name)
         * is no name anyone can attach: skipped. */
        if (memchr(name, '\0', sizeof(name)) == NULL ||
            breaker_name_validate(name, NULL, 0) != BREAKER_OK)
            continue;
        int rc = fn(ctx, name);
        if (rc != 0) return rc;
    }
    return 0;
}

void breaker__store_claims(breaker_store *st, uint64_t out[8]) {
    _Static_assert(BREAKER__OWNED_STRIPES == 8, "the claim table's size in file_store.h");
    pthread_mutex_lock(&st->lock);
    const struct store_header *h = header_of(st);
    pthread_mutex_unlock(&st->lock);
    for (unsigned i = 0; i < BREAKER__OWNED_STRIPES; i++)
        out[i] = atomic_load_explicit(&h->claims[i], memory_order_relaxed);
}

/* ---- What a host-wide backend reads (store/file/host.h, host_lock.c) ---------------- */

const breaker *breaker__store_attached(const breaker *b) {
    /* Written before the forward was published (breaker__forward()), which
     * is how a caller got this handle: no order needed. */
    return b->face != NULL ? b->face : b;
}

int breaker__store_file_now(breaker_store *st, struct breaker__store_file *out, int *fd, char *msg,
                            size_t len) {
    *fd = -1;
    uint64_t deadline = breaker__lock_deadline(BRIEF_LOCK_WAIT_NS);
    int rc = lock_store(st, deadline, msg, len);
    if (rc != BREAKER_OK) return rc;
    /* Opened again through this process's descriptor of it: the very file
     * mapped (an unlinked one too), a file description of the caller's. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", st->fd);
    int nfd = open(self, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (nfd < 0 || fstat(nfd, &sb) != 0 || sb.st_dev != st->dev || sb.st_ino != st->ino) {
        rc = nfd < 0 ? fail_errno(BREAKER_EIO, msg, len, "open again for its host lock", st->path)
                     : breaker__fail(BREAKER_EIO, msg, len,
                                     "%s: opened again for its host lock, another file", st->path);
        if (nfd >= 0) close(nfd);
        pthread_mutex_unlock(&st->lock);
        return rc;
    }
    out->map = st->map;
    out->entries_off = st->entries_off;
    out->capacity = st->capacity;
    out->id = st->store_id;
    out->dev = (uint64_t)st->dev;
    out->ino = (uint64_t)st->ino;
    pthread_mutex_unlock(&st->lock);
    *fd = nfd;
    return BREAKER_OK;
}

int breaker__store_maps(const breaker_store *st, const struct breaker__store_file *file) {
    /* The watcher's view: lock-free, a move written under the lock. */
    return breaker__read(&st->mapped_dev) == file->dev &&
           breaker__read(&st->mapped_ino) == file->ino;
}

static struct store_entry *file_entries(const struct breaker__store_file *file) {
    return (struct store_entry *)(void *)(file->map + file->entries_off);
}

int breaker__store_file_slot(const struct breaker__store_file *file, const char *name,
                             uint32_t *slot) {
    const struct store_entry *e = file_entries(file);
    const struct store_header *h = (const struct store_header *)(const void *)file->map;
    /* Acquire: pairs with the release store of `names` (and of each state)
     * under the file lock, so an entry counted is whole. */
    uint32_t used = atomic_load_explicit(&h->names, memory_order_acquire);
    if (used > file->capacity) used = file->capacity;
    for (uint32_t i = 0; i < used; i++)
        if (atomic_load_explicit(&e[i].state, memory_order_acquire) == ENTRY_READY &&
            strncmp(e[i].name, name, sizeof(e[i].name)) == 0) {
            *slot = i;
            return BREAKER_OK;
        }
    return BREAKER_NOT_FOUND;
}

uint64_t breaker__store_file_slot_offset(const struct breaker__store_file *file, uint32_t slot) {
    return file->entries_off + (uint64_t)slot * sizeof(struct store_entry);
}

breaker__atomic64 *breaker__store_file_words(const struct breaker__store_file *file,
                                             uint32_t slot) {
    return file_entries(file)[slot].host;
}

/* The entry of `name` in the file mapped now (st->lock held), or NULL. */
static struct store_entry *entry_named(breaker_store *st, const char *name) {
    struct breaker__store_file now = {
        .map = st->map, .entries_off = st->entries_off, .capacity = st->capacity};
    uint32_t slot = 0;
    return breaker__store_file_slot(&now, name, &slot) == BREAKER_OK ? &entries_of(st)[slot] : NULL;
}

/* ---- The last operator control (breaker_store_last_control()) ---------------------
 * One record per entry under a seqlock (struct store_entry, control_seq):
 * its writer holds the file lock, so there is one at a time, in any
 * process; its readers take no lock and retry a torn copy. Every word is
 * an atomic, read and written relaxed, so a copy that races a writer is a
 * stale or mixed value, never undefined behaviour; the seq around it says
 * whether it was whole. A writer killed between its two stores leaves the
 * seq odd: readers give up on it (no record) and the next writer, under
 * the lock, writes a whole record and makes it even. */

/* How long a reader waits for a whole copy of a record a writer is
 * changing before it says "none": a writer holds the seq odd for some 40
 * stores, so CONTROL_READ_YIELDS tries yielding between them are enough
 * unless it was descheduled in the middle; then CONTROL_READ_NAPS of 100
 * us (10 ms in all), after which it is taken for a dead writer's. */
#define CONTROL_READ_YIELDS 256
#define CONTROL_READ_NAPS   100

static const char *const control_names[] = {
    [BREAKER_STORE_CONTROL_NONE] = "none",
    [BREAKER_STORE_CONTROL_FORCED_OPEN] = "forced_open",
    [BREAKER_STORE_CONTROL_FORCED_CLOSED] = "forced_closed",
    [BREAKER_STORE_CONTROL_RESET] = "reset",
    [BREAKER_STORE_CONTROL_OPEN_FOR] = "open_for",
};

/* Write `rec` into `e`'s record. Under the file lock (the only writer). */
static void control_write(struct store_entry *e, const struct store_control *rec) {
    uint64_t words[STORE_CONTROL_WORDS];
    memcpy(words, rec, sizeof(words));
    /* relaxed: the file lock orders writers, and its holder alone stores
     * the seq. Odd from here: an even seq made odd, or a dead writer's odd
     * kept (this write replaces its half-written words). */
    uint64_t odd = breaker__read(&e->control_seq) | 1;
    atomic_store_explicit(&e->control_seq, odd, memory_order_relaxed);
    /* Release, each word: the odd seq is ordered before every word stored
     * below, so a reader whose copy saw one of them sees, after its
     * acquire fence, a seq other than the one it started from. (Release
     * stores, not a release fence and relaxed stores: the same order, and
     * GCC's ThreadSanitizer refuses atomic_thread_fence; plain moves on
     * x86-64, and this is an operator's path.) */
    for (size_t i = 0; i < STORE_CONTROL_WORDS; i++)
        atomic_store_explicit(&e->control[i], words[i], memory_order_release);
    /* Release: pairs with the reader's acquire load of the seq; a reader
     * that sees this even value sees every word above. (2^63 controls
     * would wrap it to 0, "none": never reached.) */
    atomic_store_explicit(&e->control_seq, odd + 1, memory_order_release);
}

/* A whole copy of `e`'s record into `out`. `locked`: the caller holds the
 * file lock, so no writer is under way and an odd seq is a dead writer's:
 * one look. @return false: none written, or no whole copy in the time
 * above (a writer died mid-write). */
static bool control_read(const struct store_entry *e, struct store_control *out, bool locked) {
    uint64_t words[STORE_CONTROL_WORDS];
    int tries = locked ? 1 : CONTROL_READ_YIELDS + CONTROL_READ_NAPS;
    for (int t = 0; t < tries; t++) {
        if (t > 0 && t < CONTROL_READ_YIELDS) {
            sched_yield();
        } else if (t > 0) {
            struct timespec nap = {.tv_sec = 0, .tv_nsec = 100000};
            nanosleep(&nap, NULL);
        }
        /* Acquire: pairs with the writer's release store of the even seq,
         * so the words below are at least that record's. */
        uint64_t seq = atomic_load_explicit(&e->control_seq, memory_order_acquire);
        if (seq == 0) return false;
        if (seq & 1) continue;
        for (size_t i = 0; i < STORE_CONTROL_WORDS; i++)
            words[i] = atomic_load_explicit(&e->control[i], memory_order_relaxed);
        /* Acquire fence: the copy above is ordered before the seq read
         * again below; pairs with the writer's release stores of the words
         * (a word of a newer write seen means its odd seq, or later, is
         * seen here). */
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&e->control_seq, memory_order_relaxed) != seq) continue;
        memcpy(out, words, sizeof(words));
        return true;
    }
    return false;
}

/* Whether `text` (a field of `size` bytes read from the file) is a NUL
 * within `max` bytes, printable before it. */
static bool control_text_ok(const char *text, size_t size, size_t max) {
    const char *nul = memchr(text, '\0', size);
    if (nul == NULL || (size_t)(nul - text) > max) return false;
    for (const char *p = text; p < nul; p++)
        if (!breaker__text_byte_ok((unsigned char)*p)) return false;
    return true;
}

/* Whether a record read from the file is one a writer could have made: the
 * file is input (another build, a bit flip, a hand edit). */
static bool control_valid(const struct store_control *rec) {
    if (rec->action < BREAKER_STORE_CONTROL_FORCED_OPEN ||
        rec->action > BREAKER_STORE_CONTROL_OPEN_FOR)
        return false;
    if (rec->at_ns == 0 || rec->generation == 0) return false;
    bool timed = rec->action == BREAKER_STORE_CONTROL_OPEN_FOR ||
                 rec->action == BREAKER_STORE_CONTROL_FORCED_CLOSED;
    if (rec->until_ns != 0 && (!timed || rec->until_ns <= rec->at_ns)) return false;
    if (rec->action == BREAKER_STORE_CONTROL_OPEN_FOR && rec->until_ns == 0) return false;
    return control_text_ok(rec->who, sizeof(rec->who), BREAKER_WHO_MAX) &&
           control_text_ok(rec->why, sizeof(rec->why), BREAKER_WHY_MAX);
}

static uint64_t realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* breaker_control_apply()'s word to the store (breaker__set_home_control):
 * `b`'s control made a transition; record it in its entry, under the store's
 * lock and the file's. Not recorded: a handle still on an older file (the
 * file at the path is the one people read), and a control older than the
 * record (another process's, for a later generation, got the lock first). */
static void store_record_control(void *ctx, breaker *b, const struct breaker__control_made *made) {
    breaker_store *st = ctx;
    struct store_control rec;
    memset(&rec, 0, sizeof(rec));
    rec.action = made->action == BREAKER_CONTROL_FORCE_OPEN ? BREAKER_STORE_CONTROL_FORCED_OPEN
                 : made->action == BREAKER_CONTROL_FORCE_CLOSED
                     ? BREAKER_STORE_CONTROL_FORCED_CLOSED
                 : made->action == BREAKER_CONTROL_RESET ? BREAKER_STORE_CONTROL_RESET
                                                         : BREAKER_STORE_CONTROL_OPEN_FOR;
    rec.at_ns = realtime_ns();
    if (made->action == BREAKER_CONTROL_OPEN_FOR || made->action == BREAKER_CONTROL_FORCE_CLOSED)
        rec.until_ns = made->for_ns != 0 ? rec.at_ns + made->for_ns : 0;
    rec.generation = made->generation;
    /* Checked by the core already; bounded again all the same. */
    if (made->who != NULL) memcpy(rec.who, made->who, strnlen(made->who, BREAKER_WHO_MAX));
    if (made->why != NULL) memcpy(rec.why, made->why, strnlen(made->why, BREAKER_WHY_MAX));
    /* Briefly, for both locks: a flusher applying a fleet order comes here
     * with its rounds waiting (a record not made then is the only loss;
     * the control stands). */
    uint64_t deadline = breaker__lock_deadline(BRIEF_LOCK_WAIT_NS);
    if (lock_store(st, deadline, NULL, 0) != BREAKER_OK) return;
    const char *name = NULL;
    for (size_t i = 0; i < st->n_handles && name == NULL; i++)
        if (st->handles[i].b == b && st->handles[i].map == st->map) name = st->handles[i].name;
    if (name != NULL && breaker__file_lock_until(st->fd, deadline) == 0) {
        struct store_entry *e = entry_named(st, name);
        struct store_control old;
        /* A valid record of a later generation, not past the breaker's own,
         * stands; one that is damaged, or claims a generation the breaker
         * never reached, is replaced. */
        bool stands = e != NULL && control_read(e, &old, true) && control_valid(&old) &&
                      old.generation > rec.generation && old.generation <= breaker_generation(b);
        if (e != NULL && !stands) control_write(e, &rec);
        flock(st->fd, LOCK_UN);
    }
    pthread_mutex_unlock(&st->lock);
}

int breaker_store_last_control(breaker_store *st, const char *name, breaker_store_control *out,
                               char *msg, size_t msg_len) {
    memset(out, 0, sizeof(*out));
    memcpy(out->action_name, "none", sizeof("none"));
    if (msg != NULL && msg_len > 0) msg[0] = '\0';
    int rc = breaker_name_validate(name, msg, msg_len);
    if (rc != BREAKER_OK) return rc;
    /* The file at the path, as at attach; its mapping stays while the store
     * is open, so the read needs no lock. */
    uint64_t deadline = call_deadline(st);
    if ((rc = lock_store(st, deadline, msg, msg_len)) != BREAKER_OK) return rc;
    (void)follow_locked(st, deadline, NULL, 0);
    const struct store_entry *e = entry_named(st, name);
    pthread_mutex_unlock(&st->lock);
    if (e == NULL)
        return breaker__fail(BREAKER_NOT_FOUND, msg, msg_len, "%s: no breaker named %s", st->path,
                             name);
    struct store_control rec;
    if (!control_read(e, &rec, false) || !control_valid(&rec)) return BREAKER_OK; /* none */
    out->action = (enum breaker_store_control_action)rec.action;
    snprintf(out->action_name, sizeof(out->action_name), "%s", control_names[rec.action]);
    memcpy(out->who, rec.who, strlen(rec.who)); /* valid: a NUL within the maximum */
    memcpy(out->why, rec.why, strlen(rec.why));
    out->at_ns = rec.at_ns;
    out->until_ns = rec.until_ns;
    out->generation = rec.generation;
    return BREAKER_OK;
}
