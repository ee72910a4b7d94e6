/* SPDX-License-Identifier: MIT */
/*
 * breaker/store.h - breakers shared by the processes of one host.
 *
 * A store is a file, memory-mapped by every process that opens it, holding
 * named breakers: a process that attaches a name gets the same breaker as
 * every other process attached to it (one trip, one probe budget, one set of
 * counters), with no server and no lock on the call path. The file lives for
 * one boot: the breakers' times are CLOCK_MONOTONIC, which every process of a
 * boot shares, and a file left by an earlier boot is reinitialised rather
 * than trusted.
 *
 * Configuration: the first process to attach a name creates the breaker with
 * its configuration; a later one with different limits still attaches, to
 * the stored limits (they win: never two limits mixed), and is told so with
 * BREAKER_CONFIG_DIFFERS; breaker_get_config() then shows the stored limits.
 * The callbacks, contexts and clock are each process's own.
 *
 * Thread-safety: a store may be used from any thread; attach and open take a
 * file lock (flock) for their short bookkeeping, never the call path (a
 * signal that interrupts the wait for it, a handler without SA_RESTART, is
 * not an error: the wait goes on).
 *
 * No wait without a bound: a process stopped while it holds the file's lock
 * (SIGSTOP, a debugger, a frozen cgroup), or one holding it on purpose
 * (`flock -x FILE ...`), makes no other process wait past the bound. Each
 * call waits for the file's lock, and for the store's own lock that
 * another thread of the process holds while it waits, at most
 * `lock_wait_ns` (default 1 s) in all: breaker_store_open(),
 * breaker_store_attach() (so a registry's get of a new name through the
 * store, breaker/registry.h), breaker_store_check(),
 * breaker_store_last_control() and breaker_reconfigure() on a store
 * breaker then fail with BREAKER_EBUSY, `msg` naming the holder when
 * /proc/locks says ("process 1234 (stopped)"); nothing is changed, try
 * again. An operator's control (breaker_control_apply()) stands whatever
 * the lock: only its record waits, about 10 ms at most, and is skipped past
 * that. The watcher and breaker_store_foreach() skip a move they cannot
 * lock in time (the next look tries again). `breaker exec` and the other
 * commands then exit 74 (docs/cli.md). The call path never takes the lock.
 *
 * A process may die at any instruction: a probe it held is reclaimed at its
 * deadline, a transition is one CAS, the counter stripe a thread of it
 * claimed is taken over by a later process (however many come and go), and
 * its unsettled calls (admitted, never completed) are all that is lost. A
 * process killed while it creates or reinitialises the file leaves it marked
 * as being laid out, and the next opener lays it out again.
 *
 * Speed: a call on a store breaker runs the same code as on a heap breaker
 * (the same instructions; no lock, no system call but the clock; a thread's
 * first call on a store reads /proc to claim its stripe, and a thread left
 * without one tries again every 65536 calls). A store
 * file has 8 owned counter stripes for all the threads of all its processes:
 * a thread claims one on its first call and writes it with plain stores;
 * threads beyond those 8 count with atomic increments, exactly but slower.
 * A process has owned stripes in up to 8 store files. Processes sharing a
 * file must share a PID namespace (a claim is a pid and a start time): from
 * another namespace a live claimant may look dead, and two writers of one
 * stripe may then lose counts (never more).
 *
 * The file at the path wins: a store whose file was unlinked (a tmp cleaner)
 * or replaced (a rename over it) notices within one check interval (a
 * watcher thread looks at the path every `check_ns`, one lstat without a
 * lock, never on the call path; also at every breaker_store_attach(),
 * breaker_store_foreach() and breaker_store_check()) and moves to the file
 * at the path, creating it again when it is gone and the store was opened
 * with BREAKER_STORE_CREATE. Every handle attached through the store then
 * follows: it is attached to its name in that file (whose limits win, as at
 * any attach) and forwards every later call and query there, so the
 * processes of the host agree again within one interval of the last one's
 * check. What a move loses: the old file's counts (the window, the
 * counters, which start again from the new file's: a counter can go down)
 * and the calls in flight at the move, which complete on the old file (a
 * transition they cause there is not reported: it is no transition of the
 * breaker the handle now follows). Each move keeps the old file mapped and
 * the replaced handles allocated until breaker_store_close() (calls in
 * flight may still touch them): a path deleted every second for a day is
 * 86400 mappings, near the kernel's default vm.max_map_count. An
 * OPEN, FORCED_OPEN or FORCED_CLOSED state is carried to a name this
 * process creates in the new file (OPEN with the wait it had left and its
 * backoff level; a HALF_OPEN resumes probing at once; FORCED_CLOSED with
 * the expiry it had left), and so are shadow mode and the limits as a live
 * change left them (breaker_reconfigure()); a name another process created
 * there keeps its own state and limits. When the path cannot be opened, or a name cannot be
 * attached there (the file is full), the store stays on its file for those
 * handles and tries again at the next check; breaker_store_stats_get() counts
 * moves, forwarded and stranded handles (docs/operating.md).
 *
 * Operators' controls: the file keeps, per breaker, the last control given
 * with breaker_control_apply() through any process (`breaker open|close|
 * reset`): its action, who, why, wall-clock time, end and generation,
 * readable by every process with breaker_store_last_control() (`breaker
 * status` shows it). The controlling process writes it under the file lock
 * after its transition; readers take no lock (a seqlock: a record being
 * written is read again, never torn; one its writer died in the middle of
 * reads as none until the next control).
 *
 * fork(): a fork takes every open store's lock for its duration, so the
 * child's stores are usable whatever another thread was doing. The watcher
 * thread does not survive it: a child that keeps a store opened before the
 * fork has no watcher (and shares the parent's file lock, so the two do not
 * exclude each other's bookkeeping): open the store in each process, after
 * the fork.
 *
 * One flusher per host: a fleet handle opened with a store
 * (breaker/redis.h, breaker_redis_config.store) elects, per name, the one
 * process of the host that reports the name's breaker to Redis, by a
 * kernel lock on the name's byte of the file (an OFD byte-range lock, on a
 * file description of the handle's own: held while the handle holds the
 * name, freed by the kernel when the process dies, kept while it is
 * stopped; docs/fleet.md). It never conflicts with the store's own flock()
 * on a local file system (on NFS, where flock() is emulated with
 * byte-range locks, a store file has no place anyway). After a move the
 * handle's next round leaves the old file's locks and takes the names in
 * the new file. Close the fleet handle before the store.
 *
 * A registry can keep its breakers in a store: breaker_registry_config.backend
 * = breaker_store_backend(st), or its short form .store = st
 * (breaker/registry.h).
 */
#ifndef BREAKER_STORE_H
#define BREAKER_STORE_H

#include <breaker.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct breaker_store breaker_store; /* opaque */

enum breaker_store_flags {
    BREAKER_STORE_CREATE = 1,       /* create the file if it does not exist */
    BREAKER_STORE_ALLOW_SHARED = 2, /* accept a group- or world-writable file, or one
                                       owned by another user (refused by default) */
    BREAKER_STORE_NO_WATCHER = 4,   /* start no watcher thread: the path is looked at
                                       only by attach, foreach and breaker_store_check() */
};

typedef struct breaker_store_config breaker_store_config;
struct breaker_store_config {
    unsigned flags;        /* enum breaker_store_flags */
    unsigned mode;         /* permissions of a created file: 0 = default 0600 */
    uint32_t capacity;     /* names a created file holds: 1..65536, 0 = default 256 */
    uint64_t size;         /* bytes of a created file (sparse): 0 = default 16 MiB;
                              at least what `capacity` breakers of default size need */
    uint64_t check_ns;     /* how often the watcher looks at the path: 1 ms .. 1 h,
                              0 = default 1 s */
    uint64_t lock_wait_ns; /* longest wait of one call for the file's lock
                              (see "No wait without a bound"): 1 ms .. 1 min,
                              0 = default 1 s */
};

/*! breaker_store_config_init() : clear `cfg`, then the defaults above with
 *  BREAKER_STORE_CREATE. */
BREAKER_API void breaker_store_config_init(breaker_store_config *cfg) BREAKER_NONNULL(1);

/*! breaker_store_open() :
 *  Map the store file at `path` (NULL config: defaults). The file must be a
 *  regular file (a symlink is refused), owned by this user and not writable
 *  by group or others unless BREAKER_STORE_ALLOW_SHARED; a file of another
 *  format, version or build is refused, never reinterpreted; one from an
 *  earlier boot is reinitialised. Two processes creating the same file at
 *  once end up with one file.
 *  @return BREAKER_OK with `*out`; BREAKER_EINVAL (bad path or config),
 *  BREAKER_NOT_FOUND (no file and no BREAKER_STORE_CREATE), BREAKER_EIO (a
 *  system call failed, or the file is refused for its type or permissions),
 *  BREAKER_EINCOMPATIBLE (another format, version or build, or a damaged
 *  file: truncated, or a header field that does not fit, named in `msg`),
 *  BREAKER_EBUSY (another process held the file's lock for lock_wait_ns).
 *  `msg` (may be NULL when msg_len is 0) says what and why. */
BREAKER_API BREAKER_NODISCARD int breaker_store_open(const char *path,
                                                     const breaker_store_config *cfg,
                                                     breaker_store **out, char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 3);

/*! breaker_store_close() : unmap the store. Every breaker attached through it
 *  must have been destroyed first (a registry using it, too). The file and
 *  its breakers stay for the other processes. NULL is a no-op. */
BREAKER_API void breaker_store_close(breaker_store *st);

/*! breaker_store_attach() :
 *  The breaker named `name` (see breaker_name_validate()) in the store,
 *  created with `cfg` (NULL: defaults) if no process created it yet. The
 *  handle is this process's: destroy it with breaker_destroy() (which leaves
 *  the shared breaker in the store). `cfg`'s clock, callbacks and contexts
 *  are this handle's; its clock must be CLOCK_MONOTONIC-based (the default),
 *  which all processes of a boot share.
 *  @return BREAKER_OK; BREAKER_CONFIG_DIFFERS: attached, to stored limits
 *  that differ from `cfg`'s; BREAKER_EINVAL (bad name or configuration);
 *  BREAKER_ENOSPC (the store is full: names or bytes); BREAKER_EINCOMPATIBLE
 *  (a corrupt stored breaker, or its entry's block outside the data);
 *  BREAKER_EBUSY (the file's lock stayed held for lock_wait_ns: nothing
 *  attached); BREAKER_EIO; BREAKER_ENOMEM. */
BREAKER_API BREAKER_NODISCARD int breaker_store_attach(breaker_store *st, const char *name,
                                                       const breaker_config *cfg, breaker **out,
                                                       char *msg, size_t msg_len)
    BREAKER_NONNULL(1, 2, 4);

/*! breaker_store_foreach() : call `fn` with each stored name, in creation
 *  order, until it returns non-zero (which is then returned). Names created
 *  meanwhile by other processes may or may not be seen; a damaged entry's
 *  name (not NUL-terminated, or not a valid name) is skipped. @return 0 or
 *  fn's. */
BREAKER_API int breaker_store_foreach(breaker_store *st, int (*fn)(void *ctx, const char *name),
                                      void *ctx) BREAKER_NONNULL(1, 2);

/*! breaker_store_check() :
 *  Look at the path now, as the watcher does every check interval: if the
 *  file there is not the one mapped (unlinked, replaced), move to it; then
 *  attach every handle still on an older file to its name there and forward
 *  it (see "The file at the path wins" above). Takes the store's lock and
 *  the file's; never the call path's business. Thread-safe (also from an
 *  event callback: no callback runs under the store's lock).
 *  @return BREAKER_OK: the store and every handle attached through it are on
 *  the file at the path. BREAKER_NOT_FOUND (no file at the path and no
 *  BREAKER_STORE_CREATE), BREAKER_EIO, BREAKER_EINCOMPATIBLE (the file at
 *  the path cannot be used), BREAKER_ENOSPC (it cannot hold a handle's
 *  name), BREAKER_EBUSY (a lock stayed held for lock_wait_ns),
 *  BREAKER_ENOMEM: the store, or some handles, stay where they are and the
 *  next check tries again; `msg` says which path or name and why. */
BREAKER_API int breaker_store_check(breaker_store *st, char *msg, size_t msg_len)
    BREAKER_NONNULL(1);

/* What breaker_store_stats_get() reports: counters since breaker_store_open(). */
typedef struct breaker_store_stats breaker_store_stats;
struct breaker_store_stats {
    uint64_t checks;    /* looks at the path (watcher, attach, foreach, check) */
    uint64_t moves;     /* times the store moved to another file at its path */
    uint64_t forwarded; /* handles attached again on a newer file, and forwarded */
    uint64_t stranded;  /* handles on an older file now (not attachable there yet) */
    uint64_t handles;   /* handles attached through the store now */
    int last_status;    /* the last check's return (BREAKER_OK, or why it stayed) */
};

/*! breaker_store_stats_get() : the counters above. Thread-safe. */
BREAKER_API void breaker_store_stats_get(breaker_store *st, breaker_store_stats *out)
    BREAKER_NONNULL(1, 2);

/* What breaker_store_last_control() reports: which operator's control it
 * was (the fleet's orders, breaker/redis.h, number them alike: 1 open, 2
 * closed, 3 reset). Append-only. */
enum breaker_store_control_action {
    BREAKER_STORE_CONTROL_NONE = 0,          /* none recorded (or none readable) */
    BREAKER_STORE_CONTROL_FORCED_OPEN = 1,   /* BREAKER_CONTROL_FORCE_OPEN */
    BREAKER_STORE_CONTROL_FORCED_CLOSED = 2, /* BREAKER_CONTROL_FORCE_CLOSED, until_ns
                                                its expiry if it had one */
    BREAKER_STORE_CONTROL_RESET = 3,         /* BREAKER_CONTROL_RESET */
    BREAKER_STORE_CONTROL_OPEN_FOR = 4       /* BREAKER_CONTROL_OPEN_FOR, reason
                                                BREAKER_REASON_OPERATOR */
};

/* The last operator's control of a store breaker, by value. */
typedef struct breaker_store_control breaker_store_control;
struct breaker_store_control {
    enum breaker_store_control_action action;
    char action_name[16];          /* "none", "forced_open", "forced_closed", "reset",
                                      "open_for" */
    char who[BREAKER_WHO_MAX + 1]; /* breaker_control.who: printable text, "" if none
                                      was given; the bytes after the NUL zero */
    char why[BREAKER_WHY_MAX + 1]; /* breaker_control.why, the same */
    uint64_t at_ns;                /* when it was made: CLOCK_REALTIME (wall-clock) ns, for people
                                      (the controlling host's clock; no breaker time) */
    uint64_t until_ns;             /* when it ends (OPEN_FOR, a timed FORCED_CLOSED): at_ns + its
                                      duration, CLOCK_REALTIME ns; 0 for the others */
    uint64_t generation;           /* the breaker generation its transition started */
};

/*! breaker_store_last_control() :
 *  The last operator's control of the breaker `name` in the store (the file
 *  at the path, as at attach), as the process that gave it recorded it, in
 *  any process of the host. Recorded: each breaker_control_apply() on a
 *  handle attached through a store (`breaker open|close|reset`, a fleet
 *  order applied by the flusher of breaker/redis.h) that made a
 *  transition, with its who and why; that call then takes the store's lock
 *  and the file's for the record (the call path never does). Not recorded:
 *  a control that made no transition (already in that state), a
 *  server-directed open, the plain functions (breaker_force_open(), ...;
 *  they stay lock-free), a control older than the record (two processes
 *  racing: the later generation stands), and a control on a handle still
 *  on an older file (see "The file at the path wins"). A move to a new
 *  file, and a file laid out again at a new boot, start with none.
 *  Everything read from the file is checked (a known action, its text
 *  NUL-terminated, printable and within bounds, its times coherent, its
 *  generation not 0): a damaged record, or one whose writer died in the
 *  middle of it (a reader waits up to about 10 ms for one under way),
 *  reads as none, and the next control writes a whole one. The record is
 *  not written when another process holds the file's lock for more than
 *  about 10 ms (one stopped under it): the control itself stands.
 *  @return BREAKER_OK with `*out` (action BREAKER_STORE_CONTROL_NONE and
 *  the rest zero when none is recorded); BREAKER_NOT_FOUND: no breaker of
 *  that name in the file; BREAKER_EINVAL: not a valid name; BREAKER_EBUSY:
 *  another thread of this process held the store's lock for lock_wait_ns. `*out` is
 *  written in every case, `msg` (may be NULL when msg_len is 0) says why.
 *  Takes no file lock (a record being written is read again, a bounded
 *  number of times, never torn); thread-safe; `*out` is the caller's. */
BREAKER_API BREAKER_NODISCARD int breaker_store_last_control(breaker_store *st, const char *name,
                                                             breaker_store_control *out, char *msg,
                                                             size_t msg_len)
    BREAKER_NONNULL(1, 2, 3);

/*! breaker_store_backend() :
 *  The store file as a backend, for breaker_registry_config.backend: a
 *  registry made with it attaches each name to this file's breaker (as
 *  breaker_store_attach() does, keeping a name's stored limits) and detaches
 *  at eviction, leaving the breaker in the file. The backend belongs to `st`
 *  and lives as long as it: destroy every registry using it before
 *  breaker_store_close(). Thread-safe.
 *  @return the backend; never NULL. */
BREAKER_API breaker_backend *breaker_store_backend(breaker_store *st) BREAKER_NONNULL(1);

#ifdef __cplusplus
}
#endif

#endif /* BREAKER_STORE_H */
