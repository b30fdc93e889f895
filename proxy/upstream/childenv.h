/* SPDX-License-Identifier: MIT */
/*
 * The environment of a stdio upstream's process, built only from its `env`
 * allowlist: "NAME" forwards mcplex's own NAME when it is set, "NAME=<secret
 * ref>" sets NAME from the resolved secret, and nothing else is passed (not
 * PATH, not HOME, unless named), so one upstream's secret never reaches
 * another's process. Pure: the parent environment comes in as an argument.
 */
#ifndef MX_CHILDENV_H
#define MX_CHILDENV_H

#include <stddef.h>

#include "model.h"
#include "secret.h"

struct mx_childenv {
    char **envp; /* "NAME=value" entries and a NULL, for posix_spawn */
    size_t cnt;
};

/*
 * Build |out| from the allowlist |allow| (entries "NAME" or "NAME=<ref>"),
 * |secrets| (allow->cnt slots: the resolved secret of each "NAME=<ref>"
 * entry, NULL for the others) and |parent| (a NULL-terminated list of
 * "NAME=value", such as environ; may be NULL). A forwarded name that
 * |parent| lacks is left out. Returns 0 (clear |out| with
 * mx_childenv_clear), or MX_EINVAL when an entry is not a valid name
 * ([A-Za-z_][A-Za-z0-9_]*), a name is listed twice, or a "NAME=<ref>"
 * entry has no resolved secret; |why| (may be NULL) then says which entry,
 * never a value, and |out| holds nothing.
 */
int mx_childenv_build(const struct mx_strv *allow, struct mx_secret *const *secrets,
                      char *const *parent, struct mx_childenv *out, char *why, size_t why_cap);

/* Wipe every entry (values may be secrets) and free; accepts an empty one. */
void mx_childenv_clear(struct mx_childenv *e);

/* The value of |name| in |e|, or NULL; for tests. */
const char *mx_childenv_get(const struct mx_childenv *e, const char *name);

#endif
