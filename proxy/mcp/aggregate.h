/* SPDX-License-Identifier: MIT */
/*
 * Merging the lists of N upstreams into the one list a client of /mcp sees:
 * per-server filters (glob allow and deny lists), the name rule for tools and
 * prompts (plain, or "<alias>_<name>" on a collision or always), the name
 * budget with a deterministic short form, a deterministic order, pages over
 * the merged list by per-upstream positions, and the reverse map from an
 * exposed name to (upstream, original name). Pure: JSON in, a view out; no
 * I/O, no clock. The result depends only on the sources, the options and
 * the names pinned before (mx_agg_build_pinned), never on the order in which
 * upstreams answered.
 */
#ifndef MX_AGGREGATE_H
#define MX_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "model.h"
#include "str.h"

enum mx_agg_kind {
    MX_AGG_TOOLS = 0,
    MX_AGG_PROMPTS = 1,
    MX_AGG_RESOURCES = 2,
    MX_AGG_TEMPLATES = 3,
};

#define MX_AGG_KIND_CNT 4

/* Longest name a tool or prompt may have on the wire (MCP 2025-11-25, Tools). */
#define MX_AGG_NAME_MAX 128

/* What one upstream contributes. */
struct mx_agg_source {
    const char *alias;           /* prefix of its names; [A-Za-z0-9_-]+ */
    json_t *items;               /* borrowed array of items; NULL: nothing known */
    bool visible;                /* listed; false: kept for naming and routing only */
    const struct mx_strv *allow; /* glob patterns (fnmatch); NULL or empty: all */
    const struct mx_strv *deny;  /* glob patterns; NULL or empty: none */
};

struct mx_agg_opts {
    enum mx_prefix_mode prefix;
    size_t name_budget; /* longest exposed name, 8..MX_AGG_NAME_MAX */
};

/* One merged item. */
struct mx_agg_entry {
    const char *key;  /* sort key: the exposed name, the uri or the uriTemplate */
    const char *orig; /* the upstream's own name (tools, prompts) or the key */
    size_t src;       /* index into the sources */
    uint32_t rank;    /* position among the visible items of |src|, in merged order */
    bool visible;     /* from a visible source */
    json_t *item;     /* the upstream's item (borrowed from the view) */
};

struct mx_agg_view;

/*
 * Merge |cnt| sources into a view of |kind|. Items without a string "name"
 * (tools, prompts), "uri" (resources) or "uriTemplate" (templates) are left
 * out, and so are items the filters refuse (tools and prompts only; for
 * prompts the allow and deny lists given are the prompt ones). Holds a
 * reference on each source's items array. Returns 0 and |*out| (free with
 * mx_agg_view_free), or MX_EINVAL (|opts| out of range, an alias missing).
 *
 * The name rule (tools, prompts): with MX_PREFIX_CONDITIONAL a name that one
 * source alone holds (after filtering, visible or not) stays as it is, and a
 * name several sources hold becomes "<alias>_<name>" in each of them; with
 * MX_PREFIX_ALWAYS every name becomes "<alias>_<name>". Characters outside
 * [A-Za-z0-9_.-] become '_'. A name longer than the budget, and any names
 * that would still come out equal, take the short form: the name cut to
 * budget-7 characters, then '_' and six hex digits of SHA-256(alias, NUL,
 * original name) (more digits if needed to tell them apart).
 */
int mx_agg_build(enum mx_agg_kind kind, const struct mx_agg_source *srcs, size_t cnt,
                 const struct mx_agg_opts *opts, struct mx_agg_view **out);

/*
 * mx_agg_build() with names that must not move (tools, prompts): |pins| has
 * one slot per source, each NULL or an object mapping an original name of
 * that source to the name it was exposed as before. A pinned item keeps its
 * pinned name while it is listed; a pinned name is never given to another
 * item, listed or not (an unpinned item that would take it is prefixed, or
 * takes the short form). Pins that are not strings, not within the budget,
 * not made of [A-Za-z0-9_.-], or that claim a name an earlier source (or an
 * earlier original name of the same source) claims are ignored. With
 * |pins| NULL this is mx_agg_build().
 */
int mx_agg_build_pinned(enum mx_agg_kind kind, const struct mx_agg_source *srcs, size_t cnt,
                        const struct mx_agg_opts *opts, json_t *const *pins,
                        struct mx_agg_view **out);
void mx_agg_view_free(struct mx_agg_view *v);

/* Sorted by (key, src); includes the entries of sources that are not visible. */
size_t mx_agg_entry_cnt(const struct mx_agg_view *v);
const struct mx_agg_entry *mx_agg_entry_at(const struct mx_agg_view *v, size_t i);
/* Visible entries of source |src|. */
uint32_t mx_agg_visible_cnt(const struct mx_agg_view *v, size_t src);

/*
 * The entry exposed as |name| (tools, prompts) or NULL. Entries of sources
 * that are not visible are found too, so that a call can still reach an
 * upstream whose list is hidden while it is down.
 */
const struct mx_agg_entry *mx_agg_lookup(const struct mx_agg_view *v, struct mx_str name);

/* The item as a client sees it: a new shallow copy with the exposed name. */
json_t *mx_agg_item_json(const struct mx_agg_view *v, const struct mx_agg_entry *e);

/*
 * One page of the visible entries in merged order, skipping for every source
 * s the first |pos|[s] of its visible entries (|pos| has one slot per
 * source). Appends at most |page_size| items to |items| (a JSON array),
 * writes the positions after the page to |next| (one slot per source) and
 * returns true when entries remain after the page.
 */
bool mx_agg_page(const struct mx_agg_view *v, const uint32_t *pos, size_t page_size, json_t *items,
                 uint32_t *next);

/* The key of the items of |kind| in a list result: "tools", "prompts", ... */
const char *mx_agg_list_key(enum mx_agg_kind kind);
/* The item field holding the key: "name", "uri" or "uriTemplate". */
const char *mx_agg_item_field(enum mx_agg_kind kind);

#endif
