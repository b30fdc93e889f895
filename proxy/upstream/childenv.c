/* SPDX-License-Identifier: MIT */
/* A stdio upstream's environment from its allowlist; see childenv.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "childenv.h"
#include "err.h"
#include "secret_int.h"

/* mcplex's own "NAME=value" for |name| of |len| bytes, or NULL. */
static const char *parent_entry(char *const *parent, const char *name, size_t len)
{
    for (size_t i = 0; parent && parent[i]; i++) {
        if (strncmp(parent[i], name, len) == 0 && parent[i][len] == '=')
            return parent[i];
    }
    return NULL;
}

static void say(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    if (why == NULL || cap == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

int mx_childenv_build(const struct mx_strv *allow, struct mx_secret *const *secrets,
                      char *const *parent, struct mx_childenv *out, char *why, size_t why_cap)
{
    size_t cnt = allow ? allow->cnt : 0;
    out->envp = mx_xcalloc(cnt + 1, sizeof(*out->envp));
    out->cnt = 0;
    for (size_t i = 0; i < cnt; i++) {
        const char *item = allow->v[i];
        const char *eq = strchr(item, '=');
        size_t n = eq ? (size_t)(eq - item) : strlen(item);
        if (n > 200 || !mx_env_name_is_valid(item, n)) {
            /* the entry itself is not repeated: it may be a mistyped value */
            say(why, why_cap, "env entry %zu is not NAME or NAME=<secret ref>", i + 1);
            goto fail;
        }
        for (size_t j = 0; j < i; j++) {
            if (strncmp(allow->v[j], item, n) == 0 &&
                (allow->v[j][n] == '\0' || allow->v[j][n] == '=')) {
                say(why, why_cap, "env %.*s is listed twice", (int)n, item);
                goto fail;
            }
        }
        char *entry;
        if (eq) {
            char name[256];
            snprintf(name, sizeof(name), "%.*s", (int)n, item);
            entry = mx_secret_env_new(secrets ? secrets[i] : NULL, name);
            if (entry == NULL) {
                say(why, why_cap, "env %.*s: its secret is not resolved", (int)n, item);
                goto fail;
            }
        } else {
            const char *have = parent_entry(parent, item, n);
            if (have == NULL)
                continue; /* not set in mcplex's environment: not set in the child's */
            entry = mx_xstrdup(have);
        }
        out->envp[out->cnt++] = entry;
    }
    return 0;
fail:
    mx_childenv_clear(out);
    return MX_EINVAL;
}

void mx_childenv_clear(struct mx_childenv *e)
{
    if (e->envp) {
        for (size_t i = 0; i < e->cnt; i++)
            mx_secret_wipe_free(e->envp[i]);
        free(e->envp);
    }
    e->envp = NULL;
    e->cnt = 0;
}

const char *mx_childenv_get(const struct mx_childenv *e, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < e->cnt; i++) {
        if (strncmp(e->envp[i], name, n) == 0 && e->envp[i][n] == '=')
            return e->envp[i] + n + 1;
    }
    return NULL;
}
