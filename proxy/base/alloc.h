/* SPDX-License-Identifier: MIT */
/*
 * Allocation that aborts on failure. Sizes a peer controls must be checked
 * against a cap before they reach these functions.
 */
#ifndef MX_ALLOC_H
#define MX_ALLOC_H

#include <stddef.h>

void *mx_xmalloc(size_t len);
void *mx_xcalloc(size_t cnt, size_t len);
void *mx_xrealloc(void *p, size_t len);
char *mx_xstrdup(const char *s);
/* Copy |len| bytes of |p| and add a NUL. */
char *mx_xstrndup(const char *p, size_t len);
/* printf into a new string; caller frees. */
char *mx_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Recover the outer struct from a pointer to one of its members. */
#define mx_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
