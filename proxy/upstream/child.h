/* SPDX-License-Identifier: MIT */
/*
 * One process of a stdio upstream on the loop: started with posix_spawnp
 * (argv as written, no shell) in its own process group, with the
 * environment it is given and nothing else; stdin, stdout and stderr are
 * non-blocking pipes watched by libev. stdout is cut into lines (linebuf.h)
 * handed to the owner, with a pause for backpressure; stderr goes to
 * mcplex's log line by line as "[name] ...", rate-limited (the log masks
 * secrets and escapes control bytes), never to the owner; stdin gets whole lines from a queue with
 * a cap. The exit is seen with ev_child (libev's default loop reaps it). Closing ends stdin, then
 * sends SIGTERM to the process group and SIGKILL after a grace period.
 *
 * It knows nothing of JSON-RPC or MCP.
 */
#ifndef MX_CHILD_H
#define MX_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <ev.h>

#include "secret.h"
#include "str.h"

struct mx_child;

struct mx_child_opts {
    const char *name;  /* upstream name: the "[name]" of its stderr lines; copied */
    char *const *argv; /* argv[0] is searched in mcplex's PATH when it has no '/' */
    const char *cwd;   /* NULL: mcplex's */
    char *const *envp; /* the whole environment (childenv.h) */
    size_t max_line;   /* longest stdout line kept; longer ones are dropped */
    size_t in_cap;     /* bytes queued for stdin at most */
};

struct mx_child_cbs {
    /*
     * One stdout line, without its LF (and a CR before it); borrowed for the
     * call. Return 0, or MX_EAGAIN to read no more lines until
     * mx_child_resume(). May close the child.
     */
    int (*on_line)(struct mx_child *c, struct mx_str line, void *data);
    /* Optional: the stdin queue emptied after mx_child_write() left bytes
     * queued. */
    void (*on_drain)(struct mx_child *c, void *data);
    /*
     * Once: the process exited (|status| as from waitpid) and its stdout was
     * read to the end (or a second passed). No callback follows; the owner
     * closes the child, here or later (which also ends what is left of its
     * process group).
     */
    void (*on_exit)(struct mx_child *c, int status, void *data);
};

/*
 * Start the process described by |o| on |loop| (libev's default loop).
 * Returns 0 and |*out|, or MX_ENOTFOUND (no such program), MX_EPERM (not
 * allowed to run it), MX_EIO (pipes or spawn failed) with |why| saying why
 * (names the program, never an environment value); no callback then runs.
 * Callbacks never run from inside this call.
 */
int mx_child_start(struct ev_loop *loop, const struct mx_child_opts *o,
                   const struct mx_child_cbs *cbs, void *data, struct mx_child **out, char *why,
                   size_t why_cap);

/*
 * Queue |len| bytes of |p| and a LF for stdin (|p| must hold no LF), writing
 * what the pipe takes at once. Returns 0, MX_ELIMIT (the queue would pass
 * its cap; nothing was queued) or MX_ECLOSED (stdin is closed: the process
 * stopped reading or exited). Never calls back from inside.
 */
int mx_child_write(struct mx_child *c, const char *p, size_t len);
/* Bytes queued for stdin, not yet taken by the pipe. */
size_t mx_child_queued(const struct mx_child *c);

/* Stop handing out stdout lines, and resume (lines held are handed out
 * from the loop, never inside this call). */
void mx_child_pause(struct mx_child *c);
void mx_child_resume(struct mx_child *c);

pid_t mx_child_pid(const struct mx_child *c);

/*
 * No more callbacks. Ends the process: stdin closed at once (MCP
 * 2025-06-18, stdio shutdown), SIGTERM to its process group after a short
 * wait, SIGKILL after a grace period; the memory goes once the process is
 * reaped. Safe inside the child's callbacks. Accepts NULL.
 */
void mx_child_close(struct mx_child *c);

/*
 * At shutdown, after every child was closed: run |loop| until the closed
 * children are gone or |limit_s| passed, then SIGKILL the process groups
 * left. Call with nothing else expected of the loop.
 */
void mx_child_shutdown(struct ev_loop *loop, double limit_s);

/* Child objects not yet freed (open, or closed and still ending). */
size_t mx_child_live_cnt(void);

#endif
