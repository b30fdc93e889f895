/* SPDX-License-Identifier: MIT */
/* Samples, nearest-rank percentiles and a progress bar for `mcplex bench`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "benchstat.h"
#include "err.h"

void mx_benchstat_init(struct mx_benchstat *s, size_t cap_hint)
{
    memset(s, 0, sizeof(*s));
    s->cap = cap_hint ? cap_hint : 16;
    s->us = mx_xcalloc(s->cap, sizeof(*s->us));
}

void mx_benchstat_clear(struct mx_benchstat *s)
{
    free(s->us);
    memset(s, 0, sizeof(*s));
}

void mx_benchstat_add(struct mx_benchstat *s, int64_t us)
{
    if (s->cnt == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->us = mx_xrealloc(s->us, s->cap * sizeof(*s->us));
    }
    s->us[s->cnt++] = us < 0 ? 0 : us;
    s->sorted = 0;
}

void mx_benchstat_error(struct mx_benchstat *s)
{
    s->errors++;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int mx_benchstat_pct(struct mx_benchstat *s, double pct, int64_t *out)
{
    if (!(pct > 0.0 && pct <= 100.0))
        return MX_EINVAL;
    if (s->cnt == 0)
        return MX_ENOTFOUND;
    if (!s->sorted) {
        qsort(s->us, s->cnt, sizeof(*s->us), cmp_i64);
        s->sorted = 1;
    }
    /* nearest rank: ceil(pct/100 * n), 1-based */
    double r = pct / 100.0 * (double)s->cnt;
    size_t rank = (size_t)r;
    if ((double)rank < r)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank > s->cnt)
        rank = s->cnt;
    *out = s->us[rank - 1];
    return 0;
}

double mx_benchstat_mean(const struct mx_benchstat *s)
{
    if (s->cnt == 0)
        return 0.0;
    double sum = 0.0;
    for (size_t i = 0; i < s->cnt; i++)
        sum += (double)s->us[i];
    return sum / (double)s->cnt;
}

void mx_benchstat_bar(char *out, size_t cap, size_t width, uint64_t done, uint64_t total,
                      const char *label)
{
    char bar[256];
    if (width > sizeof(bar) - 1)
        width = sizeof(bar) - 1;
    if (done > total)
        done = total;
    size_t fill = total ? (size_t)((done * width) / total) : 0;
    unsigned pct = total ? (unsigned)((done * 100) / total) : 0;
    for (size_t i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    snprintf(out, cap, "[%s] %3u%%  %s", bar, pct, label ? label : "");
}
