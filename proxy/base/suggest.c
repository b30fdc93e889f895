/* SPDX-License-Identifier: MIT */
/*
 * Nearest-name suggestions: a two-row dynamic programme (three rows for the
 * swap of neighbours) over names capped at MX_SUGGEST_MAX_LEN, so a call
 * costs at most 65 x 65 steps per candidate and allocates nothing.
 */
#include <stdint.h>

#include "suggest.h"

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

size_t mx_edit_distance(struct mx_str a, struct mx_str b)
{
    size_t rows[3][MX_SUGGEST_MAX_LEN + 1];
    if (a.len > MX_SUGGEST_MAX_LEN || b.len > MX_SUGGEST_MAX_LEN)
        return SIZE_MAX;
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= b.len; j++)
        prev[j] = j;
    for (size_t i = 1; i <= a.len; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= b.len; j++) {
            size_t sub = lower(a.p[i - 1]) == lower(b.p[j - 1]) ? 0 : 1;
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + sub);
            if (i > 1 && j > 1 && lower(a.p[i - 1]) == lower(b.p[j - 2]) &&
                lower(a.p[i - 2]) == lower(b.p[j - 1]) && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[b.len];
}

int mx_suggest(struct mx_str typed, const char *const *cands, size_t cnt)
{
    size_t best = SIZE_MAX;
    int at = -1;
    for (size_t i = 0; i < cnt; i++) {
        if (cands[i] == NULL)
            continue;
        struct mx_str c = mx_str_cstr(cands[i]);
        if (mx_str_eq(typed, c))
            return -1;
        size_t d = mx_edit_distance(typed, c);
        if (d < best) {
            best = d;
            at = (int)i;
        }
    }
    if (at < 0 || best > 2 || best * 3 > typed.len)
        return -1;
    return at;
}
