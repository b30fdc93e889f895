/* SPDX-License-Identifier: MIT */
/*
 * Latency samples of one benchmark row and their order statistics, for
 * `mcplex bench`. Every sample is kept (a row is bounded by -n), so the
 * percentiles are exact nearest-rank values, not bucket estimates. Pure: no
 * clock, no I/O.
 */
#ifndef MX_BENCHSTAT_H
#define MX_BENCHSTAT_H

#include <stddef.h>
#include <stdint.h>

struct mx_benchstat {
    int64_t *us; /* samples in microseconds, in arrival order until sorted */
    size_t cnt;
    size_t cap;
    size_t errors; /* requests that failed; they have no sample */
    int sorted;
};

/* Empty set; |cap_hint| samples are reserved (it grows past that). */
void mx_benchstat_init(struct mx_benchstat *s, size_t cap_hint);
/* Frees the samples; accepts a zeroed struct. */
void mx_benchstat_clear(struct mx_benchstat *s);
/* Record one successful request of |us| microseconds (negative counts as 0). */
void mx_benchstat_add(struct mx_benchstat *s, int64_t us);
/* Record one failed request. */
void mx_benchstat_error(struct mx_benchstat *s);

/*
 * The nearest-rank |pct| percentile (0 < pct <= 100): the smallest sample
 * such that at least pct % of the samples are <= it. pct 100 is the maximum.
 * Returns 0 and |*out|, or MX_ENOTFOUND when there are no samples and
 * MX_EINVAL for pct outside (0, 100].
 */
int mx_benchstat_pct(struct mx_benchstat *s, double pct, int64_t *out);
/* Arithmetic mean in microseconds; 0 without samples. */
double mx_benchstat_mean(const struct mx_benchstat *s);

/*
 * A progress bar line for a terminal: "[#####.....]  42%  |label|" into
 * |out| (NUL-terminated, cut to |cap|), |width| cells of bar. |done| beyond
 * |total| counts as done; |total| 0 shows an empty bar.
 */
void mx_benchstat_bar(char *out, size_t cap, size_t width, uint64_t done, uint64_t total,
                      const char *label);

#endif
