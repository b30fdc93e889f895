/* SPDX-License-Identifier: MIT */
/* Exponential backoff with equal jitter. */
#include "backoff.h"

int64_t mx_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms, uint64_t rnd)
{
    int64_t d = base_ms;
    for (unsigned i = 0; i < attempt && d < cap_ms; i++)
        d *= 2;
    if (d > cap_ms)
        d = cap_ms;
    int64_t half = d / 2;
    return half + (int64_t)(rnd % (uint64_t)(half + 1));
}
