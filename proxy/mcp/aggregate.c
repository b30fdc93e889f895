/* SPDX-License-Identifier: MIT */
/*
 * The merge behind /mcp's lists. Names are decided in passes that each look
 * at the whole set at once (count holders, prefix, clean, cut, tell apart),
 * so nothing depends on the order sources are given in beyond their index,
 * which only breaks ties between equal keys.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "aggregate.h"
#include "alloc.h"
#include "err.h"

/* Hex digits of the short form: first try, and the most ever used. */
#define TAG_MIN 6
#define TAG_MAX 16

struct ent {
    struct mx_agg_entry pub;
    char *name;  /* exposed name (tools, prompts), owned */
    char *base;  /* the name before the short form, owned */
    bool pinned; /* keeps the name it was exposed as before */
};

/* A pinned name and whose it is. */
struct claim {
    const char *name;
    const char *orig;
    size_t src;
};

struct mx_agg_view {
    enum mx_agg_kind kind;
    struct ent *v;
    size_t cnt;
    json_t **arrays; /* one reference per source */
    const char **aliases;
    uint32_t *visible_cnt;
    size_t src_cnt;
};

const char *mx_agg_list_key(enum mx_agg_kind kind)
{
    static const char *const keys[MX_AGG_KIND_CNT] = {"tools", "prompts", "resources",
                                                      "resourceTemplates"};
    return kind < MX_AGG_KIND_CNT ? keys[kind] : "items";
}

const char *mx_agg_item_field(enum mx_agg_kind kind)
{
    switch (kind) {
    case MX_AGG_TOOLS:
    case MX_AGG_PROMPTS:
        return "name";
    case MX_AGG_RESOURCES:
        return "uri";
    case MX_AGG_TEMPLATES:
        return "uriTemplate";
    }
    return "name";
}

static bool is_named(enum mx_agg_kind kind)
{
    return kind == MX_AGG_TOOLS || kind == MX_AGG_PROMPTS;
}

static bool any_match(const struct mx_strv *pats, const char *name)
{
    for (size_t i = 0; pats && i < pats->cnt; i++) {
        if (fnmatch(pats->v[i], name, 0) == 0)
            return true;
    }
    return false;
}

static bool passes(const struct mx_agg_source *s, const char *name)
{
    if (s->allow && s->allow->cnt && !any_match(s->allow, name))
        return false;
    return !any_match(s->deny, name);
}

/* MCP 2025-11-25, Tools: names SHOULD use [A-Za-z0-9_.-]. */
static bool name_char_ok(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-' || ch == '.';
}

static void clean(char *s)
{
    for (; *s; s++) {
        if (!name_char_ok(*s))
            *s = '_';
    }
}

static void tag_hex(const char *alias, const char *orig, size_t digits, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA256_DIGEST_LENGTH];
    size_t al = strlen(alias) + 1, ol = strlen(orig);
    unsigned char *in = mx_xmalloc(al + ol);
    /* with the NUL: ("a", "bc") and ("ab", "c") hash apart */
    memcpy(in, alias, al);
    memcpy(in + al, orig, ol);
    SHA256(in, al + ol, md);
    free(in);
    for (size_t i = 0; i < digits; i++)
        out[i] = hex[(md[i / 2] >> ((i & 1) ? 0 : 4)) & 0xf];
    out[digits] = '\0';
}

/* "<base cut to budget-1-digits>_<digits hex>" */
static char *short_form(const char *base, const char *alias, const char *orig, size_t budget,
                        size_t digits)
{
    char tag[TAG_MAX + 1];
    size_t keep = budget > digits + 1 ? budget - digits - 1 : 0;
    size_t blen = strlen(base);
    if (keep > blen)
        keep = blen;
    tag_hex(alias, orig, digits, tag);
    return mx_xasprintf("%.*s_%s", (int)keep, base, tag);
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    int c = strcmp(x->pub.key, y->pub.key);
    if (c)
        return c;
    if (x->pub.src != y->pub.src)
        return x->pub.src < y->pub.src ? -1 : 1;
    /* One source listing a key twice (resources): keep its own order. */
    return x->pub.rank < y->pub.rank ? -1 : x->pub.rank > y->pub.rank;
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* How many sources hold each original name, by binary search over a sorted
 * list of (name) per source with duplicates within one source removed. */
static size_t holders(const char **sorted, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid], name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t c = 0;
    while (lo + c < n && strcmp(sorted[lo + c], name) == 0)
        c++;
    return c;
}

/* Let go of the entries whose key was taken away. */
static void drop_unkeyed(struct mx_agg_view *v)
{
    size_t w = 0;
    for (size_t i = 0; i < v->cnt; i++) {
        if (v->v[i].pub.key) {
            v->v[w++] = v->v[i];
            continue;
        }
        free(v->v[i].name);
        free(v->v[i].base);
    }
    v->cnt = w;
}

/* Give every member of a run of equal names (but a pinned one) a longer
 * tag until all names are distinct. Bounded: the tag grows to TAG_MAX digits; past that, later
 * duplicates are dropped (two 64-bit SHA-256 prefixes agreeing). */
static void tell_apart(struct mx_agg_view *v, size_t budget)
{
    for (size_t digits = TAG_MIN;; digits += 2) {
        bool clash = false;
        qsort(v->v, v->cnt, sizeof(*v->v), cmp_ent);
        for (size_t i = 0; i < v->cnt;) {
            size_t j = i + 1;
            while (j < v->cnt && strcmp(v->v[j].name, v->v[i].name) == 0)
                j++;
            size_t keep = i; /* a pinned name stays; else the first */
            for (size_t k = i; k < j; k++) {
                if (v->v[k].pinned) {
                    keep = k;
                    break;
                }
            }
            for (size_t k = i; j - i > 1 && k < j; k++) {
                struct ent *e = &v->v[k];
                clash = true;
                if (e->pinned && k == keep)
                    continue;
                if (digits > TAG_MAX) {
                    if (k != keep)
                        e->pub.key = NULL; /* keep one only */
                    continue;
                }
                free(e->name);
                e->name = short_form(e->base, v->aliases[e->pub.src], e->pub.orig, budget, digits);
                e->pub.key = e->name;
            }
            i = j;
        }
        if (!clash)
            return;
        if (digits > TAG_MAX)
            break;
    }
    drop_unkeyed(v);
}

static int cmp_src_orig(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    if (x->pub.src != y->pub.src)
        return x->pub.src < y->pub.src ? -1 : 1;
    int c = strcmp(x->pub.orig, y->pub.orig);
    if (c)
        return c;
    return x->pub.rank < y->pub.rank ? -1 : x->pub.rank > y->pub.rank;
}

/* An upstream listing one name twice: its first item counts. */
static void drop_repeats(struct mx_agg_view *v)
{
    size_t w = 0;
    qsort(v->v, v->cnt, sizeof(*v->v), cmp_src_orig);
    for (size_t i = 0; i < v->cnt; i++) {
        if (w && v->v[w - 1].pub.src == v->v[i].pub.src &&
            strcmp(v->v[w - 1].pub.orig, v->v[i].pub.orig) == 0)
            continue;
        v->v[w++] = v->v[i];
    }
    v->cnt = w;
}

static bool valid_pin(const char *name, size_t budget)
{
    size_t n = strlen(name);
    if (n == 0 || n > budget)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!name_char_ok(name[i]))
            return false;
    }
    return true;
}

static int cmp_claim(const void *a, const void *b)
{
    const struct claim *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return strcmp(x->orig, y->orig);
}

/* Every valid pin of every source, one per name (the earliest source, then
 * the smallest original name, wins a name claimed twice). */
static struct claim *claims_make(json_t *const *pins, size_t src_cnt, size_t budget, size_t *cnt)
{
    size_t n = 0, cap = 0;
    struct claim *c = NULL;
    for (size_t s = 0; pins && s < src_cnt; s++) {
        const char *orig;
        json_t *val;
        json_object_foreach(pins[s], orig, val)
        {
            const char *name = json_string_value(val);
            if (name == NULL || !valid_pin(name, budget))
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                c = mx_xrealloc(c, cap * sizeof(*c));
            }
            c[n++] = (struct claim){name, orig, s};
        }
    }
    if (n)
        qsort(c, n, sizeof(*c), cmp_claim);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && strcmp(c[w - 1].name, c[i].name) == 0)
            continue;
        c[w++] = c[i];
    }
    *cnt = w;
    return c;
}

static const struct claim *claim_of(const struct claim *c, size_t n, const char *name)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c[mid].name, name);
        if (r == 0)
            return &c[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Whether |name| is pinned to another item than |e|'s. */
static bool claimed_by_other(const struct claim *c, size_t n, const char *name, const struct ent *e)
{
    const struct claim *k = claim_of(c, n, name);
    return k && (k->src != e->pub.src || strcmp(k->orig, e->pub.orig) != 0);
}

/* The pinned name of |e|, when its pin is the one that holds that name. */
static const char *pin_of(json_t *const *pins, const struct claim *c, size_t n, const struct ent *e)
{
    if (pins == NULL || pins[e->pub.src] == NULL)
        return NULL;
    const char *name = json_string_value(json_object_get(pins[e->pub.src], e->pub.orig));
    if (name == NULL || claim_of(c, n, name) == NULL || claimed_by_other(c, n, name, e))
        return NULL;
    return name;
}

/* An unpinned item whose name another item's pin holds: prefixed, then the
 * short form with longer tags; dropped (false) when every tag is taken. */
static bool step_aside(struct mx_agg_view *v, struct ent *e, bool prefixed,
                       const struct mx_agg_opts *o, const struct claim *c, size_t n)
{
    const char *alias = v->aliases[e->pub.src];
    if (!claimed_by_other(c, n, e->name, e))
        return true;
    if (!prefixed) {
        free(e->base);
        free(e->name);
        e->base = mx_xasprintf("%s_%s", alias, e->pub.orig);
        clean(e->base);
        e->name = strlen(e->base) > o->name_budget
                      ? short_form(e->base, alias, e->pub.orig, o->name_budget, TAG_MIN)
                      : mx_xstrdup(e->base);
    }
    for (size_t digits = TAG_MIN; claimed_by_other(c, n, e->name, e); digits += 2) {
        if (digits > TAG_MAX)
            return false;
        free(e->name);
        e->name = short_form(e->base, alias, e->pub.orig, o->name_budget, digits);
    }
    return true;
}

static void name_entries(struct mx_agg_view *v, const struct mx_agg_opts *o, json_t *const *pins)
{
    size_t ncl = 0;
    struct claim *cl = claims_make(pins, v->src_cnt, o->name_budget, &ncl);

    /* Pass 1: which original names several sources hold (each source lists
     * a name once: mx_agg_build dropped repeats). */
    const char **all = mx_xcalloc(v->cnt ? v->cnt : 1, sizeof(*all));
    size_t n = v->cnt;
    for (size_t i = 0; i < n; i++)
        all[i] = v->v[i].pub.orig;
    qsort(all, n, sizeof(*all), cmp_cstr);

    /* Pass 2: prefix, clean, cut. */
    for (size_t i = 0; i < v->cnt; i++) {
        struct ent *e = &v->v[i];
        const char *alias = v->aliases[e->pub.src];
        const char *pin = pin_of(pins, cl, ncl, e);
        if (pin) {
            e->base = mx_xstrdup(pin);
            e->name = mx_xstrdup(pin);
            e->pinned = true;
            e->pub.key = e->name;
            continue;
        }
        bool prefix = o->prefix == MX_PREFIX_ALWAYS || holders(all, n, e->pub.orig) > 1;
        e->base = prefix ? mx_xasprintf("%s_%s", alias, e->pub.orig) : mx_xstrdup(e->pub.orig);
        clean(e->base);
        if (strlen(e->base) > o->name_budget)
            e->name = short_form(e->base, alias, e->pub.orig, o->name_budget, TAG_MIN);
        else
            e->name = mx_xstrdup(e->base);
        /* a name pinned to another item is never handed on */
        e->pub.key = step_aside(v, e, prefix, o, cl, ncl) ? e->name : NULL;
    }
    free(all);
    free(cl);
    drop_unkeyed(v);

    /* Pass 3: names that still came out equal ("a" + "b_c" and "a_b" + "c"). */
    tell_apart(v, o->name_budget);
}

int mx_agg_build(enum mx_agg_kind kind, const struct mx_agg_source *srcs, size_t cnt,
                 const struct mx_agg_opts *opts, struct mx_agg_view **out)
{
    return mx_agg_build_pinned(kind, srcs, cnt, opts, NULL, out);
}

int mx_agg_build_pinned(enum mx_agg_kind kind, const struct mx_agg_source *srcs, size_t cnt,
                        const struct mx_agg_opts *opts, json_t *const *pins,
                        struct mx_agg_view **out)
{
    *out = NULL;
    if (kind >= MX_AGG_KIND_CNT || opts == NULL || opts->name_budget < 8 ||
        opts->name_budget > MX_AGG_NAME_MAX)
        return MX_EINVAL;
    for (size_t s = 0; s < cnt; s++) {
        if (srcs[s].alias == NULL || srcs[s].alias[0] == '\0')
            return MX_EINVAL;
    }
    struct mx_agg_view *v = mx_xcalloc(1, sizeof(*v));
    const char *field = mx_agg_item_field(kind);
    size_t total = 0;
    v->kind = kind;
    v->src_cnt = cnt;
    v->arrays = mx_xcalloc(cnt ? cnt : 1, sizeof(*v->arrays));
    v->aliases = mx_xcalloc(cnt ? cnt : 1, sizeof(*v->aliases));
    v->visible_cnt = mx_xcalloc(cnt ? cnt : 1, sizeof(*v->visible_cnt));
    for (size_t s = 0; s < cnt; s++) {
        v->aliases[s] = srcs[s].alias;
        if (json_is_array(srcs[s].items)) {
            v->arrays[s] = json_incref(srcs[s].items);
            total += json_array_size(srcs[s].items);
        }
    }
    v->v = mx_xcalloc(total ? total : 1, sizeof(*v->v));
    for (size_t s = 0; s < cnt; s++) {
        size_t i;
        json_t *item;
        json_array_foreach(v->arrays[s], i, item)
        {
            const char *key = json_string_value(json_object_get(item, field));
            if (key == NULL || key[0] == '\0')
                continue;
            if (is_named(kind) && !passes(&srcs[s], key))
                continue;
            struct ent *e = &v->v[v->cnt++];
            e->pub.key = key;
            e->pub.orig = key;
            e->pub.src = s;
            e->pub.rank = (uint32_t)i; /* own order, for ties; set properly below */
            e->pub.visible = srcs[s].visible;
            e->pub.item = item;
        }
    }
    if (is_named(kind)) {
        drop_repeats(v);
        name_entries(v, opts, pins);
    } else
        qsort(v->v, v->cnt, sizeof(*v->v), cmp_ent);
    for (size_t i = 0; i < v->cnt; i++) {
        struct mx_agg_entry *e = &v->v[i].pub;
        if (e->visible)
            e->rank = v->visible_cnt[e->src]++;
    }
    *out = v;
    return 0;
}

void mx_agg_view_free(struct mx_agg_view *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->cnt; i++) {
        free(v->v[i].name);
        free(v->v[i].base);
    }
    for (size_t s = 0; s < v->src_cnt; s++)
        json_decref(v->arrays[s]);
    free(v->v);
    free(v->arrays);
    free(v->aliases);
    free(v->visible_cnt);
    free(v);
}

size_t mx_agg_entry_cnt(const struct mx_agg_view *v)
{
    return v ? v->cnt : 0;
}

const struct mx_agg_entry *mx_agg_entry_at(const struct mx_agg_view *v, size_t i)
{
    return v && i < v->cnt ? &v->v[i].pub : NULL;
}

uint32_t mx_agg_visible_cnt(const struct mx_agg_view *v, size_t src)
{
    return v && src < v->src_cnt ? v->visible_cnt[src] : 0;
}

const struct mx_agg_entry *mx_agg_lookup(const struct mx_agg_view *v, struct mx_str name)
{
    if (v == NULL || !is_named(v->kind))
        return NULL;
    size_t lo = 0, hi = v->cnt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *k = v->v[mid].pub.key;
        size_t kl = strlen(k), m = kl < name.len ? kl : name.len;
        int c = m ? memcmp(k, name.p, m) : 0;
        if (c == 0)
            c = kl < name.len ? -1 : kl > name.len;
        if (c == 0)
            return &v->v[mid].pub;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

json_t *mx_agg_item_json(const struct mx_agg_view *v, const struct mx_agg_entry *e)
{
    json_t *o = json_copy(e->item);
    if (o && is_named(v->kind) && strcmp(e->key, e->orig) != 0)
        json_object_set_new(o, "name", json_string(e->key));
    return o;
}

bool mx_agg_page(const struct mx_agg_view *v, const uint32_t *pos, size_t page_size, json_t *items,
                 uint32_t *next)
{
    size_t taken = 0;
    bool more = false;
    for (size_t s = 0; s < v->src_cnt; s++)
        next[s] = pos[s];
    for (size_t i = 0; i < v->cnt; i++) {
        const struct mx_agg_entry *e = &v->v[i].pub;
        if (!e->visible || e->rank < pos[e->src])
            continue;
        if (taken == page_size) {
            more = true;
            break;
        }
        json_array_append_new(items, mx_agg_item_json(v, e));
        next[e->src] = e->rank + 1;
        taken++;
    }
    return more;
}
