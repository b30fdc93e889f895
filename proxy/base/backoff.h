/* SPDX-License-Identifier: MIT */
/* Retry delays: exponential with jitter. Pure, so the schedule is tested. */
#ifndef MX_BACKOFF_H
#define MX_BACKOFF_H

#include <stdint.h>

/*
 * The delay before retry number |attempt| (0-based): the exponential step
 * d = min(|cap_ms|, |base_ms| * 2^attempt), then "equal jitter" — half of d
 * fixed, half drawn from |rnd| — so concurrent retriers spread out but
 * never retry sooner than d/2.
 */
int64_t mx_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd);

#endif
