/* SPDX-License-Identifier: MIT */
/* Helper commands: argv splitting and posix_spawn with the house rules. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "err.h"
#include "proc.h"

int mx_argv_split(const char *cmd, struct mx_argv *a)
{
    memset(a, 0, sizeof(*a));
    a->copy = mx_xstrdup(cmd);
    for (char *s = a->copy; *s;) {
        while (*s == ' ' || *s == '\t')
            *s++ = '\0';
        if (*s == '\0')
            break;
        if (a->cnt == MX_SPAWN_MAX_ARGS)
            return MX_ELIMIT;
        a->v[a->cnt++] = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
    }
    a->v[a->cnt] = NULL;
    return a->cnt ? 0 : MX_EINVAL;
}

void mx_argv_clear(struct mx_argv *a)
{
    free(a->copy);
    memset(a, 0, sizeof(*a));
}

int mx_spawn(char *const *argv, char *const *envp, int out_fd, bool keep_stderr, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, deflt;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* in `mcplex stdio` stdout carries JSON-RPC only: never the helper's */
    if (out_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    else
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    if (!keep_stderr)
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* nothing of mcplex's: sockets, the vault, pipes of other children */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    /* the loop's signals are blocked or caught here; the child starts clean */
    sigemptyset(&none);
    sigemptyset(&deflt);
    sigaddset(&deflt, SIGPIPE);
    sigaddset(&deflt, SIGCHLD);
    sigaddset(&deflt, SIGHUP);
    sigaddset(&deflt, SIGINT);
    sigaddset(&deflt, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &deflt);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    int rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

void mx_fd_cloexec_all(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    if (d == NULL)
        return;
    int self = dirfd(d);
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || fd <= 2 || fd == self || fd > INT_MAX)
            continue;
        int fl = fcntl((int)fd, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC))
            fcntl((int)fd, F_SETFD, fl | FD_CLOEXEC);
    }
    closedir(d);
}
