/* SPDX-License-Identifier: MIT */
/*
 * URI routing tables and template matching. Matching runs one pass per
 * template part over a set of reachable positions (like a glob matcher),
 * so any URI costs O(parts x length), whatever the template looks like.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "uriroute.h"

struct exact {
    char *uri;
    size_t src;
};

struct tpl {
    char *text;
    size_t src;
};

struct mx_uriroute {
    struct exact *exact; /* sorted by (uri, src) */
    size_t exact_cnt;
    struct tpl *tpls; /* in source order */
    size_t tpl_cnt;
};

static int cmp_exact(const void *a, const void *b)
{
    const struct exact *x = a, *y = b;
    int c = strcmp(x->uri, y->uri);
    if (c)
        return c;
    return x->src < y->src ? -1 : x->src > y->src;
}

struct mx_uriroute *mx_uriroute_new(const struct mx_uri_source *srcs, size_t cnt)
{
    struct mx_uriroute *r = mx_xcalloc(1, sizeof(*r));
    size_t ne = 0, nt = 0;
    for (size_t s = 0; s < cnt; s++) {
        ne += json_array_size(srcs[s].resources);
        nt += json_array_size(srcs[s].templates);
    }
    r->exact = mx_xcalloc(ne ? ne : 1, sizeof(*r->exact));
    r->tpls = mx_xcalloc(nt ? nt : 1, sizeof(*r->tpls));
    for (size_t s = 0; s < cnt; s++) {
        size_t i;
        json_t *it;
        json_array_foreach(srcs[s].resources, i, it)
        {
            const char *u = json_string_value(json_object_get(it, "uri"));
            if (u && *u) {
                r->exact[r->exact_cnt].uri = mx_xstrdup(u);
                r->exact[r->exact_cnt++].src = s;
            }
        }
        json_array_foreach(srcs[s].templates, i, it)
        {
            const char *t = json_string_value(json_object_get(it, "uriTemplate"));
            if (t && *t) {
                r->tpls[r->tpl_cnt].text = mx_xstrdup(t);
                r->tpls[r->tpl_cnt++].src = s;
            }
        }
    }
    qsort(r->exact, r->exact_cnt, sizeof(*r->exact), cmp_exact);
    return r;
}

void mx_uriroute_free(struct mx_uriroute *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->exact_cnt; i++)
        free(r->exact[i].uri);
    for (size_t i = 0; i < r->tpl_cnt; i++)
        free(r->tpls[i].text);
    free(r->exact);
    free(r->tpls);
    free(r);
}

static void add_cand(struct mx_uriroute_result *out, size_t src)
{
    for (size_t i = 0; i < out->cnt; i++) {
        if (out->cands[i] == src)
            return;
    }
    if (out->cnt == MX_URIROUTE_MAX_CANDS)
        return;
    size_t i = out->cnt++;
    while (i > 0 && out->cands[i - 1] > src) {
        out->cands[i] = out->cands[i - 1];
        i--;
    }
    out->cands[i] = src;
}

static int cmp_str_cstr(struct mx_str a, const char *b)
{
    size_t bl = strlen(b), m = a.len < bl ? a.len : bl;
    int c = m ? memcmp(a.p, b, m) : 0;
    if (c)
        return c;
    return a.len < bl ? -1 : a.len > bl;
}

void mx_uriroute_find(const struct mx_uriroute *r, struct mx_str uri,
                      struct mx_uriroute_result *out)
{
    memset(out, 0, sizeof(*out));
    size_t lo = 0, hi = r->exact_cnt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_str_cstr(uri, r->exact[mid].uri) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < r->exact_cnt && cmp_str_cstr(uri, r->exact[i].uri) == 0; i++)
        add_cand(out, r->exact[i].src);
    if (out->cnt)
        out->how = MX_URIROUTE_EXACT;
    /* Templates count even after an exact match: an upstream that lists a
     * URI must not win it silently over another whose template claims it
     * too (nor the reverse), so both are candidates and the caller refuses
     * the ambiguity. */
    for (size_t i = 0; i < r->tpl_cnt; i++) {
        if (mx_uritpl_match(mx_str_cstr(r->tpls[i].text), uri))
            add_cand(out, r->tpls[i].src);
    }
    if (out->cnt && out->how == MX_URIROUTE_NONE)
        out->how = MX_URIROUTE_TEMPLATE;
}

void mx_uriroute_find_template(const struct mx_uriroute *r, struct mx_str tpl,
                               struct mx_uriroute_result *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < r->tpl_cnt; i++) {
        if (cmp_str_cstr(tpl, r->tpls[i].text) == 0)
            add_cand(out, r->tpls[i].src);
    }
    if (out->cnt)
        out->how = MX_URIROUTE_TEMPLATE;
}

/* ---- template matching ---- */

enum cls {
    CLS_SEGMENT = 0, /* not '/', '?', '#' */
    CLS_ANY = 1,
    CLS_QUERY = 2, /* not '#' */
};

static bool in_cls(enum cls c, char ch)
{
    switch (c) {
    case CLS_SEGMENT:
        return ch != '/' && ch != '?' && ch != '#';
    case CLS_ANY:
        return true;
    case CLS_QUERY:
        return ch != '#';
    }
    return false;
}

/* Literal |lit| at every reachable position. */
static void step_literal(const char *u, size_t n, const char *lit, size_t ll, const bool *reach,
                         bool *next)
{
    memset(next, 0, n + 1);
    for (size_t j = 0; j + ll <= n; j++) {
        if (reach[j] && (ll == 0 || memcmp(u + j, lit, ll) == 0))
            next[j + ll] = true;
    }
}

/* One or more characters of |c| after any reachable position. */
static void step_run(const char *u, size_t n, enum cls c, const bool *reach, bool *next)
{
    bool act = false;
    next[0] = false;
    for (size_t k = 1; k <= n; k++) {
        act = (reach[k - 1] || act) && in_cls(c, u[k - 1]);
        next[k] = act;
    }
}

static bool any_reach(const bool *r, size_t n)
{
    for (size_t i = 0; i <= n; i++) {
        if (r[i])
            return true;
    }
    return false;
}

/* One expression "{...}" (without braces). Returns false when malformed. */
static bool step_expr(const char *u, size_t n, const char *e, size_t el, bool *reach, bool *tmp)
{
    char op = el ? e[0] : '\0';
    if (el == 0 || memchr(e, '\0', el))
        return false;
    if (strchr("+#./;?&", op) == NULL && !((op >= 'A' && op <= 'Z') || (op >= 'a' && op <= 'z') ||
                                           (op >= '0' && op <= '9') || op == '_' || op == '%'))
        return false; /* "=,!@|" are reserved for future operators (RFC 6570 §2.2) */
    for (size_t i = 1; i < el; i++) {
        char ch = e[i];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              strchr("_.%,*:", ch)))
            return false;
    }
    switch (op) {
    case '+':
        step_run(u, n, CLS_ANY, reach, tmp);
        break;
    case '#':
        step_literal(u, n, "#", 1, reach, tmp);
        memcpy(reach, tmp, n + 1);
        step_run(u, n, CLS_ANY, reach, tmp);
        break;
    case '/':
    case '.':
    case ';':
        step_literal(u, n, e, 1, reach, tmp);
        memcpy(reach, tmp, n + 1);
        step_run(u, n, op == '/' ? CLS_QUERY : CLS_SEGMENT, reach, tmp);
        break;
    case '?':
    case '&': {
        /* optional: a query may be absent */
        bool *q = mx_xcalloc(n + 1, 1);
        step_literal(u, n, e, 1, reach, tmp);
        memcpy(q, tmp, n + 1);
        step_run(u, n, CLS_QUERY, q, tmp);
        for (size_t i = 0; i <= n; i++)
            tmp[i] = tmp[i] || reach[i];
        free(q);
        break;
    }
    default:
        step_run(u, n, CLS_SEGMENT, reach, tmp);
        break;
    }
    memcpy(reach, tmp, n + 1);
    return true;
}

bool mx_uritpl_match(struct mx_str tpl, struct mx_str uri)
{
    if (uri.len > MX_URITPL_MAX_URI || tpl.len == 0)
        return false;
    size_t n = uri.len;
    bool *reach = mx_xcalloc(n + 1, 1);
    bool *tmp = mx_xcalloc(n + 1, 1);
    bool ok = true;
    reach[0] = true;
    for (size_t i = 0; i < tpl.len && ok;) {
        if (tpl.p[i] == '{') {
            const char *close = memchr(tpl.p + i, '}', tpl.len - i);
            if (close == NULL) {
                ok = false;
                break;
            }
            size_t el = (size_t)(close - tpl.p) - i - 1;
            ok = step_expr(uri.p, n, tpl.p + i + 1, el, reach, tmp);
            i += el + 2;
        } else {
            size_t j = i;
            while (j < tpl.len && tpl.p[j] != '{' && tpl.p[j] != '}')
                j++;
            if (j < tpl.len && tpl.p[j] == '}') {
                ok = false;
                break;
            }
            step_literal(uri.p, n, tpl.p + i, j - i, reach, tmp);
            memcpy(reach, tmp, n + 1);
            i = j;
        }
        if (ok && !any_reach(reach, n))
            break;
    }
    ok = ok && reach[n];
    free(reach);
    free(tmp);
    return ok;
}
