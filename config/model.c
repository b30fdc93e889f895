/* SPDX-License-Identifier: MIT */
/*
 * The config model: walks the TOML tree into struct mx_config, applying
 * defaults and rejecting unknown tables, unknown keys, wrong types and bad
 * values at their line and column. Each section is a table of field specs;
 * rules that tie several keys together run after a section is walked.
 * Path-valued keys are made absolute against the file's own directory.
 * Secrets are resolved separately (mx_config_resolve_secrets), so parsing
 * reads no file besides asking where the config's directory is.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "err.h"
#include "log.h"
#include "model.h"
#include "model_int.h"
#include "num.h"
#include "path.h"
#include "secret_int.h"
#include "secret_ref.h"
#include "suggest.h"
#include "toml.h"
#include "vault.h"

#define MAX_DURATION_MS (24LL * 3600 * 1000)
#define NAME_MAX_LEN    32

struct pos {
    int line;
    int col;
};

struct server_pos {
    struct pos secret;
    struct pos *env; /* per env entry */
};

/* What the public struct does not carry: where references sit in the file. */
struct config_priv {
    struct mx_config pub;
    struct pos client_token;
    struct server_pos *srv; /* parallel to pub.servers */
    bool empty;             /* the file held no key and no table */
};

static size_t live_cnt;

size_t mx_config_live_cnt(void)
{
    return live_cnt;
}

struct ctx {
    const char *file;
    const char *dir; /* relative paths in the file are its */
    struct mx_diag *diag;
    bool listen_only; /* [listen] and [proxy] alone (mx_config_load_listen) */
};

static int err_at(struct ctx *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int err_at(struct ctx *c, int line, int col, const char *fmt, ...)
{
    char msg[sizeof(c->diag->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mx_diag_set(c->diag, c->file, line, col, "%s", msg);
    return MX_EINVAL;
}

/* A config string made safe to echo: bounded, control characters as '?'. */
static const char *show(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    for (; *s && n + 4 < cap; s++)
        buf[n++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    if (*s) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

/*
 * Keys whose value may hold a secret: a literal token where a reference
 * belongs, user:password@ in a URL, NAME=<literal> in env, a key among a
 * command's arguments. No message quotes their values.
 */
static bool is_secret_bearing(const char *key)
{
    static const char *const keys[] = {"client_token", "secret",  "url",     "env",
                                       "wake",         "command", "refresh", NULL};
    for (size_t i = 0; keys[i]; i++) {
        if (strcmp(key, keys[i]) == 0)
            return true;
    }
    return false;
}

/*
 * The one place a message quotes a config value: "'key': \"value\": why",
 * or "'key': why" when |key| is secret-bearing. /health shows reload
 * failures to anyone who asks, and logs and terminals keep what they see.
 */
static int err_value(struct ctx *c, int line, int col, const char *key, const char *value,
                     const char *why)
{
    char buf[96];
    if (is_secret_bearing(key))
        return err_at(c, line, col, "'%s': %s (the value is not shown)", key, why);
    return err_at(c, line, col, "'%s': \"%s\": %s", key, show(value, buf, sizeof(buf)), why);
}

static bool before(int l1, int c1, int l2, int c2)
{
    return l1 < l2 || (l1 == l2 && c1 < c2);
}

/* ---- string checks: NULL or why not ---- */

static bool is_name_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
}

static const char *check_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > NAME_MAX_LEN)
        return "must be 1 to 32 characters from A-Za-z0-9_-";
    for (size_t i = 0; i < n; i++) {
        if (!is_name_char(s[i]))
            return "must be 1 to 32 characters from A-Za-z0-9_-";
    }
    return NULL;
}

static bool has_ctl_or_space(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s <= 0x20 || *s == 0x7f)
            return true;
    }
    return false;
}

static bool parse_port(const char *p, size_t len, int64_t min, int64_t *port)
{
    return len > 0 && p[0] >= '0' && p[0] <= '9' && mx_num_parse(p, len, min, 65535, port) == 0;
}

static bool is_host_char(char ch)
{
    return is_name_char(ch) || ch == '.';
}

/*
 * host[:port] with host a name or [IPv6]; |port_min| 1 for URLs. Sets |host|
 * to the host without brackets.
 */
static const char *check_authority(const char *p, size_t len, int64_t port_min, struct mx_str *host)
{
    size_t i = 0;
    if (len && p[0] == '[') {
        const char *end = memchr(p, ']', len);
        char v6[64];
        size_t hl = end ? (size_t)(end - p - 1) : 0;
        struct in6_addr a;
        if (end == NULL || hl == 0 || hl >= sizeof(v6))
            return "has a bad [IPv6] host";
        memcpy(v6, p + 1, hl);
        v6[hl] = '\0';
        if (inet_pton(AF_INET6, v6, &a) != 1)
            return "has a bad [IPv6] host";
        *host = mx_str_make(p + 1, hl);
        i = hl + 2;
    } else {
        while (i < len && p[i] != ':') {
            if (!is_host_char(p[i]))
                return "has a bad character in the host name";
            i++;
        }
        if (i == 0)
            return "has no host";
        *host = mx_str_make(p, i);
    }
    if (i == len)
        return NULL;
    int64_t port;
    if (p[i] != ':' || !parse_port(p + i + 1, len - i - 1, port_min, &port))
        return "has a bad port";
    return NULL;
}

const char *mx_url_check(const char *url, struct mx_str *host)
{
    struct mx_str h;
    size_t skip;
    if (strncasecmp(url, "http://", 7) == 0)
        skip = 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        skip = 8;
    else
        return "must start with http:// or https://";
    if (has_ctl_or_space(url))
        return "contains a space or control character";
    const char *a = url + skip;
    size_t alen = strcspn(a, "/?#");
    if (memchr(a, '@', alen))
        return "must not carry user:password@; use 'auth' and 'secret'";
    if (strchr(url, '#'))
        return "must not have a #fragment";
    const char *why = check_authority(a, alen, 1, &h);
    if (why)
        return why;
    if (host)
        *host = h;
    return NULL;
}

static const char *check_url(const char *s)
{
    return mx_url_check(s, NULL);
}

/* RFC 6454 §6.1 serialisation: scheme://host[:port], nothing after. */
static const char *check_origin(const char *s)
{
    struct mx_str h;
    const char *sep = strstr(s, "://");
    if (sep == NULL || sep == s || !(s[0] >= 'a' && s[0] <= 'z'))
        return "must be scheme://host[:port], e.g. \"https://app.example.com\"";
    for (const char *q = s; q < sep; q++) {
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '+' || *q == '.' ||
              *q == '-'))
            return "must be scheme://host[:port] with a lowercase scheme";
    }
    const char *why = check_authority(sep + 3, strlen(sep + 3), 1, &h);
    if (why)
        return why;
    return NULL;
}

/* RFC 9110 §5.6.2 token. */
static bool is_token(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", ch))
            return false;
    }
    return true;
}

static const char *check_env_item(const char *s)
{
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if (!mx_env_name_is_valid(s, n))
        return "must be NAME or NAME=<secret ref>, NAME from [A-Za-z_][A-Za-z0-9_]*";
    return eq ? mx_secret_ref_check(eq + 1) : NULL;
}

static const char *check_pattern(const char *s)
{
    if (*s == '\0' || has_ctl_or_space(s))
        return "a name pattern must be non-empty without spaces";
    return NULL;
}

static const char *check_wake(const char *s)
{
    if (strncmp(s, "cmd:", 4) == 0) {
        for (const char *q = s + 4; *q; q++) {
            if (*q != ' ' && *q != '\t')
                return NULL;
        }
        return "cmd: needs a command";
    }
    if (strncmp(s, "url:", 4) == 0)
        return mx_url_check(s + 4, NULL);
    return "must be cmd:COMMAND or url:URL";
}

static const char *check_refresh(const char *s)
{
    if (strncmp(s, "cmd:", 4) != 0)
        return "must be cmd:COMMAND, a command that prints the new credential";
    return mx_secret_ref_check(s);
}

static const char *check_log_level(const char *s)
{
    enum mx_log_level l;
    return mx_log_level_parse(s, &l) ? "must be one of error, warn, info, debug" : NULL;
}

static const char *check_nonempty(const char *s)
{
    return *s ? NULL : "must not be empty";
}

static bool is_loopback_host(struct mx_str h)
{
    char buf[64];
    struct in_addr a4;
    struct in6_addr a6;
    if (mx_str_caseeq_cstr(h, "localhost"))
        return true;
    if (h.len >= sizeof(buf))
        return false;
    memcpy(buf, h.p, h.len);
    buf[h.len] = '\0';
    if (inet_pton(AF_INET, buf, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, buf, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

/* host:port with an IP literal or localhost; IPv6 in brackets. */
static const char *check_address(const char *s)
{
    struct mx_str h;
    char buf[64];
    struct in_addr a4;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (end == NULL || end[1] != ':')
            return "must be [IPv6]:port, e.g. \"[::1]:8443\"";
    } else {
        const char *colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return "must be host:port, with IPv6 in brackets: \"[::1]:8443\"";
        if (colon == NULL || colon == s)
            return "must be host:port, e.g. \"127.0.0.1:8443\"";
    }
    const char *why = check_authority(s, strlen(s), 0, &h);
    if (why)
        return why;
    if (s[0] == '[' || mx_str_caseeq_cstr(h, "localhost"))
        return NULL;
    if (h.len >= sizeof(buf))
        return "host must be an IP address or localhost";
    memcpy(buf, h.p, h.len);
    buf[h.len] = '\0';
    if (inet_pton(AF_INET, buf, &a4) != 1)
        return "host must be an IP address or localhost";
    return NULL;
}

/* ---- typed getters ---- */

/* A table has no value position of its own; its name in the header stands in. */
static int val_line(const struct mx_toml_entry *e)
{
    return e->val.type == MX_TOML_TABLE ? e->line : e->val.line;
}

static int val_col(const struct mx_toml_entry *e)
{
    return e->val.type == MX_TOML_TABLE ? e->col : e->val.col;
}

static int want(struct ctx *c, const struct mx_toml_entry *e, enum mx_toml_type t)
{
    if (e->val.type == t)
        return 0;
    return err_at(c, val_line(e), val_col(e), "'%s' must be %s, not %s", e->key,
                  mx_toml_type_name(t), mx_toml_type_name(e->val.type));
}

static void strv_clear(struct mx_strv *v)
{
    for (size_t i = 0; i < v->cnt; i++)
        free(v->v[i]);
    free(v->v);
    v->v = NULL;
    v->cnt = 0;
}

static int get_strv(struct ctx *c, const struct mx_toml_entry *e, size_t min_cnt,
                    const char *(*check)(const char *), struct mx_strv *out)
{
    int rc = want(c, e, MX_TOML_ARRAY);
    if (rc)
        return rc;
    if (e->val.item_cnt < min_cnt)
        return err_at(c, e->val.line, e->val.col, "'%s' must not be empty", e->key);
    if (e->val.item_cnt && e->val.items[0].type != MX_TOML_STRING)
        return err_at(c, e->val.items[0].line, e->val.items[0].col,
                      "'%s' must be an array of strings", e->key);
    for (size_t i = 0; i < e->val.item_cnt; i++) {
        const struct mx_toml_value *it = &e->val.items[i];
        const char *why = check ? check(it->str) : NULL;
        if (why)
            return err_value(c, it->line, it->col, e->key, it->str, why);
    }
    strv_clear(out);
    out->v = mx_xcalloc(e->val.item_cnt ? e->val.item_cnt : 1, sizeof(char *));
    for (size_t i = 0; i < e->val.item_cnt; i++)
        out->v[i] = mx_xstrdup(e->val.items[i].str);
    out->cnt = e->val.item_cnt;
    return 0;
}

static int get_str(struct ctx *c, const struct mx_toml_entry *e, const char *(*check)(const char *),
                   char **out)
{
    int rc = want(c, e, MX_TOML_STRING);
    if (rc)
        return rc;
    const char *why = check ? check(e->val.str) : check_nonempty(e->val.str);
    if (why)
        return err_value(c, e->val.line, e->val.col, e->key, e->val.str, why);
    free(*out);
    *out = mx_xstrdup(e->val.str);
    return 0;
}

static int get_path(struct ctx *c, const struct mx_toml_entry *e, char **out)
{
    int rc = want(c, e, MX_TOML_STRING);
    if (rc)
        return rc;
    if (e->val.str[0] == '\0')
        return err_at(c, e->val.line, e->val.col, "'%s' must not be empty", e->key);
    free(*out);
    *out = mx_path_resolve(c->dir, e->val.str);
    return 0;
}

static int get_int(struct ctx *c, const struct mx_toml_entry *e, int64_t min, int64_t max,
                   int64_t *out)
{
    int rc = want(c, e, MX_TOML_INT);
    if (rc)
        return rc;
    if (e->val.i < min || e->val.i > max)
        return err_at(c, e->val.line, e->val.col, "'%s' must be between %lld and %lld", e->key,
                      (long long)min, (long long)max);
    *out = e->val.i;
    return 0;
}

static int get_duration(struct ctx *c, const struct mx_toml_entry *e, int64_t min_ms, int64_t *out)
{
    if (e->val.type != MX_TOML_STRING)
        return err_at(c, val_line(e), val_col(e),
                      "'%s' must be a duration string such as \"30s\", not %s", e->key,
                      mx_toml_type_name(e->val.type));
    int64_t ms;
    int rc = mx_duration_parse(e->val.str, e->val.str_len, MAX_DURATION_MS, &ms);
    if (rc == MX_ELIMIT)
        return err_at(c, e->val.line, e->val.col, "'%s' must be at most 24h", e->key);
    if (rc)
        return err_value(c, e->val.line, e->val.col, e->key, e->val.str,
                         "is not a duration; use a number with ms, s, m or h, e.g. \"30s\"");
    if (ms < min_ms)
        return err_at(c, e->val.line, e->val.col, "'%s' must be more than 0", e->key);
    *out = ms;
    return 0;
}

static int get_enum(struct ctx *c, const struct mx_toml_entry *e, const char *const *names,
                    int *out)
{
    char list[160];
    size_t n = 0;
    int rc = want(c, e, MX_TOML_STRING);
    if (rc)
        return rc;
    for (int i = 0; names[i]; i++) {
        if (strcmp(e->val.str, names[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    n = (size_t)snprintf(list, sizeof(list), "must be one of ");
    for (int i = 0; names[i] && n < sizeof(list); i++)
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", names[i]);
    return err_value(c, e->val.line, e->val.col, e->key, e->val.str, list);
}

/* ---- sections ---- */

enum kind {
    F_STR = 0,  /* string, |check| or non-empty */
    F_PATH = 1, /* string, "~/" expanded, relative to the file's directory */
    F_BOOL = 2,
    F_INT = 3,  /* [min, max] */
    F_DUR = 4,  /* at least |min| ms, at most 24 h */
    F_STRV = 5, /* array of strings, at least |min| items, each passing |check| */
    F_CUSTOM = 6,
};

struct field {
    const char *key;
    enum kind kind;
    size_t off;
    int64_t min;
    int64_t max;
    const char *(*check)(const char *);
    int (*custom)(struct ctx *c, const struct mx_toml_entry *e, void *obj);
};

#define FSTR(T, k, m, chk)                                                                         \
    {                                                                                              \
        k, F_STR, offsetof(T, m), 0, 0, chk, NULL                                                  \
    }
#define FPATH(T, k, m)                                                                             \
    {                                                                                              \
        k, F_PATH, offsetof(T, m), 0, 0, NULL, NULL                                                \
    }
#define FBOOL(T, k, m)                                                                             \
    {                                                                                              \
        k, F_BOOL, offsetof(T, m), 0, 0, NULL, NULL                                                \
    }
#define FINT(T, k, m, a, b)                                                                        \
    {                                                                                              \
        k, F_INT, offsetof(T, m), a, b, NULL, NULL                                                 \
    }
#define FDUR(T, k, m, a)                                                                           \
    {                                                                                              \
        k, F_DUR, offsetof(T, m), a, 0, NULL, NULL                                                 \
    }
#define FSTRV(T, k, m, a, chk)                                                                     \
    {                                                                                              \
        k, F_STRV, offsetof(T, m), a, 0, chk, NULL                                                 \
    }
#define FCUSTOM(k, fn)                                                                             \
    {                                                                                              \
        k, F_CUSTOM, 0, 0, 0, NULL, fn                                                             \
    }

static int apply(struct ctx *c, const struct field *f, const struct mx_toml_entry *e, void *obj)
{
    char *at = (char *)obj + f->off;
    switch (f->kind) {
    case F_STR:
        return get_str(c, e, f->check, (char **)(void *)at);
    case F_PATH:
        return get_path(c, e, (char **)(void *)at);
    case F_BOOL: {
        int rc = want(c, e, MX_TOML_BOOL);
        if (rc == 0)
            *(bool *)(void *)at = e->val.b;
        return rc;
    }
    case F_INT:
        return get_int(c, e, f->min, f->max, (int64_t *)(void *)at);
    case F_DUR:
        return get_duration(c, e, f->min, (int64_t *)(void *)at);
    case F_STRV:
        return get_strv(c, e, (size_t)f->min, f->check, (struct mx_strv *)(void *)at);
    case F_CUSTOM:
        return f->custom(c, e, obj);
    }
    return MX_EINVAL;
}

static int unknown_key(struct ctx *c, const struct mx_toml_entry *e, const char *table,
                       const struct field *fields, size_t nfields);

static int walk(struct ctx *c, const struct mx_toml_table *t, const struct field *fields,
                size_t nfields, void *obj)
{
    for (size_t i = 0; i < t->cnt; i++) {
        const struct mx_toml_entry *e = &t->entries[i];
        const struct field *f = NULL;
        for (size_t j = 0; j < nfields && f == NULL; j++) {
            if (strcmp(fields[j].key, e->key) == 0)
                f = &fields[j];
        }
        if (f == NULL && e->val.type == MX_TOML_TABLE)
            return err_at(c, e->line, e->col, "unknown table [%s]", e->val.table->name);
        if (f == NULL)
            return unknown_key(c, e, t->name, fields, nfields);
        int rc = apply(c, f, e, obj);
        if (rc)
            return rc;
    }
    return 0;
}

static const char *const prefix_names[] = {"conditional", "always", NULL};
static const char *const start_names[] = {"lazy", "eager", NULL};
static const char *const session_names[] = {"shared", "per-client", NULL};
/* Indexed by enum mx_transport. */
static const char *const transport_names[] = {"streamable-http", "sse", "stdio", NULL};

const char *mx_transport_name(enum mx_transport t)
{
    return (size_t)t < sizeof(transport_names) / sizeof(transport_names[0]) - 1 ? transport_names[t]
                                                                                : "?";
}

static int set_prefix(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    int v = 0;
    int rc = get_enum(c, e, prefix_names, &v);
    if (rc == 0)
        ((struct mx_proxy_cfg *)obj)->prefix = v ? MX_PREFIX_ALWAYS : MX_PREFIX_CONDITIONAL;
    return rc;
}

static int set_start(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    int v = 0;
    int rc = get_enum(c, e, start_names, &v);
    if (rc == 0)
        ((struct mx_server_cfg *)obj)->start = v ? MX_START_EAGER : MX_START_LAZY;
    return rc;
}

static int set_session(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    int v = 0;
    int rc = get_enum(c, e, session_names, &v);
    if (rc == 0)
        ((struct mx_server_cfg *)obj)->session = v ? MX_SESSION_PER_CLIENT : MX_SESSION_SHARED;
    return rc;
}

/* Only the spelling here; whether it fits url or command is checked per server. */
static int set_transport(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    int v = 0;
    int rc = get_enum(c, e, transport_names, &v);
    if (rc == 0)
        ((struct mx_server_cfg *)obj)->transport = (enum mx_transport)v;
    return rc;
}

/* Headers mcplex itself owns on the upstream request. */
static bool is_reserved_header(const char *name)
{
    static const char *const reserved[] = {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "keep-alive",
        "proxy-connection",
        "mcp-session-id",
        "content-type",
        "accept",
        "mcp-protocol-version",
        NULL,
    };
    for (size_t i = 0; reserved[i]; i++) {
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    }
    return false;
}

static int set_auth(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    struct mx_server_cfg *s = obj;
    char why[96];
    int rc = want(c, e, MX_TOML_STRING);
    if (rc)
        return rc;
    const char *v = e->val.str;
    const char *name = NULL;
    if (strcmp(v, "bearer") == 0) {
        s->auth = MX_AUTH_BEARER;
    } else if (strcmp(v, "none") == 0) {
        s->auth = MX_AUTH_NONE;
    } else if (strncmp(v, "cookie:", 7) == 0) {
        s->auth = MX_AUTH_COOKIE;
        name = v + 7;
    } else if (strncmp(v, "header:", 7) == 0) {
        s->auth = MX_AUTH_HEADER;
        name = v + 7;
    } else {
        return err_value(c, e->val.line, e->val.col, e->key, v,
                         "must be bearer, cookie:NAME, header:NAME or none");
    }
    free(s->auth_name);
    s->auth_name = NULL;
    if (name == NULL)
        return 0;
    if (!is_token(name)) {
        snprintf(why, sizeof(why), "not a valid %s name (RFC 9110 token)",
                 s->auth == MX_AUTH_COOKIE ? "cookie" : "header");
        return err_value(c, e->val.line, e->val.col, e->key, v, why);
    }
    if (s->auth == MX_AUTH_HEADER && is_reserved_header(name))
        return err_value(c, e->val.line, e->val.col, e->key, v, "mcplex sets this header itself");
    s->auth_name = mx_xstrdup(name);
    return 0;
}

static int set_retry_on(struct ctx *c, const struct mx_toml_entry *e, void *obj)
{
    struct mx_server_cfg *s = obj;
    int rc = want(c, e, MX_TOML_ARRAY);
    if (rc)
        return rc;
    for (size_t i = 0; i < e->val.item_cnt; i++) {
        const struct mx_toml_value *it = &e->val.items[i];
        if (it->type != MX_TOML_INT)
            return err_at(c, it->line, it->col, "'retry_on' must be an array of integers");
        if (it->i < 100 || it->i > 599)
            return err_at(c, it->line, it->col,
                          "'retry_on': %lld is not an HTTP status (100 to 599)", (long long)it->i);
    }
    free(s->retry_on);
    s->retry_on = mx_xcalloc(e->val.item_cnt ? e->val.item_cnt : 1, sizeof(int));
    for (size_t i = 0; i < e->val.item_cnt; i++)
        s->retry_on[i] = (int)e->val.items[i].i;
    s->retry_on_cnt = e->val.item_cnt;
    return 0;
}

#define L struct mx_listen_cfg
static const struct field listen_fields[] = {
    FSTR(L, "address", address, check_address),
    FBOOL(L, "tls", tls),
    FPATH(L, "cert", cert),
    FPATH(L, "key", key),
    FSTR(L, "client_token", client_token_ref, mx_secret_ref_check),
    FSTRV(L, "allowed_origins", allowed_origins, 0, check_origin),
    FBOOL(L, "allow_remote", allow_remote),
    FINT(L, "max_body", max_body, 1, 1024LL * 1024 * 1024),
    FINT(L, "max_header", max_header, 1024, 1024 * 1024),
    FINT(L, "max_connections", max_connections, 1, 1000000),
    FDUR(L, "header_timeout", header_timeout_ms, 1),
    FDUR(L, "idle_timeout", idle_timeout_ms, 1),
    FDUR(L, "session_idle", session_idle_ms, 1),
    FINT(L, "max_connections_per_client", max_connections_per_client, 0, 1000000),
    FINT(L, "max_sessions", max_sessions, 1, 1000000),
    FINT(L, "max_requests_per_connection", max_requests_per_connection, 1, 1000000000),
    FINT(L, "stream_buffer_events", stream_buffer_events, 1, 1000000),
    FINT(L, "stream_buffer_bytes", stream_buffer_bytes, 1024, 1024LL * 1024 * 1024),
    FDUR(L, "stream_poll", stream_poll_ms, 0),
};
#undef L

#define P struct mx_proxy_cfg
static const struct field proxy_fields[] = {
    FPATH(P, "trace", trace),
    FPATH(P, "vault", vault),
    FPATH(P, "state_dir", state_dir),
    FCUSTOM("prefix", set_prefix),
    FINT(P, "name_budget", name_budget, 8, 128),
    FINT(P, "page_size", page_size, 1, 10000),
    FINT(P, "max_list_bytes", max_list_bytes, 65536, 1024LL * 1024 * 1024),
    FDUR(P, "fanout_timeout", fanout_timeout_ms, 1),
    FDUR(P, "request_timeout", request_timeout_ms, 1),
    FDUR(P, "wake_timeout", wake_timeout_ms, 1),
    FDUR(P, "idle_close", idle_close_ms, 1),
    FSTR(P, "log_level", log_level, check_log_level),
};
#undef P

#define S struct mx_server_cfg
static const struct field server_fields[] = {
    FSTR(S, "url", url, check_url),
    FSTRV(S, "command", command, 1, check_nonempty),
    FCUSTOM("transport", set_transport),
    FPATH(S, "cwd", cwd),
    FPATH(S, "ca", ca),
    FSTRV(S, "env", env, 0, check_env_item),
    FCUSTOM("start", set_start),
    FCUSTOM("auth", set_auth),
    FSTR(S, "secret", secret_ref, mx_secret_ref_check),
    FSTRV(S, "tools", tools, 0, check_pattern),
    FSTRV(S, "tools_deny", tools_deny, 0, check_pattern),
    FSTRV(S, "prompts", prompts, 0, check_pattern),
    FSTRV(S, "prompts_deny", prompts_deny, 0, check_pattern),
    FSTR(S, "wake", wake, check_wake),
    FSTR(S, "refresh", refresh, check_refresh),
    FCUSTOM("retry_on", set_retry_on),
    FSTR(S, "alias", alias, check_name),
    FCUSTOM("session", set_session),
    FINT(S, "max_concurrency", max_concurrency, 1, 10000),
    FINT(S, "max_list_bytes", max_list_bytes, 65536, 1024LL * 1024 * 1024),
    FDUR(S, "keepalive", keepalive_ms, 0),
    FDUR(S, "request_timeout", request_timeout_ms, 1),
    FDUR(S, "wake_timeout", wake_timeout_ms, 1),
    FDUR(S, "idle_close", idle_close_ms, 1),
};
#undef S

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))

/* Where keys live, for the messages about a key in the wrong place. */
static const struct {
    const char *header; /* as written in the file, NAME for any server */
    const struct field *fields;
    size_t cnt;
} sections[] = {
    {"listen", listen_fields, NFIELDS(listen_fields)},
    {"proxy", proxy_fields, NFIELDS(proxy_fields)},
    {"servers.NAME", server_fields, NFIELDS(server_fields)},
};

#define MAX_SECTION_KEYS 64

static bool has_field(const struct field *fields, size_t cnt, const char *key)
{
    for (size_t i = 0; i < cnt; i++) {
        if (strcmp(fields[i].key, key) == 0)
            return true;
    }
    return false;
}

/* "[listen]" or "[proxy] or [servers.NAME]": the sections that know |key|; "" when none. */
static void sections_with(const char *key, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NFIELDS(sections) && n < cap; i++) {
        if (has_field(sections[i].fields, sections[i].cnt, key))
            n += (size_t)snprintf(out + n, cap - n, "%s[%s]", n ? " or " : "", sections[i].header);
    }
}

/*
 * An unknown key in [|table|]: the known key nearest it there ("did you
 * mean"), else the section it belongs in, else the bare fact. Only key
 * names are quoted; the value stays unread.
 */
static int unknown_key(struct ctx *c, const struct mx_toml_entry *e, const char *table,
                       const struct field *fields, size_t nfields)
{
    const char *names[MAX_SECTION_KEYS];
    char where[96];
    MX_ASSERT(nfields <= MAX_SECTION_KEYS);
    sections_with(e->key, where, sizeof(where));
    if (where[0])
        return err_at(c, e->line, e->col, "unknown key '%s' in [%s]; '%s' belongs in %s", e->key,
                      table, e->key, where);
    for (size_t i = 0; i < nfields; i++)
        names[i] = fields[i].key;
    int k = mx_suggest(mx_str_cstr(e->key), names, nfields);
    if (k >= 0)
        return err_at(c, e->line, e->col, "unknown key '%s' in [%s]; did you mean '%s'?", e->key,
                      table, names[k]);
    return err_at(c, e->line, e->col, "unknown key '%s' in [%s]", e->key, table);
}

/* A key above every table: where it belongs, or the nearest key of any section. */
static int unknown_root_key(struct ctx *c, const struct mx_toml_entry *e)
{
    const char *names[3 * MAX_SECTION_KEYS];
    size_t sect[3 * MAX_SECTION_KEYS];
    size_t n = 0;
    char where[96];
    sections_with(e->key, where, sizeof(where));
    if (where[0])
        return err_at(c, e->line, e->col, "unknown key '%s' outside any table; '%s' belongs in %s",
                      e->key, e->key, where);
    for (size_t i = 0; i < NFIELDS(sections); i++) {
        for (size_t j = 0; j < sections[i].cnt && n < NFIELDS(names); j++) {
            sect[n] = i;
            names[n++] = sections[i].fields[j].key;
        }
    }
    int k = mx_suggest(mx_str_cstr(e->key), names, n);
    if (k >= 0)
        return err_at(c, e->line, e->col,
                      "unknown key '%s' outside any table; did you mean '%s' in [%s]?", e->key,
                      names[k], sections[sect[k]].header);
    return err_at(c, e->line, e->col,
                  "unknown key '%s' outside any table; keys go under [listen], [proxy] or "
                  "[servers.NAME]",
                  e->key);
}

/*
 * An unknown table at the top. The header as written is rebuilt from the
 * tables it implied ([server.files] makes "server" holding "files"), so the
 * suggestion can repeat it with the first name corrected.
 */
static int unknown_root_table(struct ctx *c, const struct mx_toml_entry *e)
{
    static const char *const names[] = {"listen", "proxy", "servers"};
    const struct mx_toml_table *t = e->val.table;
    const char *rest = "";
    while (!t->defined && t->cnt == 1 && t->entries[0].val.type == MX_TOML_TABLE)
        t = t->entries[0].val.table;
    if (t->name[strlen(e->key)] == '.')
        rest = t->name + strlen(e->key);
    int k = mx_suggest(mx_str_cstr(e->key), names, NFIELDS(names));
    if (k >= 0)
        return err_at(c, e->line, e->col, "unknown table [%s]; did you mean [%s%s]?", t->name,
                      names[k], rest);
    return err_at(c, e->line, e->col,
                  "unknown table [%s]; expected [listen], [proxy] or [servers.NAME]", e->key);
}

/*
 * mx_toml_show_cb: a value written without quotes is quoted back in the
 * message only for a known key that never holds a secret.
 */
static bool may_show(const char *table, const char *key)
{
    if (is_secret_bearing(key))
        return false;
    if (strcmp(table, "listen") == 0)
        return has_field(listen_fields, NFIELDS(listen_fields), key);
    if (strcmp(table, "proxy") == 0)
        return has_field(proxy_fields, NFIELDS(proxy_fields), key);
    if (strncmp(table, "servers.", 8) == 0 && strchr(table + 8, '.') == NULL)
        return has_field(server_fields, NFIELDS(server_fields), key);
    return false;
}

static void listen_defaults(struct mx_listen_cfg *l)
{
    l->address = mx_xstrdup("127.0.0.1:8443");
    l->tls = true;
    l->max_body = 4194304;
    l->max_header = 65536;
    l->max_connections = 1024;
    l->header_timeout_ms = 10 * 1000;
    l->idle_timeout_ms = 120 * 1000;
    l->session_idle_ms = 30 * 60 * 1000;
    l->max_connections_per_client = 0;
    l->max_sessions = 4096;
    l->max_requests_per_connection = 100000;
    l->stream_buffer_events = 256;
    l->stream_buffer_bytes = 4194304;
}

static void proxy_defaults(struct mx_proxy_cfg *p)
{
    p->vault = mx_vault_default_path();
    p->state_dir = mx_config_default_state_dir();
    p->prefix = MX_PREFIX_CONDITIONAL;
    p->name_budget = 48;
    p->page_size = 100;
    p->max_list_bytes = 16 * 1024 * 1024;
    p->fanout_timeout_ms = 3000;
    p->request_timeout_ms = 120 * 1000;
    p->wake_timeout_ms = 60 * 1000;
    p->idle_close_ms = 60 * 1000;
    p->log_level = mx_xstrdup("info");
}

static const struct mx_toml_table *section(struct ctx *c, const struct mx_toml_table *root,
                                           const char *name, int *rc)
{
    const struct mx_toml_entry *e = mx_toml_find(root, name);
    *rc = 0;
    if (e == NULL)
        return NULL;
    if (e->val.type != MX_TOML_TABLE) {
        *rc = err_at(c, e->line, e->col, "'%s' must be a [%s] table", name, name);
        return NULL;
    }
    return e->val.table;
}

static int finish_listen(struct ctx *c, const struct mx_toml_table *t, struct config_priv *cp)
{
    struct mx_listen_cfg *l = &cp->pub.listen;
    struct mx_str host = {NULL, 0};
    const struct mx_toml_entry *e;

    if (t == NULL)
        return 0;
    const char *addr = strrchr(l->address, ':');
    check_authority(l->address, (size_t)(addr - l->address), 0, &host);
    e = mx_toml_find(t, "address");
    if (!l->allow_remote && !is_loopback_host(host) && e)
        return err_value(c, e->val.line, e->val.col, e->key, l->address,
                         "not a loopback address; set allow_remote = true to accept clients "
                         "from other machines");
    const struct mx_toml_entry *cert = mx_toml_find(t, "cert");
    const struct mx_toml_entry *key = mx_toml_find(t, "key");
    if ((cert == NULL) != (key == NULL)) {
        e = cert ? cert : key;
        return err_at(c, e->line, e->col, "set 'cert' and 'key' together, or neither");
    }
    e = mx_toml_find(t, "client_token");
    if (e) {
        cp->client_token.line = e->val.line;
        cp->client_token.col = e->val.col;
    }
    return 0;
}

static void server_defaults(struct mx_server_cfg *s, const char *name, int line)
{
    static const int retry_default[] = {502, 503, 504, 423};
    s->name = mx_xstrdup(name);
    s->line = line;
    s->start = MX_START_LAZY;
    s->retry_on = mx_xmalloc(sizeof(retry_default));
    memcpy(s->retry_on, retry_default, sizeof(retry_default));
    s->retry_on_cnt = NFIELDS(retry_default);
    s->session = MX_SESSION_SHARED;
    s->max_concurrency = 8;
    s->keepalive_ms = 0;
    /* -1: take [proxy]'s value once the whole file is read */
    s->request_timeout_ms = -1;
    s->max_list_bytes = -1;
    s->wake_timeout_ms = -1;
    s->idle_close_ms = -1;
}

static int not_for_stdio(struct ctx *c, const struct mx_toml_entry *e)
{
    return err_at(c, e->val.line, e->val.col,
                  "'%s' applies to url servers; a command receives secrets through 'env'", e->key);
}

/* Rules that tie several keys of one server together. */
static int finish_server(struct ctx *c, const struct mx_toml_entry *se, struct mx_server_cfg *s,
                         struct server_pos *sp)
{
    const struct mx_toml_table *t = se->val.table;
    const struct mx_toml_entry *url = mx_toml_find(t, "url");
    const struct mx_toml_entry *cmd = mx_toml_find(t, "command");
    const struct mx_toml_entry *transport = mx_toml_find(t, "transport");
    const struct mx_toml_entry *auth = mx_toml_find(t, "auth");
    const struct mx_toml_entry *secret = mx_toml_find(t, "secret");
    const struct mx_toml_entry *e;

    if (url && cmd) {
        e = before(url->line, url->col, cmd->line, cmd->col) ? cmd : url;
        return err_at(c, e->line, e->col, "server '%s': set 'url' or 'command', not both", s->name);
    }
    if (!url && !cmd)
        return err_at(c, se->line, se->col, "server '%s' needs a 'url' or a 'command'", s->name);
    if (cmd) {
        if (transport && s->transport != MX_TRANSPORT_STDIO)
            return err_at(c, transport->val.line, transport->val.col,
                          "'transport': a 'command' server speaks stdio");
        s->transport = MX_TRANSPORT_STDIO;
        if (auth && s->auth != MX_AUTH_NONE)
            return not_for_stdio(c, auth);
        if (secret)
            return not_for_stdio(c, secret);
        if ((e = mx_toml_find(t, "refresh")))
            return not_for_stdio(c, e);
    } else {
        if (transport && s->transport == MX_TRANSPORT_STDIO)
            return err_at(c, transport->val.line, transport->val.col,
                          "'transport': \"stdio\" needs a 'command', not a 'url'");
        if (!transport)
            s->transport = MX_TRANSPORT_HTTP;
        if ((e = mx_toml_find(t, "env")) || (e = mx_toml_find(t, "cwd")))
            return err_at(c, e->line, e->col, "'%s' applies only to 'command' servers", e->key);
        /* An omitted auth means bearer when a secret is given (the common case:
         * an API token) and none otherwise. */
        if (!auth)
            s->auth = secret ? MX_AUTH_BEARER : MX_AUTH_NONE;
        if (auth && s->auth == MX_AUTH_NONE && secret)
            return err_at(c, secret->line, secret->col,
                          "'secret' is set but auth = \"none\"; remove one of them");
        if (s->auth != MX_AUTH_NONE && !secret)
            return err_value(c, auth->val.line, auth->val.col, auth->key, auth->val.str,
                             "needs a 'secret'");
        /* the refresh replaces a credential: the first one comes from 'secret' */
        if ((e = mx_toml_find(t, "refresh")) && !secret)
            return err_at(c, e->line, e->col,
                          "'refresh' needs a 'secret', the credential used until the first "
                          "refresh");
    }
    if (secret) {
        sp->secret.line = secret->val.line;
        sp->secret.col = secret->val.col;
    }
    e = mx_toml_find(t, "env");
    sp->env = mx_xcalloc(s->env.cnt ? s->env.cnt : 1, sizeof(*sp->env));
    for (size_t i = 0; i < s->env.cnt; i++) {
        const struct mx_toml_value *it = &e->val.items[i];
        size_t n = strcspn(s->env.v[i], "=");
        for (size_t j = 0; j < i; j++) {
            if (strncmp(s->env.v[j], s->env.v[i], n) == 0 && strcspn(s->env.v[j], "=") == n)
                return err_at(c, it->line, it->col, "'env': %.*s is listed twice", (int)n,
                              s->env.v[i]);
        }
        sp->env[i].line = it->line;
        sp->env[i].col = it->col;
    }
    s->env_secret = mx_xcalloc(s->env.cnt ? s->env.cnt : 1, sizeof(*s->env_secret));
    if (s->alias == NULL)
        s->alias = mx_xstrdup(s->name);
    return 0;
}

static int walk_servers(struct ctx *c, const struct mx_toml_table *t, struct config_priv *cp)
{
    struct mx_config *cfg = &cp->pub;
    if (t == NULL)
        return 0;
    cfg->servers = mx_xcalloc(t->cnt ? t->cnt : 1, sizeof(*cfg->servers));
    cp->srv = mx_xcalloc(t->cnt ? t->cnt : 1, sizeof(*cp->srv));
    for (size_t i = 0; i < t->cnt; i++) {
        const struct mx_toml_entry *se = &t->entries[i];
        char buf[96];
        if (se->val.type != MX_TOML_TABLE)
            return err_at(c, se->line, se->col,
                          "unknown key '%s' in [servers]; a server is a [servers.NAME] table",
                          se->key);
        if (check_name(se->key))
            return err_at(c, se->line, se->col,
                          "server name '%s' must be 1 to 32 characters from A-Za-z0-9_-",
                          show(se->key, buf, sizeof(buf)));
        struct mx_server_cfg *s = &cfg->servers[cfg->server_cnt++];
        const struct mx_toml_table *st = se->val.table;
        server_defaults(s, se->key, st->defined ? st->line : se->val.line);
        int rc = walk(c, st, server_fields, NFIELDS(server_fields), s);
        if (rc == 0)
            rc = finish_server(c, se, s, &cp->srv[i]);
        if (rc)
            return rc;
        if (s->request_timeout_ms < 0)
            s->request_timeout_ms = cfg->proxy.request_timeout_ms;
        if (s->wake_timeout_ms < 0)
            s->wake_timeout_ms = cfg->proxy.wake_timeout_ms;
        if (s->idle_close_ms < 0)
            s->idle_close_ms = cfg->proxy.idle_close_ms;
        if (s->max_list_bytes < 0)
            s->max_list_bytes = cfg->proxy.max_list_bytes;
    }
    /* Aliases name the prefix of colliding tools; two servers sharing one
     * would make "<alias>_<tool>" ambiguous. */
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->servers[i].alias, cfg->servers[j].alias) != 0)
                continue;
            const struct mx_toml_entry *se = &t->entries[i];
            const struct mx_toml_entry *a = mx_toml_find(se->val.table, "alias");
            return err_at(c, a ? a->val.line : se->line, a ? a->val.col : se->col,
                          "server '%s': alias '%s' is already used by server '%s'",
                          cfg->servers[i].name, cfg->servers[i].alias, cfg->servers[j].name);
        }
    }
    return 0;
}

static int walk_root(struct ctx *c, const struct mx_toml_table *root, struct config_priv *cp)
{
    const struct mx_toml_table *listen, *proxy, *servers;
    int rc;

    for (size_t i = 0; i < root->cnt && !c->listen_only; i++) {
        const struct mx_toml_entry *e = &root->entries[i];
        if (strcmp(e->key, "listen") == 0 || strcmp(e->key, "proxy") == 0 ||
            strcmp(e->key, "servers") == 0)
            continue;
        if (e->val.type == MX_TOML_TABLE)
            return unknown_root_table(c, e);
        return unknown_root_key(c, e);
    }
    proxy = section(c, root, "proxy", &rc);
    if (rc == 0 && proxy)
        rc = walk(c, proxy, proxy_fields, NFIELDS(proxy_fields), &cp->pub.proxy);
    if (rc)
        return rc;
    listen = section(c, root, "listen", &rc);
    if (rc == 0 && listen)
        rc = walk(c, listen, listen_fields, NFIELDS(listen_fields), &cp->pub.listen);
    if (rc == 0)
        rc = finish_listen(c, listen, cp);
    if (rc || c->listen_only)
        return rc;
    servers = section(c, root, "servers", &rc);
    if (rc == 0)
        rc = walk_servers(c, servers, cp);
    return rc;
}

static int parse(const char *path, const char *text, size_t len, bool listen_only,
                 struct mx_config **out, struct mx_diag *diag)
{
    struct mx_toml_table *root;
    struct ctx c = {path ? path : "<config>", NULL, diag, listen_only};

    *out = NULL;
    int rc = mx_toml_parse_shown(c.file, text, len, may_show, &root, diag);
    if (rc)
        return MX_EINVAL;
    struct config_priv *cp = mx_xcalloc(1, sizeof(*cp));
    live_cnt++;
    cp->pub.path = path ? mx_xstrdup(path) : NULL;
    cp->pub.dir = path ? mx_path_dir_of(path) : mx_path_resolve(NULL, ".");
    c.dir = cp->pub.dir;
    listen_defaults(&cp->pub.listen);
    proxy_defaults(&cp->pub.proxy);
    rc = walk_root(&c, root, cp);
    cp->empty = root->cnt == 0;
    mx_toml_free(root);
    if (rc) {
        mx_config_free(&cp->pub);
        return MX_EINVAL;
    }
    *out = &cp->pub;
    return 0;
}

int mx_config_parse(const char *path, const char *text, size_t len, struct mx_config **out,
                    struct mx_diag *diag)
{
    return parse(path, text, len, false, out, diag);
}

static int load(const char *path, bool listen_only, struct mx_config **out, struct mx_diag *diag)
{
    struct stat st;
    size_t cap = MX_TOML_MAX_INPUT + 1, len = 0;

    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        mx_diag_set(diag, path, 0, 0, "cannot read config: %s", strerror(e));
        return e == ENOENT ? MX_ENOTFOUND : MX_EIO;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        mx_diag_set(diag, path, 0, 0, "cannot read config: not a regular file");
        close(fd);
        return MX_EIO;
    }
    char *buf = mx_xmalloc(cap);
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            mx_diag_set(diag, path, 0, 0, "cannot read config: %s", strerror(errno));
            free(buf);
            close(fd);
            return MX_EIO;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == cap)
            break; /* one byte over the cap: the parser reports the size */
    }
    close(fd);
    int rc = parse(path, buf, len, listen_only, out, diag);
    free(buf);
    return rc;
}

int mx_config_load(const char *path, struct mx_config **out, struct mx_diag *diag)
{
    return load(path, false, out, diag);
}

int mx_config_load_listen(const char *path, struct mx_config **out, struct mx_diag *diag)
{
    return load(path, true, out, diag);
}

/* pub is the first member (C11 6.7.2.1p15), so the pointers convert. */
static const struct config_priv *priv(const struct mx_config *cfg)
{
    return (const struct config_priv *)(const void *)cfg;
}

int mx_config_resolve_ref(const struct mx_config *cfg, const struct mx_server_cfg *srv,
                          size_t env_idx, struct mx_secret **out, struct mx_diag *diag)
{
    const struct config_priv *cp = priv(cfg);
    const char *ref;
    struct pos at;
    struct mx_diag sd;

    *out = NULL;
    if (srv == NULL) {
        ref = cfg->listen.client_token_ref;
        at = cp->client_token;
    } else {
        size_t idx = (size_t)(srv - cfg->servers);
        MX_ASSERT(idx < cfg->server_cnt);
        if (env_idx == MX_CONFIG_REF_SECRET) {
            ref = srv->secret_ref;
            at = cp->srv[idx].secret;
        } else {
            MX_ASSERT(env_idx < srv->env.cnt);
            const char *eq = strchr(srv->env.v[env_idx], '=');
            ref = eq ? eq + 1 : NULL;
            at = cp->srv[idx].env[env_idx];
        }
    }
    if (ref == NULL)
        return 0;
    memset(&sd, 0, sizeof(sd));
    int rc = mx_secret_resolve(ref, cfg->proxy.vault, cfg->dir, out, &sd);
    if (rc)
        mx_diag_set(diag, cfg->path, at.line, at.col, "%s", sd.msg);
    return rc;
}

/* Prefix |d|'s message with |who| ("server 'files'"). */
static void diag_prefix(struct mx_diag *d, const char *who)
{
    size_t wl = strlen(who) + 2, ml = strlen(d->msg);
    MX_ASSERT(wl < sizeof(d->msg));
    if (wl + ml >= sizeof(d->msg))
        ml = sizeof(d->msg) - 1 - wl;
    memmove(d->msg + wl, d->msg, ml);
    memcpy(d->msg, who, wl - 2);
    memcpy(d->msg + wl - 2, ": ", 2);
    d->msg[wl + ml] = '\0';
}

int mx_server_resolve_secrets(const struct mx_config *cfg, struct mx_server_cfg *s,
                              struct mx_diag *diag)
{
    char who[128];
    snprintf(who, sizeof(who), "server '%s'", s->name);
    mx_secret_free(s->secret);
    s->secret = NULL;
    int rc = mx_config_resolve_ref(cfg, s, MX_CONFIG_REF_SECRET, &s->secret, diag);
    for (size_t j = 0; j < s->env.cnt && rc == 0; j++) {
        mx_secret_free(s->env_secret[j]);
        s->env_secret[j] = NULL;
        rc = mx_config_resolve_ref(cfg, s, j, &s->env_secret[j], diag);
        if (rc)
            snprintf(who, sizeof(who), "server '%s': env %.*s", s->name,
                     (int)strcspn(s->env.v[j], "="), s->env.v[j]);
    }
    if (rc)
        diag_prefix(diag, who);
    return rc;
}

int mx_config_resolve_secrets(struct mx_config *cfg, struct mx_diag *diag)
{
    mx_secret_free(cfg->listen.client_token);
    cfg->listen.client_token = NULL;
    int rc = mx_config_resolve_ref(cfg, NULL, 0, &cfg->listen.client_token, diag);
    if (rc) {
        diag_prefix(diag, "client_token");
        return rc;
    }
    for (size_t i = 0; i < cfg->server_cnt && rc == 0; i++)
        rc = mx_server_resolve_secrets(cfg, &cfg->servers[i], diag);
    return rc;
}

static void server_clear(struct mx_server_cfg *s)
{
    free(s->name);
    free(s->url);
    strv_clear(&s->command);
    free(s->cwd);
    free(s->ca);
    if (s->env_secret) {
        for (size_t i = 0; i < s->env.cnt; i++)
            mx_secret_free(s->env_secret[i]);
        free(s->env_secret);
    }
    strv_clear(&s->env);
    free(s->auth_name);
    free(s->secret_ref);
    mx_secret_free(s->secret);
    strv_clear(&s->tools);
    strv_clear(&s->tools_deny);
    strv_clear(&s->prompts);
    strv_clear(&s->prompts_deny);
    free(s->wake);
    free(s->refresh);
    free(s->retry_on);
    free(s->alias);
}

void mx_config_free(struct mx_config *cfg)
{
    if (cfg == NULL)
        return;
    struct config_priv *cp = (struct config_priv *)(void *)cfg;
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        server_clear(&cfg->servers[i]);
        free(cp->srv[i].env);
    }
    free(cfg->servers);
    free(cp->srv);
    free(cfg->listen.address);
    free(cfg->listen.cert);
    free(cfg->listen.key);
    free(cfg->listen.client_token_ref);
    mx_secret_free(cfg->listen.client_token);
    strv_clear(&cfg->listen.allowed_origins);
    free(cfg->proxy.trace);
    free(cfg->proxy.vault);
    free(cfg->proxy.state_dir);
    free(cfg->proxy.log_level);
    free(cfg->path);
    free(cfg->dir);
    free(cp);
    live_cnt--;
}

const char *mx_config_warning(const struct mx_config *cfg)
{
    if (cfg->server_cnt)
        return NULL;
    if (priv(cfg)->empty)
        return "the config is empty, so mcplex serves no upstream; add a server: "
               "[servers.NAME] with url = \"https://HOST/mcp\" (or command = [\"PROGRAM\"])";
    return "no [servers.NAME] table, so mcplex serves no upstream; add a server: "
           "[servers.NAME] with url = \"https://HOST/mcp\" (or command = [\"PROGRAM\"])";
}

const char *mx_config_name_check(const char *name)
{
    return check_name(name);
}

const struct mx_server_cfg *mx_config_server(const struct mx_config *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        if (strcmp(cfg->servers[i].name, name) == 0)
            return &cfg->servers[i];
    }
    return NULL;
}

void mx_config_redact(const struct mx_config *cfg, char *p, size_t len)
{
    for (size_t i = 0; i < cfg->server_cnt; i++) {
        const struct mx_server_cfg *s = &cfg->servers[i];
        mx_secret_redact(s->secret, p, len);
        /* a stdio upstream's secrets reach it through its environment */
        for (size_t j = 0; s->env_secret && j < s->env.cnt; j++)
            mx_secret_redact(s->env_secret[j], p, len);
    }
    mx_secret_redact(cfg->listen.client_token, p, len);
}

char *mx_config_find(const char *arg)
{
    if (arg)
        return mx_xstrdup(arg);
    const char *env = getenv("MCPLEX_CONFIG");
    if (env && env[0])
        return mx_xstrdup(env);
    if (access("mcplex.toml", F_OK) == 0)
        return mx_xstrdup("mcplex.toml");
    return mx_path_xdg("XDG_CONFIG_HOME", "~/.config", "mcplex/mcplex.toml");
}

char *mx_config_default_state_dir(void)
{
    return mx_path_xdg("XDG_STATE_HOME", "~/.local/state", "mcplex");
}

int mx_config_open(const char *arg, struct mx_config **out, struct mx_diag *diag)
{
    char *path = mx_config_find(arg);
    int rc = mx_config_load(path, out, diag);
    free(path);
    return rc;
}
