/* SPDX-License-Identifier: MIT */
/*
 * Names that never move. The tool and prompt names a client of /mcp was
 * shown are pinned per server (by its name and alias) and kept in
 * <state_dir>/names.json, so that with the config unchanged a name keeps its
 * meaning across upstream outages, refused credentials, wakes and restarts:
 * the merge (mx_agg_build_pinned) gives a pinned name to no other item. A
 * change of [proxy] prefix or name_budget, or of a server's alias, lets go of
 * the pins it makes meaningless. No secrets: only names every client saw.
 */
#ifndef MX_NAMES_H
#define MX_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "aggregate.h"
#include "model.h"

struct mx_names;

/* Load <state_dir>/names.json (|state_dir| NULL: pins live in memory only).
 * A missing, unreadable or oversized file is a fresh start (the log says
 * why for the last two). */
struct mx_names *mx_names_open(const char *state_dir);
void mx_names_free(struct mx_names *n);

/* The settings the pins were made under; other settings drop every pin. */
void mx_names_settings(struct mx_names *n, enum mx_prefix_mode prefix, size_t name_budget);

/* The pins of |server| (whose alias is |alias|) for |kind| (tools or
 * prompts), to pass to mx_agg_build_pinned(); NULL when there are none. */
json_t *mx_names_pins(struct mx_names *n, const char *server, const char *alias,
                      enum mx_agg_kind kind);

/*
 * Pin every visible name of view |v| of |kind|, whose sources are the
 * servers |servers| with aliases |aliases| (|cnt| of each; a NULL server is
 * skipped). Saved when something new was pinned; returns whether it was.
 * A server's pins are bounded: past twice its items (plus a margin) the
 * pins of names it no longer lists are let go.
 */
bool mx_names_note(struct mx_names *n, enum mx_agg_kind kind, const struct mx_agg_view *v,
                   const char *const *servers, const char *const *aliases, size_t cnt);

#endif
