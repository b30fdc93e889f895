/* SPDX-License-Identifier: MIT */
/* Unguessable ids and jitter from OpenSSL's CSPRNG. */
#ifndef MX_RAND_H
#define MX_RAND_H

#include <stddef.h>
#include <stdint.h>

/* Fill |out| with |cap|-1 lowercase hex characters and a NUL; aborts if the
 * CSPRNG fails (nothing sane to do without randomness). */
void mx_rand_hex(char *out, size_t cap);
/* A uniform value in [0, |bound|); |bound| > 0. */
uint64_t mx_rand_below(uint64_t bound);

#endif
