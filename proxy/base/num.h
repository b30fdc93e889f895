/* SPDX-License-Identifier: MIT */
/* Bounded number parsing (strtonum-like) and durations. */
#ifndef MX_NUM_H
#define MX_NUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse the decimal integer in |p|,|len| (optional leading '-'), which must be
 * within [|min|, |max|]. Returns 0, MX_EINVAL (not a number, trailing bytes)
 * or MX_ELIMIT (out of range).
 */
int mx_num_parse(const char *p, size_t len, int64_t min, int64_t max, int64_t *out);

/*
 * Parse a duration such as "45s", "500ms", "2m", "1h" or "0" into
 * milliseconds, at most |max_ms|. Returns 0, MX_EINVAL or MX_ELIMIT.
 */
int mx_duration_parse(const char *p, size_t len, int64_t max_ms, int64_t *out_ms);

#endif
