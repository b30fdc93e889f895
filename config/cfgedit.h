/* SPDX-License-Identifier: MIT */
/*
 * Edits of a TOML file that keep every byte they do not own: the span of one
 * table found by its header line, cut out, or a new table appended, and the
 * file replaced through a temp file. It works on lines, not on a parsed
 * tree, so comments, blank lines, key order and spacing outside the edited
 * table stay exactly as written; it knows the TOML shapes mcplex's own
 * configs use and other programs' files (Codex's config.toml) share: header
 * lines, comments, multi-line strings. mx_config_commit checks an edited
 * mcplex config as `serve` would load it before writing it.
 */
#ifndef MX_CFGEDIT_H
#define MX_CFGEDIT_H

#include <stddef.h>

#include "diag.h"

/* Bytes [begin, end) of a text. */
struct mx_cfgedit_span {
    size_t begin;
    size_t end;
};

/*
 * The span of table |name| ("servers.files") in |len| bytes of |text|: from
 * the comment lines directly above its `[name]` header (no blank line
 * between) through its last key, or last comment line that follows a key
 * with no blank line between, together with its sub-tables (`[name.x]`),
 * then the blank lines after it. Comment lines directly above the next
 * header belong to that table; other comments after a blank line stay. A
 * table that ends the file takes the blank lines before it instead, so the
 * file does not end in a blank line. Returns 0, or MX_ENOTFOUND when no
 * header line names |name|.
 */
int mx_cfgedit_find(const char *text, size_t len, const char *name, struct mx_cfgedit_span *span);

/* |text| without the bytes of |span|: a new string of *|out_len| bytes and a
 * NUL (caller frees). */
char *mx_cfgedit_cut(const char *text, size_t len, const struct mx_cfgedit_span *span,
                     size_t *out_len);

/*
 * |text| with |block| (whole lines, ending in a newline) after it: a newline
 * ends the last line when it had none, and one blank line separates the
 * block from what came before unless the text is empty or already ends in
 * one. A new string of *|out_len| bytes and a NUL (caller frees).
 */
char *mx_cfgedit_append(const char *text, size_t len, const char *block, size_t *out_len);

/* |s| as a TOML basic string, quotes included: `"`, `\` and control
 * characters escaped (caller frees). */
char *mx_cfgedit_quote(const char *s);

/*
 * Read the file at |path| (at most |cap| bytes) into *|text| with a NUL after
 * it (caller frees), its length in *|len|. Returns 0, MX_ENOTFOUND, MX_ELIMIT
 * or MX_EIO with |diag| naming the file.
 */
int mx_cfgedit_read(const char *path, size_t cap, char **text, size_t *len, struct mx_diag *diag);

/*
 * Replace the file at |path| (a symlink: its target) with |len| bytes of
 * |text| through a temp file in its directory and a rename, synced, so a
 * reader sees the old file or the new one. The file keeps its mode; a new
 * one is made 0600. Returns 0, MX_EPERM or MX_EIO with |diag| set.
 */
int mx_cfgedit_write(const char *path, const char *text, size_t len, struct mx_diag *diag);

/*
 * Write |len| bytes of |text| as the config at |path| (mx_cfgedit_write)
 * only if it loads (mx_config_parse) and the secret references of the
 * |cnt| servers named in |names| (the ones the edit added) resolve, as
 * `serve` resolves them at start. Returns 0, MX_EINVAL (the text does not
 * load, a reference does not resolve), or the errors of mx_cfgedit_write,
 * with |diag| saying why (never a secret value); the file is then as it was.
 */
int mx_config_commit(const char *path, const char *text, size_t len, const char *const *names,
                     size_t cnt, struct mx_diag *diag);

#endif
