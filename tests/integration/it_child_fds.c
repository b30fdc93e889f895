/* SPDX-License-Identifier: MIT */
/*
 * Children inherit nothing but 0, 1 and 2. mcplex runs with a listening
 * socket, a live keep-alive connection to an HTTP upstream (a sandbox-sim)
 * and the pipes of a running stdio child; then it starts three more
 * children, each it-fdlist writing the descriptors it was given to a file:
 * a stdio upstream, a wake hook (of an upstream whose port is closed) and
 * a cmd: secret resolved by SIGHUP. Each must hold 0, 1 and 2 only, and
 * its 2 must not be a socket. mcplex's own connection to the upstream must
 * be close-on-exec as well (libcurl's default socket() is not).
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "harness.h"

static const char init_body[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
    "\"name\":\"fds\",\"version\":\"1\"}}}";

/* POST initialize to |path|; the answer does not matter, only what the
 * request makes mcplex do. */
static void post_init(int port, const char *path)
{
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL};
    char *url = mx_xasprintf("http://127.0.0.1:%d%s", port, path);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http_full("POST", url, hdrs, init_body, 20000, &status, NULL, &body), 0);
    fprintf(stderr, "fds: POST %s -> %ld\n", path, status);
    free(body);
    free(url);
}

/* Whether |pid|'s descriptor |name| is close-on-exec (its fdinfo flags). */
static bool is_cloexec(pid_t pid, const char *name)
{
    char path[400];
    snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, name);
    char *info = mx_it_read_file(path, NULL);
    const char *flags = info ? strstr(info, "flags:") : NULL;
    bool on = flags && (strtoul(flags + 6, NULL, 8) & 02000000) != 0;
    free(info);
    return on;
}

/* How many of |pid|'s descriptors are sockets; each one is printed. */
static int socket_cnt(pid_t pid)
{
    char dir[64], link[PATH_MAX + 64], target[PATH_MAX];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        ssize_t tl = readlink(link, target, sizeof(target) - 1);
        target[tl > 0 ? tl : 0] = '\0';
        n += strncmp(target, "socket:", 7) == 0;
        fprintf(stderr, "fds: mcplex %s %s%s\n", e->d_name, target,
                is_cloexec(pid, e->d_name) ? " (close-on-exec)" : "");
    }
    closedir(d);
    return n;
}

/* The first line of defence for every descriptor: each of |pid|'s above 2
 * (sockets of its own and libcurl's, the listener, pipes) is close-on-exec. */
static void assert_all_cloexec(pid_t pid)
{
    char dir[64], link[PATH_MAX + 64], target[PATH_MAX];
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    int open_ones = 0;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) <= 2)
            continue;
        if (is_cloexec(pid, e->d_name))
            continue;
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        ssize_t tl = readlink(link, target, sizeof(target) - 1);
        target[tl > 0 ? tl : 0] = '\0';
        fprintf(stderr, "fds: mcplex %s %s is not close-on-exec\n", e->d_name, target);
        open_ones++;
    }
    closedir(d);
    assert_int_equal(open_ones, 0);
}

/* The socket inode of a TCP connection from mcplex to 127.0.0.1:|port|
 * (/proc/net/tcp), or 0. */
static unsigned long conn_inode(int port)
{
    char *tab = mx_it_read_file("/proc/net/tcp", NULL);
    unsigned long inode = 0;
    assert_non_null(tab);
    for (char *line = strchr(tab, '\n'); line && inode == 0; line = strchr(line + 1, '\n')) {
        unsigned lport, rport, st;
        unsigned long ino;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line + 1, "%*d: %*x:%x %*x:%x %x %*x:%*x %*x:%*x %*x %*u %*u %lu", &lport,
                   &rport, &st, &ino) == 4 &&
            rport == (unsigned)port && st == 1 /* ESTABLISHED */)
            inode = ino;
    }
    free(tab);
    return inode;
}

/* The first line of defence: mcplex's own connection to the upstream on
 * |port| is close-on-exec (the closing in the child is the second). */
static void assert_conn_cloexec(pid_t pid, int port)
{
    unsigned long inode = conn_inode(port);
    char dir[64], link[PATH_MAX + 64], target[PATH_MAX], want[64];
    bool found = false;
    assert_true(inode != 0);
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        ssize_t tl = readlink(link, target, sizeof(target) - 1);
        target[tl > 0 ? tl : 0] = '\0';
        if (strcmp(target, want) != 0)
            continue;
        found = true;
        if (!is_cloexec(pid, e->d_name))
            fail_msg("mcplex's connection to the upstream (fd %s) is not close-on-exec", e->d_name);
    }
    closedir(d);
    assert_true(found);
}

/* The list |path| (it-fdlist's output) must hold 0, 1 and 2 only. */
static void assert_only_stdio(const char *what, const char *path)
{
    mx_it_wait_file(path, 20000);
    char *list = mx_it_read_file(path, NULL);
    assert_non_null(list);
    fprintf(stderr, "fds: %s was given:\n%s", what, list);
    bool seen[3] = {false, false, false};
    bool extra = false;
    for (char *line = list; *line;) {
        char *nl = strchr(line, '\n');
        long fd = strtol(line, NULL, 10);
        if (fd >= 0 && fd <= 2)
            seen[fd] = true;
        else
            extra = true;
        if (fd == 2 && strstr(line, "socket:") && (nl == NULL || strstr(line, "socket:") < nl))
            fail_msg("%s: its stderr is a socket", what);
        if (nl == NULL)
            break;
        line = nl + 1;
    }
    if (extra || !seen[0] || !seen[1] || !seen[2])
        fail_msg("%s inherited more than 0, 1 and 2 (or lacks one):\n%s", what, list);
    free(list);
}

static void test_children_inherit_only_stdio(void **state)
{
    (void)state;
    char token[MX_IT_CANARY_SIZE], cmd_out[MX_IT_CANARY_SIZE];
    mx_it_canary(token, sizeof(token));
    mx_it_canary(cmd_out, sizeof(cmd_out));
    int sim_port = 0;
    assert_true(mx_it_start_sim("sim", token, NULL, &sim_port) > 0);
    char *secret = mx_it_secret_file("sim.secret", token);
    char *fdlist = mx_xasprintf("%s/tests/it-fdlist", mx_it_build_dir());
    char *out_stdio = mx_it_path("fds-stdio.txt");
    char *out_wake = mx_it_path("fds-wake.txt");
    char *out_cmd = mx_it_path("fds-cmd.txt");
    int closed_port = mx_it_free_port();
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = false\n"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.web]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "secret = \"file:%s\"\n"
                             "[servers.other]\ncommand = [\"/bin/sleep\", \"120\"]\n"
                             "start = \"eager\"\n"
                             "[servers.probe]\ncommand = [\"%s\", \"%s\"]\n"
                             "[servers.sleepy]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "wake = \"cmd:%s %s\"\nwake_timeout = \"2s\"\n",
                             port, mx_it_dir(), sim_port, secret, fdlist, out_stdio, closed_port,
                             fdlist, out_wake);
    char *cfg_path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(cfg_path, cfg, strlen(cfg)), 0);
    pid_t mcplex = mx_it_start_mcplex(cfg_path, port);
    assert_true(mcplex > 0);

    /* a keep-alive connection to the sim, the listener, the sleeper's pipes */
    post_init(port, "/mcp/web");
    int sockets = socket_cnt(mcplex);
    fprintf(stderr, "fds: mcplex holds %d sockets\n", sockets);
    assert_true(sockets >= 2);
    assert_conn_cloexec(mcplex, sim_port);
    assert_all_cloexec(mcplex);

    post_init(port, "/mcp/probe");
    assert_only_stdio("a stdio upstream", out_stdio);
    post_init(port, "/mcp/sleepy");
    assert_only_stdio("a wake hook", out_wake);

    /* a cmd: secret, resolved by the running mcplex on SIGHUP */
    char *cfg2 = mx_xasprintf("%s[servers.late]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                              "secret = \"cmd:%s %s %s\"\n",
                              cfg, sim_port, fdlist, out_cmd, cmd_out);
    assert_int_equal(mx_it_write_file(cfg_path, cfg2, strlen(cfg2)), 0);
    assert_true(socket_cnt(mcplex) >= 2);
    assert_int_equal(mx_it_signal(mcplex, SIGHUP), 0);
    assert_only_stdio("a cmd: secret", out_cmd);

    assert_int_equal(mx_it_signal(mcplex, SIGTERM), 0);
    assert_true(mx_it_wait_exit(mcplex, 10000) >= 0);
    free(cfg2);
    free(cfg_path);
    free(cfg);
    free(out_cmd);
    free(out_wake);
    free(out_stdio);
    free(fdlist);
    free(secret);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_children_inherit_only_stdio, mx_it_setup,
                                        mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
