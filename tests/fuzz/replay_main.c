/* SPDX-License-Identifier: MIT */
/*
 * replay_main.c - a plain main() for the fuzz targets, so that builds
 * without libFuzzer (gcc, make check) still run every target over its
 * checked-in corpus under the sanitizers.
 *
 * usage: fuzz_TARGET PATH...   each PATH a corpus directory or one input
 *
 * Every regular file of a directory (not recursive, dot files skipped) is
 * read into a buffer of exactly its size, as libFuzzer does, so reading past
 * the input is caught by AddressSanitizer. Finding no input at all is a
 * failure: a mistyped corpus path must not pass silently.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf != NULL && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) free(buf);
            buf = bigger;
            cap *= 2;
        }
    }
    int bad = buf == NULL || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy: one byte past the input is outside the block. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact == NULL) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv) {
    size_t inputs = 0;
    for (int i = 1; i < argc; i++) {
        if (!is_dir(argv[i])) {
            if (run_file(argv[i]) != 0) return 1;
            inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            size_t n = strlen(argv[i]) + strlen(e->d_name) + 2;
            char *path = malloc(n);
            if (path == NULL) return 1;
            snprintf(path, n, "%s/%s", argv[i], e->d_name);
            int rc = 0;
            if (!is_dir(path)) {
                rc = run_file(path);
                inputs++;
            }
            free(path);
            if (rc != 0) {
                closedir(d);
                return 1;
            }
        }
        closedir(d);
    }
    if (inputs == 0) {
        fprintf(stderr, "usage: %s CORPUS_DIR|FILE...: no input found\n", argv[0]);
        return 1;
    }
    printf("%s: %zu inputs replayed, no failure\n", argv[0], inputs);
    return 0;
}
