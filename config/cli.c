/* SPDX-License-Identifier: MIT */
/* Option matching shared by `mcplex check` and `mcplex vault`. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int mx_cli_opt(const char *cmd, int argc, char **argv, int *i, const char *short_opt,
               const char *long_opt, const char **val)
{
    const char *a = argv[*i];
    size_t n = long_opt ? strlen(long_opt) : 0;
    if (long_opt && strncmp(a, long_opt, n) == 0 && a[n] == '=') {
        *val = a + n + 1;
    } else if ((short_opt && strcmp(a, short_opt) == 0) || (long_opt && strcmp(a, long_opt) == 0)) {
        *val = *i + 1 < argc ? argv[++*i] : "";
    } else {
        return 0;
    }
    if (**val == '\0') {
        fprintf(stderr, "mcplex %s: %s needs a value\n", cmd, long_opt ? long_opt : short_opt);
        return -1;
    }
    return 1;
}

int mx_cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}
