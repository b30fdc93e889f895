/* SPDX-License-Identifier: MIT */
/* What a reload needs of two configs: are two servers the same, and
 * wiping the secrets of a server that left. */
#include <string.h>

#include "model.h"

static bool str_same(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool strv_same(const struct mx_strv *a, const struct mx_strv *b)
{
    if (a->cnt != b->cnt)
        return false;
    for (size_t i = 0; i < a->cnt; i++) {
        if (!str_same(a->v[i], b->v[i]))
            return false;
    }
    return true;
}

static bool env_secrets_same(const struct mx_server_cfg *a, const struct mx_server_cfg *b)
{
    /* the env lists are equal here, so both have env.cnt slots or none */
    for (size_t i = 0; i < a->env.cnt; i++) {
        const struct mx_secret *x = a->env_secret ? a->env_secret[i] : NULL;
        const struct mx_secret *y = b->env_secret ? b->env_secret[i] : NULL;
        if (!mx_secret_same(x, y))
            return false;
    }
    return true;
}

bool mx_server_cfg_same(const struct mx_server_cfg *a, const struct mx_server_cfg *b)
{
    return mx_server_cfg_same_keys(a, b) && mx_secret_same(a->secret, b->secret);
}

bool mx_server_cfg_same_keys(const struct mx_server_cfg *a, const struct mx_server_cfg *b)
{
    if (a->retry_on_cnt != b->retry_on_cnt ||
        (a->retry_on_cnt && memcmp(a->retry_on, b->retry_on, a->retry_on_cnt * sizeof(int)) != 0))
        return false;
    /* every key a user can set, and the env secrets they resolve to */
    return str_same(a->name, b->name) && a->transport == b->transport && str_same(a->url, b->url) &&
           strv_same(&a->command, &b->command) && str_same(a->cwd, b->cwd) &&
           str_same(a->ca, b->ca) && strv_same(&a->env, &b->env) && env_secrets_same(a, b) &&
           a->start == b->start && a->auth == b->auth && str_same(a->auth_name, b->auth_name) &&
           str_same(a->secret_ref, b->secret_ref) && str_same(a->refresh, b->refresh) &&
           strv_same(&a->tools, &b->tools) && strv_same(&a->tools_deny, &b->tools_deny) &&
           strv_same(&a->prompts, &b->prompts) && strv_same(&a->prompts_deny, &b->prompts_deny) &&
           str_same(a->wake, b->wake) && str_same(a->alias, b->alias) && a->session == b->session &&
           a->max_concurrency == b->max_concurrency && a->max_list_bytes == b->max_list_bytes &&
           a->keepalive_ms == b->keepalive_ms && a->request_timeout_ms == b->request_timeout_ms &&
           a->wake_timeout_ms == b->wake_timeout_ms && a->idle_close_ms == b->idle_close_ms;
}

void mx_server_cfg_wipe_secrets(struct mx_server_cfg *s)
{
    mx_secret_free(s->secret);
    s->secret = NULL;
    for (size_t i = 0; s->env_secret && i < s->env.cnt; i++) {
        mx_secret_free(s->env_secret[i]);
        s->env_secret[i] = NULL;
    }
}
