/* SPDX-License-Identifier: MIT */
/*
 * Starting a helper command: the command line split on spaces and tabs (no
 * shell, no quoting), and posix_spawn with what every helper gets: stdin
 * from /dev/null, no descriptor of mcplex but 0, 1 and 2, an empty signal
 * mask and default dispositions, its own process group (so a timeout can
 * kill whatever it started). `cmd:` secrets (config/secret_ref.c), wake
 * hooks and credential refreshes (upstream/cmdrun.c) start theirs here.
 * Waiting for the child is the caller's.
 */
#ifndef MX_PROC_H
#define MX_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MX_SPAWN_MAX_ARGS 64

/* A split command line; v[] points into copy. */
struct mx_argv {
    char *copy;
    char *v[MX_SPAWN_MAX_ARGS + 1]; /* NULL-terminated */
    size_t cnt;
};

/*
 * Split |cmd| on spaces and tabs into |a| (cleared with mx_argv_clear,
 * also after a failure). Returns 0, MX_EINVAL (nothing but blanks) or
 * MX_ELIMIT (more than MX_SPAWN_MAX_ARGS words).
 */
int mx_argv_split(const char *cmd, struct mx_argv *a);
void mx_argv_clear(struct mx_argv *a);

/*
 * Start |argv| (argv[0] searched in PATH when it has no '/') with the
 * environment |envp|. Its stdout is |out_fd| (-1: /dev/null), its stderr
 * mcplex's own with |keep_stderr|, else /dev/null. Returns 0 and |*pid|,
 * or a positive errno value from posix_spawnp (ENOENT: no such program).
 */
int mx_spawn(char *const *argv, char *const *envp, int out_fd, bool keep_stderr, pid_t *pid);

/*
 * Mark every open descriptor above 2 close-on-exec: those inherited from
 * whoever started mcplex, and those a library opened without the flag
 * (libcurl's wakeup socketpair). The first line of defence; helpers also
 * close everything above 2 before exec.
 */
void mx_fd_cloexec_all(void);

#endif
