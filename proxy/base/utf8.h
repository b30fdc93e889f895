/* SPDX-License-Identifier: MIT */
/* Small pieces of text decoding shared by parsers: hex digits and UTF-8. */
#ifndef MX_UTF8_H
#define MX_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The value of the hex digit |c| (0-9, a-f, A-F), or -1. */
int mx_hex_digit(int c);

/* The UTF-8 encoding of |cp| (at most U+10FFFF) into |out|; returns its
 * length, 1 to 4. */
size_t mx_utf8_put(uint32_t cp, unsigned char out[4]);

#endif
