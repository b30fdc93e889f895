/* SPDX-License-Identifier: MIT */
/*
 * Catalogue files. They are read once at start and written when an
 * upstream's lists were fetched afresh (after a wake or a list_changed):
 * small files, rarely, so the write happens on the loop.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "catalogue.h"
#include "err.h"
#include "fileio.h"
#include "log.h"

#define CATALOGUE_VERSION 1
/* Beyond the lists (capped by max_list_bytes): the initialize result and
 * the file's own keys. */
#define CATALOGUE_INIT_MAX (1024 * 1024)

static const char *const kind_keys[MX_CATALOGUE_KINDS] = {"tools", "prompts", "resources",
                                                          "resourceTemplates"};

/* FNV-1a: a stable, short key for the URL in the file name. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

char *mx_catalogue_path(const char *state_dir, const struct mx_server_cfg *cfg)
{
    const char *url = cfg->url ? cfg->url : "";
    return mx_xasprintf("%s/catalogue/%s-%016llx.json", state_dir, cfg->name,
                        (unsigned long long)fnv1a(url));
}

size_t mx_catalogue_item_bytes(const json_t *item)
{
    /* a NULL buffer: jansson only counts */
    return json_dumpb(item, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
}

size_t mx_catalogue_list_bytes(const json_t *list)
{
    size_t n = 0, i;
    json_t *it;
    json_array_foreach(list, i, it)
    {
        n += mx_catalogue_item_bytes(it);
    }
    return n;
}

int mx_catalogue_load(const char *path, const struct mx_server_cfg *cfg, json_t **init,
                      json_t *lists[MX_CATALOGUE_KINDS])
{
    json_error_t err;
    struct stat st;
    if (stat(path, &st) != 0)
        return MX_ENOTFOUND;
    if (!S_ISREG(st.st_mode))
        return MX_EPROTO;
    /* the same cap as a live fetch: a file the cap could not have made is
     * not read at all */
    if ((uint64_t)st.st_size > (uint64_t)cfg->max_list_bytes + CATALOGUE_INIT_MAX)
        return MX_ELIMIT;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (j == NULL)
        return MX_EPROTO;
    const char *url = json_string_value(json_object_get(j, "url"));
    json_t *in = json_object_get(j, "init");
    if (json_integer_value(json_object_get(j, "version")) != CATALOGUE_VERSION || url == NULL ||
        cfg->url == NULL || strcmp(url, cfg->url) != 0 || !json_is_object(in)) {
        json_decref(j);
        return MX_EPROTO;
    }
    json_t *ls = json_object_get(j, "lists");
    size_t bytes = 0;
    for (int k = 0; k < MX_CATALOGUE_KINDS; k++)
        bytes += mx_catalogue_list_bytes(json_object_get(ls, kind_keys[k]));
    if (bytes > (uint64_t)cfg->max_list_bytes) {
        json_decref(j);
        return MX_ELIMIT;
    }
    for (int k = 0; k < MX_CATALOGUE_KINDS; k++) {
        json_t *l = json_object_get(ls, kind_keys[k]);
        lists[k] = json_is_array(l) ? json_incref(l) : NULL;
    }
    *init = json_incref(in);
    json_decref(j);
    return 0;
}

int mx_catalogue_save(const char *path, const struct mx_server_cfg *cfg, const json_t *init,
                      json_t *const lists[MX_CATALOGUE_KINDS])
{
    json_t *ls = json_object();
    for (int k = 0; k < MX_CATALOGUE_KINDS; k++) {
        if (lists[k])
            json_object_set(ls, kind_keys[k], lists[k]);
    }
    json_t *j = json_pack("{s:i, s:s, s:s, s:O, s:o}", "version", CATALOGUE_VERSION, "server",
                          cfg->name, "url", cfg->url ? cfg->url : "", "init", init, "lists", ls);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return MX_EIO;
    /* No fsync: a catalogue lost in a crash is fetched again; the rename keeps it whole. */
    struct mx_diag d = {0};
    char line[1024];
    int rc = mx_file_save_private(path, text, strlen(text), &d);
    if (rc != 0) {
        mx_log_warn("catalogue", "cannot save: %s", mx_diag_format(&d, line, sizeof(line)));
        rc = MX_EIO;
    }
    free(text);
    return rc;
}

static char *session_path(const char *cat_path)
{
    return mx_xasprintf("%s.session", cat_path);
}

int mx_catalogue_session_load(const char *cat_path, const struct mx_server_cfg *cfg, char **sid,
                              char **version)
{
    *sid = *version = NULL;
    char *path = session_path(cat_path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    free(path);
    struct stat st;
    json_t *j = NULL;
    json_error_t err;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
        (st.st_mode & 077) == 0 && st.st_size < 4096)
        j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &err);
    if (fd >= 0)
        close(fd);
    const char *url = json_string_value(json_object_get(j, "url"));
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *v = json_string_value(json_object_get(j, "version"));
    int rc = MX_ENOTFOUND;
    if (url && id && v && cfg->url && strcmp(url, cfg->url) == 0) {
        *sid = mx_xstrdup(id);
        *version = mx_xstrdup(v);
        rc = 0;
    }
    json_decref(j);
    return rc;
}

int mx_catalogue_session_save(const char *cat_path, const struct mx_server_cfg *cfg,
                              const char *sid, const char *version)
{
    char *path = session_path(cat_path);
    int rc = 0;
    if (sid == NULL) {
        unlink(path);
    } else {
        json_t *j = json_pack("{s:s, s:s, s:s}", "url", cfg->url ? cfg->url : "", "id", sid,
                              "version", version ? version : "");
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        struct mx_diag d = {0};
        char line[1024];
        if (text == NULL || mx_file_save_private(path, text, strlen(text), &d) != 0) {
            mx_log_warn("catalogue", "cannot keep the upstream session: %s",
                        text ? mx_diag_format(&d, line, sizeof(line)) : "out of memory");
            rc = MX_EIO;
        }
        free(text);
    }
    free(path);
    return rc;
}
