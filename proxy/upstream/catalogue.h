/* SPDX-License-Identifier: MIT */
/*
 * The catalogue on disk: each upstream's last initialize result and lists,
 * kept in <state_dir>/catalogue/ per server (keyed by its name and URL), so
 * that a client starting up is answered without waking a paused sandbox.
 * No secrets are stored: only what the upstream told every client.
 */
#ifndef MX_CATALOGUE_H
#define MX_CATALOGUE_H

#include <stddef.h>

#include <jansson.h>

#include "model.h"

#define MX_CATALOGUE_KINDS 4 /* tools, prompts, resources, resource templates */

/* The file for |cfg| under |state_dir|; caller frees. */
char *mx_catalogue_path(const char *state_dir, const struct mx_server_cfg *cfg);

/*
 * What one list item costs against a server's max_list_bytes: the length
 * of its compact JSON text. A list costs the sum of its items.
 */
size_t mx_catalogue_item_bytes(const json_t *item);
size_t mx_catalogue_list_bytes(const json_t *list);

/*
 * Load |path| if it exists and was saved for |cfg|'s URL. On 0, |*init| and
 * |lists| (NULL where the upstream offers no such list) hold new references.
 * Returns 0, MX_ENOTFOUND, MX_EPROTO for a file that does not parse (it is
 * then ignored; the next save replaces it), or MX_ELIMIT when its lists
 * together are over |cfg|'s max_list_bytes (also ignored; the file's size is
 * checked first, so an oversized one is never read).
 */
int mx_catalogue_load(const char *path, const struct mx_server_cfg *cfg, json_t **init,
                      json_t *lists[MX_CATALOGUE_KINDS]);

/*
 * Save atomically through mx_file_write() (a temp file of a random name,
 * O_EXCL|O_NOFOLLOW, then rename), into a directory that mx_dir_private()
 * makes 0700 or refuses (another user's, or group/world-writable: nothing is
 * written, and a warning says why). Returns 0 or MX_EIO.
 */
int mx_catalogue_save(const char *path, const struct mx_server_cfg *cfg, const json_t *init,
                      json_t *const lists[MX_CATALOGUE_KINDS]);

/*
 * The upstream session an earlier run kept open for |cfg| (mx_upsess_keep):
 * its id and revision, beside the catalogue in |cat_path|'s directory as
 * <catalogue>.session (owner-only; a session id opens nothing without the
 * credential, which is never stored). Load gives new strings in |*sid| and
 * |*version| (caller frees) and returns 0, or MX_ENOTFOUND (none, another
 * URL's, unreadable, or not owner-only). Save with |sid| NULL removes it.
 */
int mx_catalogue_session_load(const char *cat_path, const struct mx_server_cfg *cfg, char **sid,
                              char **version);
int mx_catalogue_session_save(const char *cat_path, const struct mx_server_cfg *cfg,
                              const char *sid, const char *version);

#endif
