/* SPDX-License-Identifier: MIT */
/*
 * Option matching for the config-side commands (check, vault): "-c FILE",
 * "--config FILE" and "--config=FILE", with no global state so a command can
 * be run more than once in a process (tests do).
 */
#ifndef MX_CLI_H
#define MX_CLI_H

/*
 * If argv[*i] is |short_opt| or |long_opt| (either may be NULL), set |*val|
 * to its value, advance |*i| past a separate value and return 1. Returns 0
 * when argv[*i] is another argument, -1 when the value is missing or empty (a
 * message naming |cmd| is printed on stderr).
 */
int mx_cli_opt(const char *cmd, int argc, char **argv, int *i, const char *short_opt,
               const char *long_opt, const char **val);

/* True for "-h" and "--help". */
int mx_cli_is_help(const char *arg);

#endif
