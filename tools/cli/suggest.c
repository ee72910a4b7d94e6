/* SPDX-License-Identifier: MIT */
/*
 * suggest.c - "did you mean ...?" for a mistyped option, command or key.
 *
 * The closest candidate by edit distance (insertions, deletions,
 * substitutions and swaps of two neighbours, each costing 1), if it is close
 * enough to be a typo rather than another word: at most 2 edits, and at most
 * half the word's length. Ties go to a candidate the word is a
 * shortened form of.
 */
#include "cli/text.h"

#include <string.h>

#define SUGGEST_MAX_LEN 64 /* longer words are no typo of an option */

/* Optimal string alignment distance between `a` and `b` (lengths at most
 * SUGGEST_MAX_LEN), as three rolling rows. */
static size_t distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    size_t rows[3][SUGGEST_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = prev[j - 1] + cost;
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

/* True if `word` is `candidate` with letters left out: a dropped key is the
 * likeliest typo, so it wins a tie ("sed" is "seed", not "set"). */
static bool is_subsequence(const char *word, const char *candidate) {
    for (; *candidate != '\0' && *word != '\0'; candidate++)
        word += *word == *candidate;
    return *word == '\0';
}

const char *tool_suggest(const char *word, const char *const *candidates, size_t count) {
    size_t len = strlen(word);
    if (len == 0 || len > SUGGEST_MAX_LEN) return NULL;
    const char *best = NULL;
    size_t best_score = 2 * 3; /* at most 2 edits, scored twice, less 1 for a subsequence */
    for (size_t i = 0; i < count; i++) {
        if (strlen(candidates[i]) > SUGGEST_MAX_LEN) continue;
        size_t d = distance(word, candidates[i]);
        size_t score = 2 * d - (is_subsequence(word, candidates[i]) ? 1 : 0);
        if (d <= 2 && 2 * d <= len && score < best_score) {
            best = candidates[i];
            best_score = score;
        }
    }
    return best;
}
