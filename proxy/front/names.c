/* SPDX-License-Identifier: MIT */
/*
 * The pins behind names that never move (names.h), as one JSON object:
 * {"version":1, "prefix":"conditional", "name_budget":48,
 *  "servers":{"<name>":{"alias":"<alias>", "tools":{orig:exposed},
 *                       "prompts":{orig:exposed}}}}
 * written whole through mx_file_write() when a new name was shown.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "diag.h"
#include "fileio.h"
#include "log.h"
#include "names.h"

#define SUBSYS        "names"
#define NAMES_VERSION 1
/* Far above what pins of lists within max_list_bytes take; a bigger file
 * was not written by mcplex and is not read. */
#define NAMES_FILE_MAX ((uint64_t)64 << 20)
/* Pins of names a server no longer lists, kept beyond twice its items. */
#define PIN_MARGIN 256

struct mx_names {
    char *path;      /* <state_dir>/names.json; NULL: memory only */
    json_t *servers; /* name -> {"alias", "tools", "prompts"} */
    bool known;      /* prefix and budget say what the pins were made under */
    enum mx_prefix_mode prefix;
    size_t budget;
    bool warned; /* a failed save was logged */
};

static const char *prefix_text(enum mx_prefix_mode p)
{
    return p == MX_PREFIX_ALWAYS ? "always" : "conditional";
}

static const char *kind_key(enum mx_agg_kind kind)
{
    return kind == MX_AGG_PROMPTS ? "prompts" : "tools";
}

static bool named(enum mx_agg_kind kind)
{
    return kind == MX_AGG_TOOLS || kind == MX_AGG_PROMPTS;
}

static void load(struct mx_names *n)
{
    struct stat st;
    json_error_t err;
    if (stat(n->path, &st) != 0)
        return;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > NAMES_FILE_MAX) {
        mx_log_warn(SUBSYS, "ignoring %s: not a regular file of at most %llu bytes", n->path,
                    (unsigned long long)NAMES_FILE_MAX);
        return;
    }
    json_t *j = json_load_file(n->path, JSON_REJECT_DUPLICATES, &err);
    json_t *servers = json_object_get(j, "servers");
    const char *prefix = json_string_value(json_object_get(j, "prefix"));
    json_int_t budget = json_integer_value(json_object_get(j, "name_budget"));
    if (json_integer_value(json_object_get(j, "version")) != NAMES_VERSION ||
        !json_is_object(servers) || prefix == NULL || budget <= 0) {
        mx_log_warn(SUBSYS, "ignoring the unreadable %s; names are decided afresh", n->path);
        json_decref(j);
        return;
    }
    n->known = true;
    n->prefix = strcmp(prefix, "always") == 0 ? MX_PREFIX_ALWAYS : MX_PREFIX_CONDITIONAL;
    n->budget = (size_t)budget;
    json_decref(n->servers);
    n->servers = json_incref(servers);
    json_decref(j);
}

struct mx_names *mx_names_open(const char *state_dir)
{
    struct mx_names *n = mx_xcalloc(1, sizeof(*n));
    n->servers = json_object();
    if (state_dir) {
        n->path = mx_xasprintf("%s/names.json", state_dir);
        load(n);
    }
    return n;
}

void mx_names_free(struct mx_names *n)
{
    if (n == NULL)
        return;
    json_decref(n->servers);
    free(n->path);
    free(n);
}

static void save(struct mx_names *n)
{
    if (n->path == NULL)
        return;
    json_t *j = json_pack("{s:i, s:s, s:I, s:O}", "version", NAMES_VERSION, "prefix",
                          prefix_text(n->prefix), "name_budget", (json_int_t)n->budget, "servers",
                          n->servers);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL)
        return;
    struct mx_diag d = {0};
    int rc = mx_file_save_private(n->path, text, strlen(text), &d);
    if (rc != 0 && !n->warned) {
        char line[1024];
        mx_log_warn(SUBSYS, "cannot keep the names clients saw: %s",
                    mx_diag_format(&d, line, sizeof(line)));
        n->warned = true;
    } else if (rc == 0) {
        n->warned = false;
    }
    free(text);
}

void mx_names_settings(struct mx_names *n, enum mx_prefix_mode prefix, size_t name_budget)
{
    if (n->known && n->prefix == prefix && n->budget == name_budget)
        return;
    if (n->known && json_object_size(n->servers) > 0) {
        mx_log_info(SUBSYS, "[proxy] prefix or name_budget changed; names are decided afresh");
        json_object_clear(n->servers);
    }
    n->known = true;
    n->prefix = prefix;
    n->budget = name_budget;
}

/* The entry of |server| if it was made under |alias|. */
static json_t *server_of(struct mx_names *n, const char *server, const char *alias)
{
    json_t *s = json_object_get(n->servers, server);
    const char *a = json_string_value(json_object_get(s, "alias"));
    return a && alias && strcmp(a, alias) == 0 ? s : NULL;
}

json_t *mx_names_pins(struct mx_names *n, const char *server, const char *alias,
                      enum mx_agg_kind kind)
{
    if (n == NULL || server == NULL || !named(kind))
        return NULL;
    json_t *pins = json_object_get(server_of(n, server, alias), kind_key(kind));
    return json_is_object(pins) && json_object_size(pins) ? pins : NULL;
}

/* The pins of |server| for |kind|, made (and the server's entry renewed
 * under |alias|) when missing. */
static json_t *pins_for(struct mx_names *n, const char *server, const char *alias,
                        enum mx_agg_kind kind)
{
    json_t *s = server_of(n, server, alias);
    if (s == NULL) {
        s = json_pack("{s:s, s:{}, s:{}}", "alias", alias, "tools", "prompts");
        json_object_set_new(n->servers, server, s);
    }
    json_t *p = json_object_get(s, kind_key(kind));
    if (!json_is_object(p)) {
        p = json_object();
        json_object_set_new(s, kind_key(kind), p);
    }
    return p;
}

/* Past its bound, a server's pins shrink to the names its items hold now. */
static void bound(json_t *pins, const struct mx_agg_view *v, size_t src, size_t items)
{
    if (json_object_size(pins) <= 2 * items + PIN_MARGIN)
        return;
    json_t *keep = json_object();
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        json_t *p = e->src == src ? json_object_get(pins, e->orig) : NULL;
        if (p)
            json_object_set(keep, e->orig, p);
    }
    json_object_clear(pins);
    json_object_update(pins, keep);
    json_decref(keep);
}

bool mx_names_note(struct mx_names *n, enum mx_agg_kind kind, const struct mx_agg_view *v,
                   const char *const *servers, const char *const *aliases, size_t cnt)
{
    if (n == NULL || !named(kind))
        return false;
    bool changed = false;
    size_t *items = mx_xcalloc(cnt ? cnt : 1, sizeof(*items));
    for (size_t i = 0; i < mx_agg_entry_cnt(v); i++) {
        const struct mx_agg_entry *e = mx_agg_entry_at(v, i);
        if (e->src >= cnt || servers[e->src] == NULL)
            continue;
        items[e->src]++;
        if (!e->visible)
            continue;
        json_t *pins = pins_for(n, servers[e->src], aliases[e->src], kind);
        const char *was = json_string_value(json_object_get(pins, e->orig));
        if (was && strcmp(was, e->key) == 0)
            continue;
        json_object_set_new(pins, e->orig, json_string(e->key));
        changed = true;
    }
    for (size_t s = 0; changed && s < cnt; s++) {
        json_t *pins = servers[s] ? mx_names_pins(n, servers[s], aliases[s], kind) : NULL;
        if (pins)
            bound(pins, v, s, items[s]);
    }
    free(items);
    if (changed)
        save(n);
    return changed;
}
