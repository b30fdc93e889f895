/* SPDX-License-Identifier: MIT */
/* Random ids for sessions and jitter for backoff. */
#include <openssl/rand.h>

#include "log.h"
#include "rand.h"

static void fill(unsigned char *p, size_t len)
{
    if (RAND_bytes(p, (int)len) != 1)
        mx_fatal("rand", "RAND_bytes failed");
}

void mx_rand_hex(char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    size_t n = cap ? cap - 1 : 0;
    size_t need = (n + 1) / 2;
    MX_ASSERT(need <= sizeof(raw));
    fill(raw, need);
    for (size_t i = 0; i < n; i++)
        out[i] = hex[(raw[i / 2] >> ((i & 1) ? 0 : 4)) & 0xf];
    if (cap)
        out[n] = '\0';
}

uint64_t mx_rand_below(uint64_t bound)
{
    uint64_t v, lim = UINT64_MAX - UINT64_MAX % bound;
    do {
        fill((unsigned char *)&v, sizeof(v));
    } while (v >= lim);
    return v % bound;
}
