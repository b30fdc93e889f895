/* SPDX-License-Identifier: MIT */
/*
 * The command line of the config-side commands (check, vault, certs): value
 * options as "-c FILE", "--config FILE" and "--config=FILE", flags, -h and
 * --help, and positional arguments, with no global state so a command can
 * be run more than once in a process (tests do).
 */
#ifndef MX_CLI_H
#define MX_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* One option: a value option (|val|) or a flag (|flag|). */
struct mx_cli_opt {
    const char *short_opt; /* "-c", or NULL */
    const char *long_opt;  /* "--config"; a value option also takes "--config=FILE" */
    const char **val;      /* where the value goes; NULL for a flag */
    bool *flag;            /* a flag: set true when given */
};

/* A command's command line, for mx_cli_parse. */
struct mx_cli {
    const char *cmd;               /* "check": messages begin "mcplex check: " */
    void (*usage)(FILE *f);        /* prints the command's help text on |f| */
    const struct mx_cli_opt *opts; /* ended by a row with neither name */
    const char **pos;              /* receives the positional arguments */
    int pos_max;                   /* how many |pos| holds; 0: none are taken */
    int pos_cnt;                   /* how many came (set by mx_cli_parse) */
};

/* mx_cli_parse's answer when the command goes on. */
#define MX_CLI_RUN (-1)

/*
 * Parse argv[1..] against |c|: its options, -h and --help, and at most
 * |c->pos_max| other arguments, none starting with '-'. Returns MX_CLI_RUN,
 * or the exit status the command returns at once: 0 after printing the
 * usage on stdout for help; 2 after a message on stderr for an option whose
 * value is missing or empty, or for an unexpected argument (then the usage
 * on stderr too).
 */
int mx_cli_parse(struct mx_cli *c, int argc, char **argv);

/*
 * A secret value from stdin, never from argv (which other users can see in
 * ps): everything up to EOF from a pipe or file, one line from a terminal,
 * asked for as "value for |name| (not echoed): " with the echo off. One
 * trailing newline (CRLF too) is dropped. Returns the value with a NUL
 * after its *|len| bytes (free with mx_cli_secret_free), or NULL after
 * saying on stderr, as "mcplex |cmd|: ...", that it was empty or too large.
 */
char *mx_cli_read_secret(const char *cmd, const char *name, size_t *len);

/* Wipe and free what mx_cli_read_secret returned; accepts NULL. */
void mx_cli_secret_free(char *value);

#endif
