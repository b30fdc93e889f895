/* SPDX-License-Identifier: MIT */
/*
 * A parser for the TOML subset mcplex configs use: [a] and [a.b] headers with
 * bare keys, key = value with basic strings, decimal integers, booleans and
 * arrays of strings or of integers, and # comments. It turns bytes into a tree
 * whose entries remember their line and column; it does no I/O and knows
 * nothing about what the keys mean (model.c does).
 *
 * Rejected with a diagnostic rather than half-supported: literal and
 * multi-line strings, quoted and dotted keys, floats, dates, inline tables,
 * arrays of tables, nested arrays and arrays of booleans.
 */
#ifndef MX_TOML_H
#define MX_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

#define MX_TOML_MAX_INPUT (1024 * 1024) /* bytes of input */
#define MX_TOML_MAX_DEPTH 8             /* segments in a [a.b.c] header */
#define MX_TOML_MAX_KEYS  1024          /* entries in one table */
#define MX_TOML_MAX_ITEMS 4096          /* items in one array */

enum mx_toml_type {
    MX_TOML_STRING = 0,
    MX_TOML_INT = 1,
    MX_TOML_BOOL = 2,
    MX_TOML_ARRAY = 3,
    MX_TOML_TABLE = 4,
};

struct mx_toml_table;

struct mx_toml_value {
    enum mx_toml_type type;
    /* First character of the value; for a table, the '[' of the header that first named it. */
    int line;
    int col;
    char *str; /* MX_TOML_STRING: NUL-terminated UTF-8 without NUL inside */
    size_t str_len;
    int64_t i;                   /* MX_TOML_INT */
    bool b;                      /* MX_TOML_BOOL */
    struct mx_toml_value *items; /* MX_TOML_ARRAY: all items of one type */
    size_t item_cnt;
    struct mx_toml_table *table; /* MX_TOML_TABLE */
};

struct mx_toml_entry {
    char *key;
    int line; /* the key, or the segment of the header that named the table */
    int col;
    struct mx_toml_value val;
};

struct mx_toml_table {
    char *name;                    /* dotted path, "" for the root */
    bool defined;                  /* has a header of its own (not only implied by [a.b]) */
    int line;                      /* that header's line; 0 when not defined */
    struct mx_toml_entry *entries; /* in file order */
    size_t cnt;
    size_t cap;
};

/*
 * Parse |len| bytes of |text|; |file| names the input in diagnostics.
 * Returns 0 and |*out| (free with mx_toml_free), MX_ELIMIT when |len| exceeds
 * MX_TOML_MAX_INPUT or another cap is reached, or MX_EINVAL; |diag| then
 * holds the 1-based line and column (in characters) of the offending
 * character. Messages quote keys and table names, never values.
 */
int mx_toml_parse(const char *file, const char *text, size_t len, struct mx_toml_table **out,
                  struct mx_diag *diag);

/*
 * Whether a message may quote back the value written for |key| in the
 * table |table| (its dotted name, "" for the root): false for every key
 * that may hold a secret, and for keys the caller does not know.
 */
typedef bool (*mx_toml_show_cb)(const char *table, const char *key);

/*
 * mx_toml_parse, where a string written without its quotes
 * (address = 127.0.0.1:8443) is quoted back in the message when |may_show|
 * (may be NULL: never) allows it for its key.
 */
int mx_toml_parse_shown(const char *file, const char *text, size_t len, mx_toml_show_cb may_show,
                        struct mx_toml_table **out, struct mx_diag *diag);

/* Frees the tree; accepts NULL. */
void mx_toml_free(struct mx_toml_table *t);

/* The entry for |key| in |t|, or NULL. */
const struct mx_toml_entry *mx_toml_find(const struct mx_toml_table *t, const char *key);

/* Tables not yet freed; tests assert it returns to zero. */
size_t mx_toml_live_cnt(void);

/* "a string", "an integer", ... for messages. */
const char *mx_toml_type_name(enum mx_toml_type type);

#endif
