/* SPDX-License-Identifier: MIT */
/*
 * A secret value, an opaque struct mx_secret (references resolve into one
 * in secret_ref.h). No function returns the value as
 * a string a logger could see: a secret can only be written into an outgoing
 * header or a child's environment entry, compared in constant time, redacted
 * out of a buffer, or wiped.
 */
#ifndef MX_SECRET_H
#define MX_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"

#define MX_SECRET_MAX_LEN (64 * 1024) /* bytes of one secret value */

struct mx_secret;

enum mx_auth_kind {
    MX_AUTH_NONE = 0,
    MX_AUTH_BEARER = 1, /* Authorization: Bearer <secret> */
    MX_AUTH_COOKIE = 2, /* Cookie: <name>=<secret> */
    MX_AUTH_HEADER = 3, /* <name>: <secret> */
};

/* Wrap |len| bytes of |p| (copied) as a secret; used by tests and the vault. */
struct mx_secret *mx_secret_new(const char *p, size_t len);

/*
 * For a long-running process that holds secrets (serve): make it
 * non-dumpable (no core file, no ptrace by the same user) and keep secret
 * values made from now on in OpenSSL's locked secure heap. Returns 0, or
 * MX_EIO with |*why| (a static sentence) when either could not be done; the
 * process runs on either way.
 */
int mx_secret_protect_process(const char **why);

/* Wipes and frees; accepts NULL. */
void mx_secret_free(struct mx_secret *s);

/* Constant-time comparison of the secret with |p|,|len|. */
bool mx_secret_equal(const struct mx_secret *s, const char *p, size_t len);
/* Whether |a| and |b| hold the same value (both NULL counts as the same). */
bool mx_secret_same(const struct mx_secret *a, const struct mx_secret *b);

/*
 * A new NUL-terminated header line for |kind| ("Authorization: Bearer …",
 * "Cookie: NAME=…", "NAME: …"), or NULL for MX_AUTH_NONE. The caller must
 * release it with mx_secret_wipe_free(), which wipes it first.
 */
char *mx_secret_header_new(const struct mx_secret *s, enum mx_auth_kind kind, const char *name);

/*
 * A new NUL-terminated environment entry "|name|=<secret>" for a child
 * process, or NULL when |s| or |name| is NULL or |name| is empty or holds
 * '='. The caller must release it with mx_secret_wipe_free().
 */
char *mx_secret_env_new(const struct mx_secret *s, const char *name);

/* Wipe a NUL-terminated string and free it; accepts NULL. */
void mx_secret_wipe_free(char *p);

/*
 * Overwrite every occurrence of the secret's value in |p|,|len| with '*':
 * the raw bytes, and any JSON-escaped form of them (RFC 8259 §7: \" \\
 * \/ \b \f \n \r \t \uXXXX, mixed with raw bytes), as it appears inside a
 * JSON string a peer sent or a JSON log line. Returns the number of
 * occurrences replaced.
 */
size_t mx_secret_redact(const struct mx_secret *s, char *p, size_t len);

#endif
