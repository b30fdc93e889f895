/* SPDX-License-Identifier: MIT */
/*
 * "Did you mean ...?": the known name nearest a mistyped one, for error
 * messages about config keys, tables and server names. Pure and bounded:
 * names longer than MX_SUGGEST_MAX_LEN are never matched.
 */
#ifndef MX_SUGGEST_H
#define MX_SUGGEST_H

#include <stddef.h>

#include "str.h"

#define MX_SUGGEST_MAX_LEN 64

/*
 * The edit distance between |a| and |b|: insertions, deletions,
 * substitutions and swaps of two neighbours each count one (the optimal
 * string alignment distance), ASCII case ignored. Either longer than
 * MX_SUGGEST_MAX_LEN: SIZE_MAX.
 */
size_t mx_edit_distance(struct mx_str a, struct mx_str b);

/*
 * The index in |cands| (|cnt| names; NULL entries are skipped) of the name
 * nearest |typed| when it is close enough to be a slip of the keyboard: at
 * most 2 edits and at most one per three characters of |typed|, so short
 * words never match unrelated ones. The first of equally near names wins.
 * Returns -1 when none is close enough, or when |typed| is one of them.
 */
int mx_suggest(struct mx_str typed, const char *const *cands, size_t cnt);

#endif
