/* SPDX-License-Identifier: MIT */
/*
 * Task ids toward clients (MCP 2025-11-25 tasks, 2026-07-28 tasks extension):
 * the upstream's alias and its own task id, sealed with the cursors' HMAC
 * (cursor.h) under a key only mcplex knows, as base64url. A client cannot
 * forge one, nor turn one upstream's id into another's: changing the alias
 * breaks the seal. Pure: the key comes from the caller.
 */
#ifndef MX_TASKID_H
#define MX_TASKID_H

#include <stddef.h>
#include <stdint.h>

#include "cursor.h"
#include "str.h"

#define MX_TASKID_VERSION   0x54 /* first byte; cursors start with their own version */
#define MX_TASKID_ALIAS_MAX 128  /* bytes of an upstream alias */
#define MX_TASKID_UP_MAX    512  /* bytes of an upstream's task id */
/* Longest text: base64url of 1 + 1 + 128 + 2 + 512 + 8 bytes (870), and a NUL. */
#define MX_TASKID_TEXT_MAX 871

struct mx_taskid {
    char alias[MX_TASKID_ALIAS_MAX + 1]; /* NUL-terminated */
    char up[MX_TASKID_UP_MAX + 1];       /* the upstream's task id, NUL-terminated */
    size_t up_len;
};

/*
 * Write the client's id for task |up| of upstream |alias| and a NUL to |out|
 * (|cap| bytes; MX_TASKID_TEXT_MAX is always enough). The same inputs and key
 * give the same text. Returns its length, MX_EINVAL for an empty or too long
 * alias or task id, or one holding a NUL, MX_ELIMIT when |cap| is too small.
 */
int mx_taskid_encode(struct mx_str alias, struct mx_str up, const uint8_t key[MX_CURSOR_KEY_LEN],
                     char *out, size_t cap);

/*
 * Parse a client's task id |text| into |out|. Returns 0, or MX_EINVAL for
 * anything mx_taskid_encode did not make with |key|.
 */
int mx_taskid_decode(struct mx_str text, const uint8_t key[MX_CURSOR_KEY_LEN],
                     struct mx_taskid *out);

#endif
