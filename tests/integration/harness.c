/* SPDX-License-Identifier: MIT */
/*
 * The integration harness: a per-test directory, a table of the processes the
 * test started (each leads its own process group, so a process and whatever it
 * forks are stopped together), bounded waits, libcurl for HTTP and jansson for
 * the node client's JSON. Nothing here signals a pid that is not in the table.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "err.h"
#include "log.h"
#include "num.h"
#include "rand.h"
#include "harness.h"

#define LOG_TAIL_BYTES  (64 * 1024)
#define HTTP_BODY_CAP   (64u * 1024 * 1024)
#define READ_FILE_CAP   (64u * 1024 * 1024)
#define SCAN_CHUNK      (1024 * 1024)
#define SCAN_MAX_DEPTH  16
#define POLL_MS         20
#define REAP_TIMEOUT_MS 5000
#define SIGN_TIMEOUT_MS 30000 /* one openssl run in mx_it_sign_leaf() */

struct proc {
    char *name;
    char *out_path; /* stdout (and stderr when err_path is NULL) */
    char *err_path;
    /* Read by the signal handler: a pid is signalled only while unreaped. */
    volatile pid_t pid;
    volatile sig_atomic_t reaped;
    int status;
};

static struct proc procs[MX_IT_MAX_PROCS];
static int nprocs;
static char *test_dir;
static bool test_passed;
static bool inited;
static unsigned seq;
static char *ca_file;   /* trusted for https:// in mx_it_http_full() */
static char *spawn_cwd; /* working directory of the processes started; NULL: ours */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "mx_it: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- signals, watchdog, exit ---------------------------------------- */

/* Async-signal-safe: only kill(), write() and _exit(). */
static void on_fatal_signal(int sig)
{
    static const char msg[] = "mx_it: watchdog or signal: killing started processes\n";
    for (int i = 0; i < MX_IT_MAX_PROCS; i++) {
        if (procs[i].pid > 0 && !procs[i].reaped)
            kill(-procs[i].pid, SIGKILL);
    }
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* Nothing left to report to. */
    }
    _exit(128 + sig);
}

static void at_exit(void)
{
    mx_it_kill_all();
    curl_global_cleanup();
}

static void init_once(void)
{
    struct sigaction sa;
    static const int sigs[] = {SIGALRM, SIGTERM, SIGINT, SIGHUP};

    if (inited)
        return;
    inited = true;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        fail_msg("curl_global_init failed");
    atexit(at_exit);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    /* Fires before ctest's own timeout, so children never outlive the test. */
    alarm(MX_IT_WATCHDOG_S);
}

/* ---- paths ------------------------------------------------------------ */

const char *mx_it_build_dir(void)
{
    const char *d = getenv("MX_BUILD_DIR");
    if (d == NULL || *d == '\0')
        fail_msg("MX_BUILD_DIR is not set: run integration tests through ctest");
    return d;
}

const char *mx_it_source_dir(void)
{
    const char *d = getenv("MX_SOURCE_DIR");
    if (d == NULL || *d == '\0')
        fail_msg("MX_SOURCE_DIR is not set: run integration tests through ctest");
    return d;
}

const char *mx_it_dir(void)
{
    if (test_dir == NULL)
        fail_msg("no test directory: use mx_it_setup as the cmocka setup");
    return test_dir;
}

char *mx_it_path(const char *name)
{
    return mx_xasprintf("%s/%s", mx_it_dir(), name);
}

static int mkdir_ok(const char *path)
{
    if (mkdir(path, 0700) == 0 || errno == EEXIST)
        return 0;
    say("mkdir %s: %s", path, strerror(errno));
    return MX_EIO;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) != 0)
        say("remove %s: %s", path, strerror(errno));
    return 0;
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- files ------------------------------------------------------------ */

int mx_it_write_file(const char *path, const char *data, size_t len)
{
    char *tmp = mx_xasprintf("%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t off = 0;
    if (fd < 0)
        goto fail;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        off += (size_t)n;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    /* Renamed into place so a process reading it (SIGHUP reload) never sees
     * half a file. */
    if (rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return 0;
fail:
    say("write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return MX_EIO;
}

char *mx_it_read_file(const char *path, size_t *len)
{
    struct mx_buf b;
    char chunk[65536];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *out;
    if (fd < 0)
        return NULL;
    mx_buf_init(&b, READ_FILE_CAP);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && mx_buf_append(&b, chunk, (size_t)n) != 0)) {
            close(fd);
            mx_buf_clear(&b);
            return NULL;
        }
        if (n == 0)
            break;
    }
    close(fd);
    out = mx_xstrndup(mx_buf_data(&b), mx_buf_len(&b));
    if (len)
        *len = mx_buf_len(&b);
    mx_buf_clear(&b);
    return out;
}

/* ---- canary and scanning --------------------------------------------- */

void mx_it_canary(char *buf, size_t cap)
{
    static const char prefix[] = "canary-";
    MX_ASSERT(cap >= MX_IT_CANARY_SIZE);
    memcpy(buf, prefix, sizeof(prefix) - 1);
    mx_rand_hex(buf + sizeof(prefix) - 1, 33);
}

void mx_it_wait_file(const char *path, int timeout_ms)
{
    for (int waited = 0; access(path, F_OK) != 0; waited += POLL_MS) {
        if (waited > timeout_ms)
            fail_msg("%s did not appear within %d ms", path, timeout_ms);
        sleep_ms(POLL_MS);
    }
}

bool mx_it_json_has(const json_t *strings, const char *s)
{
    for (size_t i = 0; i < json_array_size(strings); i++) {
        const char *v = json_string_value(json_array_get(strings, i));
        if (v && strcmp(v, s) == 0)
            return true;
    }
    return false;
}

void mx_it_assert_sorted_unique(const json_t *names)
{
    for (size_t i = 1; i < json_array_size(names); i++) {
        const char *a = json_string_value(json_array_get(names, i - 1));
        const char *b = json_string_value(json_array_get(names, i));
        if (a == NULL || b == NULL || strcmp(a, b) >= 0)
            fail_msg("names %zu and %zu are not in order: %s, %s", i - 1, i, a ? a : "(none)",
                     b ? b : "(none)");
    }
}

void mx_it_strv_free(char **v)
{
    if (v == NULL)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

struct hits {
    char **v;
    size_t cnt;
};

static void hits_add(struct hits *h, const char *path)
{
    h->v = mx_xrealloc(h->v, (h->cnt + 2) * sizeof(char *));
    h->v[h->cnt++] = mx_xstrdup(path);
    h->v[h->cnt] = NULL;
}

/* Chunked, keeping the last needle-1 bytes, so a file of any size and a match
 * across chunk borders are both found. Returns 1 (found), 0 or MX_EIO. */
static int file_contains(const char *path, const char *needle, size_t nlen)
{
    char *buf = mx_xmalloc(SCAN_CHUNK + nlen);
    size_t have = 0;
    int found = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        free(buf);
        return MX_EIO;
    }
    for (;;) {
        ssize_t n = read(fd, buf + have, SCAN_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            found = MX_EIO;
            break;
        }
        if (n == 0)
            break;
        have += (size_t)n;
        if (memmem(buf, have, needle, nlen) != NULL) {
            found = 1;
            break;
        }
        if (have >= nlen) {
            memmove(buf, buf + have - (nlen - 1), nlen - 1);
            have = nlen - 1;
        }
    }
    close(fd);
    free(buf);
    return found;
}

static int scan_path(const char *path, const char *needle, size_t nlen, struct hits *h, int depth)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    int rc = 0;

    if (lstat(path, &st) != 0) {
        say("scan %s: %s", path, strerror(errno));
        return MX_EIO;
    }
    if (S_ISREG(st.st_mode)) {
        int r = file_contains(path, needle, nlen);
        if (r < 0)
            say("scan %s: cannot read", path);
        else if (r > 0)
            hits_add(h, path);
        return r < 0 ? r : 0;
    }
    if (!S_ISDIR(st.st_mode))
        return 0;
    if (depth >= SCAN_MAX_DEPTH)
        return MX_ELIMIT;
    d = opendir(path);
    if (d == NULL)
        return MX_EIO;
    while ((e = readdir(d)) != NULL) {
        char *sub;
        int r;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        sub = mx_xasprintf("%s/%s", path, e->d_name);
        r = scan_path(sub, needle, nlen, h, depth + 1);
        free(sub);
        if (r < 0)
            rc = r;
    }
    closedir(d);
    return rc;
}

int mx_it_scan_for(const char *const *paths, const char *needle, char ***hits)
{
    struct hits h = {NULL, 0};
    size_t nlen = strlen(needle);
    int rc = 0;

    MX_ASSERT(nlen > 0);
    for (const char *const *p = paths; *p; p++) {
        int r = scan_path(*p, needle, nlen, &h, 0);
        if (r < 0)
            rc = r;
    }
    if (rc < 0) {
        mx_it_strv_free(h.v);
        return rc;
    }
    if (hits) {
        if (h.v == NULL)
            h.v = mx_xcalloc(1, sizeof(char *));
        *hits = h.v;
    } else {
        mx_it_strv_free(h.v);
    }
    return (int)h.cnt;
}

/* ---- processes -------------------------------------------------------- */

static struct proc *find_proc(pid_t pid)
{
    for (int i = 0; i < nprocs; i++) {
        if (procs[i].pid == pid)
            return &procs[i];
    }
    return NULL;
}

static bool name_has(const char *entry, const char *var, size_t var_len)
{
    return strncmp(entry, var, var_len) == 0 && (entry[var_len] == '=' || entry[var_len] == '\0');
}

/* environ with |env| applied: "NAME=value" replaces or adds, "NAME" removes.
 * The strings stay borrowed; only the array is allocated. */
static char **build_env(const char *const *env)
{
    size_t n = 0, m = 0, k = 0;
    char **out;

    for (char **e = environ; *e; e++)
        n++;
    for (const char *const *e = env; e && *e; e++)
        m++;
    out = mx_xcalloc(n + m + 1, sizeof(char *));
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        bool overridden = false;
        for (const char *const *o = env; o && *o && !overridden; o++) {
            const char *oeq = strchr(*o, '=');
            size_t olen = oeq ? (size_t)(oeq - *o) : strlen(*o);
            overridden = olen == len && name_has(*e, *o, olen);
        }
        if (!overridden)
            out[k++] = *e;
    }
    for (const char *const *o = env; o && *o; o++) {
        if (strchr(*o, '=') != NULL)
            out[k++] = (char *)(uintptr_t)*o;
    }
    out[k] = NULL;
    return out;
}

static char *unique_log_path(const char *name, const char *ext)
{
    char *path = mx_xasprintf("%s/%s.%s", mx_it_dir(), name, ext);
    for (int i = 2; access(path, F_OK) == 0 && i < 1000; i++) {
        free(path);
        path = mx_xasprintf("%s/%s-%d.%s", mx_it_dir(), name, i, ext);
    }
    return path;
}

/* |pipe_fds| NULL: stdin from /dev/null, stdout to |out_path|; else stdin
 * from pipe_fds[0] and stdout to pipe_fds[1] (|out_path| is then only the
 * log printed on failure, and should be |err_path|). */
static pid_t spawn_proc(const char *name, const char *const *argv, const char *const *env,
                        const char *out_path, const char *err_path, const int *pipe_fds)
{
    static const int reset[] = {SIGPIPE, SIGTERM, SIGINT,  SIGHUP, SIGALRM,
                                SIGCHLD, SIGUSR1, SIGUSR2, SIGQUIT};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, def;
    char **envp;
    pid_t pid = -1;
    int rc;
    struct proc *p;

    if (nprocs >= MX_IT_MAX_PROCS) {
        say("spawn %s: more than %d processes in one test", name, MX_IT_MAX_PROCS);
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    if (pipe_fds) {
        posix_spawn_file_actions_adddup2(&fa, pipe_fds[0], STDIN_FILENO);
        posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], STDOUT_FILENO);
    } else {
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path,
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
    }
    if (err_path)
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_path,
                                         O_WRONLY | O_CREAT | O_APPEND, 0600);
    else
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    /* last, so that the log paths above are opened from our directory */
    if (spawn_cwd)
        posix_spawn_file_actions_addchdir_np(&fa, spawn_cwd);

    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigemptyset(&def);
    for (size_t i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
        sigaddset(&def, reset[i]);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &def);
    /* Its own group: stopping it also stops what it forked (wake hooks). */
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);

    envp = build_env(env);
    rc = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)(uintptr_t)argv, envp);
    free(envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        say("spawn %s (%s): %s", name, argv[0], strerror(rc));
        return -1;
    }

    p = &procs[nprocs];
    p->name = mx_xstrdup(name);
    p->out_path = mx_xstrdup(out_path);
    p->err_path = err_path ? mx_xstrdup(err_path) : NULL;
    p->status = 0;
    p->reaped = 0;
    p->pid = pid;
    nprocs++;
    fprintf(stderr, "mx_it: started %s pid %ld, log %s\n", name, (long)pid, out_path);
    return pid;
}

pid_t mx_it_spawn(const char *name, const char *const *argv, const char *const *env,
                  const char *log_path)
{
    char *path = log_path ? mx_xstrdup(log_path) : unique_log_path(name, "log");
    pid_t pid = spawn_proc(name, argv, env, path, NULL, NULL);
    free(path);
    return pid;
}

pid_t mx_it_spawn_piped(const char *name, const char *const *argv, const char *const *env,
                        const char *err_path, int *in, int *out)
{
    int a[2], b[2];
    pid_t pid = -1;
    *in = *out = -1;
    if (pipe2(a, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(b, O_CLOEXEC) == 0) {
        const int child[2] = {a[0], b[1]};
        pid = spawn_proc(name, argv, env, err_path, err_path, child);
        close(b[1]);
        if (pid > 0)
            *out = b[0];
        else
            close(b[0]);
    }
    close(a[0]);
    if (pid > 0)
        *in = a[1];
    else
        close(a[1]);
    return pid;
}

json_t *mx_it_lines_next(struct mx_it_lines *l, int wait_ms)
{
    for (int waited = 0;;) {
        char *nl = memchr(l->buf, '\n', l->len);
        if (nl) {
            json_t *m = json_loadb(l->buf, (size_t)(nl - l->buf), JSON_REJECT_DUPLICATES, NULL);
            if (!json_is_object(m))
                fail_msg("not a JSON object: %.120s", l->buf);
            l->len -= (size_t)(nl + 1 - l->buf);
            memmove(l->buf, nl + 1, l->len);
            return m;
        }
        struct pollfd p = {l->fd, POLLIN, 0};
        if (waited >= wait_ms)
            fail_msg("no whole line within %d ms", wait_ms);
        if (poll(&p, 1, POLL_MS) <= 0) {
            waited += POLL_MS;
            continue;
        }
        assert_true(l->len < sizeof(l->buf));
        ssize_t n = read(l->fd, l->buf + l->len, sizeof(l->buf) - l->len);
        assert_true(n >= 0);
        if (n == 0) {
            assert_int_equal(l->len, 0); /* nothing but whole lines */
            return NULL;
        }
        l->len += (size_t)n;
    }
}

int mx_it_signal(pid_t pid, int sig)
{
    struct proc *p = find_proc(pid);
    if (p == NULL || p->reaped)
        return MX_ENOTFOUND;
    return kill(pid, sig) == 0 ? 0 : MX_EIO;
}

static bool exited(struct proc *p)
{
    siginfo_t si;
    if (p->reaped)
        return true;
    memset(&si, 0, sizeof(si));
    /* WNOWAIT leaves the zombie, so the pid and its group id stay ours and
     * cannot be reused by an unrelated process while we still signal them. */
    if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return si.si_pid == p->pid;
}

bool mx_it_has_exited(pid_t pid)
{
    struct proc *p = find_proc(pid);
    return p == NULL || exited(p);
}

/* The leader has exited: kill the rest of its group, then reap it. */
static void reap(struct proc *p)
{
    int st = 0;
    int64_t deadline = now_ms() + REAP_TIMEOUT_MS;
    if (p->reaped)
        return;
    kill(-p->pid, SIGKILL);
    p->reaped = 1;
    for (;;) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) {
            p->status = st;
            return;
        }
        if (r < 0 && errno != EINTR) {
            p->status = -1;
            return;
        }
        if (now_ms() > deadline) {
            say("%s pid %ld: not reaped after %d ms", p->name, (long)p->pid, REAP_TIMEOUT_MS);
            p->status = -1;
            return;
        }
        sleep_ms(POLL_MS / 4 + 1);
    }
}

int mx_it_wait_exit(pid_t pid, int timeout_ms)
{
    struct proc *p = find_proc(pid);
    int64_t deadline = now_ms() + timeout_ms;
    if (p == NULL)
        return MX_ENOTFOUND;
    for (;;) {
        if (exited(p)) {
            reap(p);
            return p->status;
        }
        if (now_ms() > deadline)
            return MX_ETIMEDOUT;
        sleep_ms(POLL_MS / 2);
    }
}

void mx_it_kill_all(void)
{
    int64_t deadline = now_ms() + MX_IT_KILL_GRACE_MS;
    bool waiting = false;

    for (int i = 0; i < nprocs; i++) {
        if (!procs[i].reaped && !exited(&procs[i])) {
            kill(-procs[i].pid, SIGTERM);
            waiting = true;
        }
    }
    while (waiting && now_ms() < deadline) {
        waiting = false;
        for (int i = 0; i < nprocs; i++)
            waiting = waiting || !exited(&procs[i]);
        if (waiting)
            sleep_ms(POLL_MS / 2);
    }
    for (int i = 0; i < nprocs; i++) {
        if (!procs[i].reaped && !exited(&procs[i]))
            say("%s pid %ld ignored SIGTERM for %d ms; killing", procs[i].name, (long)procs[i].pid,
                MX_IT_KILL_GRACE_MS);
        reap(&procs[i]);
    }
}

static void describe_status(const struct proc *p, char *out, size_t cap)
{
    if (!p->reaped)
        snprintf(out, cap, "running");
    else if (p->status < 0)
        snprintf(out, cap, "unknown");
    else if (WIFEXITED(p->status))
        snprintf(out, cap, "exit %d", WEXITSTATUS(p->status));
    else if (WIFSIGNALED(p->status))
        snprintf(out, cap, "signal %d", WTERMSIG(p->status));
    else
        snprintf(out, cap, "status %d", p->status);
}

static void print_tail(const char *label, const char *path)
{
    size_t len = 0;
    char *data = mx_it_read_file(path, &len);
    size_t from = len > LOG_TAIL_BYTES ? len - LOG_TAIL_BYTES : 0;
    fprintf(stderr, "----- %s: %s (%zu bytes%s) -----\n", label, path, len,
            from ? ", last 64 KiB" : "");
    if (data == NULL) {
        fprintf(stderr, "(cannot read)\n");
        return;
    }
    fwrite(data + from, 1, len - from, stderr);
    if (len && data[len - 1] != '\n')
        fputc('\n', stderr);
    free(data);
}

static void print_logs(void)
{
    for (int i = 0; i < nprocs; i++) {
        char st[32];
        describe_status(&procs[i], st, sizeof(st));
        fprintf(stderr, "===== %s pid %ld (%s) =====\n", procs[i].name, (long)procs[i].pid, st);
        print_tail(procs[i].err_path ? "stdout" : "log", procs[i].out_path);
        if (procs[i].err_path)
            print_tail("stderr", procs[i].err_path);
    }
}

/* ---- ports and HTTP --------------------------------------------------- */

int mx_it_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t slen = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int port = MX_EIO;
    if (fd < 0)
        return MX_EIO;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &slen) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* A port file is complete once it ends in a newline, or reads the same twice:
 * writers differ in whether they rename into place. */
static int parse_port(const char *data, size_t len)
{
    int64_t v;
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' '))
        len--;
    if (mx_num_parse(data, len, 1, 65535, &v) != 0)
        return -1;
    return (int)v;
}

int mx_it_port_file(pid_t pid, const char *path, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    int last = -1;
    for (;;) {
        size_t len = 0;
        char *data = mx_it_read_file(path, &len);
        if (data) {
            int port = parse_port(data, len);
            bool complete = len > 0 && data[len - 1] == '\n';
            free(data);
            if (port > 0 && (complete || port == last))
                return port;
            last = port;
        }
        if (pid > 0 && mx_it_has_exited(pid)) {
            say("pid %ld exited before writing %s", (long)pid, path);
            return MX_ECLOSED;
        }
        if (now_ms() > deadline) {
            say("no port in %s after %d ms", path, timeout_ms);
            return MX_ETIMEDOUT;
        }
        sleep_ms(POLL_MS);
    }
}

static size_t on_body(char *p, size_t size, size_t n, void *data)
{
    return mx_buf_append(data, p, size * n) == 0 ? size * n : 0;
}

int mx_it_http_full(const char *method, const char *url, const char *const *headers,
                    const char *body, int timeout_ms, long *status, char **resp_headers,
                    char **resp_body)
{
    CURL *c = curl_easy_init();
    struct curl_slist *hl = NULL;
    struct mx_buf rb, hb;
    CURLcode cc;
    int rc = 0;

    MX_ASSERT(c != NULL);
    init_once();
    mx_buf_init(&rb, HTTP_BODY_CAP);
    mx_buf_init(&hb, 1024 * 1024);
    for (const char *const *h = headers; h && *h; h++)
        hl = curl_slist_append(hl, *h);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    if (ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca_file);
    /* Test traffic stays on loopback whatever proxy the environment names. */
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 5000 ? timeout_ms : 5000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &rb);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);

    cc = curl_easy_perform(c);
    *status = 0;
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    else if (cc == CURLE_OPERATION_TIMEDOUT)
        rc = MX_ETIMEDOUT;
    else
        rc = MX_EIO;
    if (resp_body)
        *resp_body = mx_xstrndup(mx_buf_data(&rb), mx_buf_len(&rb));
    if (resp_headers)
        *resp_headers = mx_xstrndup(mx_buf_data(&hb), mx_buf_len(&hb));
    mx_buf_clear(&rb);
    mx_buf_clear(&hb);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    return rc;
}

int mx_it_http(const char *method, const char *url, const char *const *headers, const char *body,
               long *status, char **resp_body)
{
    return mx_it_http_full(method, url, headers, body, MX_IT_HTTP_TIMEOUT_MS, status, NULL,
                           resp_body);
}

/* Poll until |url| answers (|want| < 0: any status); stop early when |pid|
 * (if > 0) exits. */
static int poll_http(const char *url, long want, pid_t pid, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    long last = 0;
    for (;;) {
        long status = 0;
        int rc = mx_it_http_full("GET", url, NULL, NULL, 2000, &status, NULL, NULL);
        if (rc == 0 && (want < 0 || status == want))
            return (int)status;
        if (rc == 0)
            last = status;
        if (pid > 0 && mx_it_has_exited(pid)) {
            say("pid %ld exited while waiting for %s", (long)pid, url);
            return MX_ECLOSED;
        }
        if (now_ms() > deadline) {
            say("%s: no %s answer after %d ms (last status %ld)", url,
                want < 0 ? "HTTP" : "expected", timeout_ms, last);
            return MX_ETIMEDOUT;
        }
        sleep_ms(POLL_MS * 2);
    }
}

void mx_it_set_cwd(const char *dir)
{
    free(spawn_cwd);
    spawn_cwd = dir ? mx_xstrdup(dir) : NULL;
}

void mx_it_set_ca_file(const char *path)
{
    free(ca_file);
    ca_file = path ? mx_xstrdup(path) : NULL;
}

int mx_it_run(const char *name, const char *const *argv, const char *const *env, int timeout_ms,
              char **output)
{
    char *log = unique_log_path(name, "log");
    pid_t pid = spawn_proc(name, argv, env, log, NULL, NULL);
    int rc = MX_EIO;
    if (pid > 0) {
        rc = mx_it_wait_exit(pid, timeout_ms);
        if (rc == MX_ETIMEDOUT) {
            say("%s did not finish in %d ms; killing it", name, timeout_ms);
            mx_it_signal(pid, SIGKILL);
            mx_it_wait_exit(pid, REAP_TIMEOUT_MS);
        } else if (rc >= 0) {
            rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : MX_EIO;
        }
    }
    if (output) {
        *output = mx_it_read_file(log, NULL);
        if (*output == NULL)
            *output = mx_xstrdup("");
    }
    free(log);
    return rc;
}

int mx_it_wait_http(const char *url, int timeout_ms)
{
    return poll_http(url, -1, 0, timeout_ms);
}

int mx_it_wait_http_status(const char *url, long want_status, int timeout_ms)
{
    int rc = poll_http(url, want_status, 0, timeout_ms);
    return rc < 0 ? rc : 0;
}

/* ---- node ------------------------------------------------------------- */

static bool node_ready(void)
{
    char *mods = mx_xasprintf("%s/tests/js/node_modules/@modelcontextprotocol/sdk/package.json",
                              mx_it_source_dir());
    bool ok = access(mods, R_OK) == 0;
    if (!ok)
        say("%s is missing: run .ci/setup (npm ci in tests/js) first", mods);
    free(mods);
    return ok;
}

pid_t mx_it_node_start(const char *script, const char *const *args, const char *const *env)
{
    const char *argv[32];
    size_t argc = 0;
    char *path, *name, *out_path, *err_path;
    pid_t pid;

    if (!node_ready())
        return -1;
    path = mx_xasprintf("%s/tests/js/%s", mx_it_source_dir(), script);
    name = mx_xasprintf("node-%.*s-%u", (int)strcspn(script, "."), script, ++seq);
    out_path = unique_log_path(name, "out");
    err_path = unique_log_path(name, "log");
    argv[argc++] = "node";
    argv[argc++] = path;
    for (const char *const *a = args; a && *a && argc < 31; a++)
        argv[argc++] = *a;
    argv[argc] = NULL;
    pid = spawn_proc(name, argv, env, out_path, err_path, NULL);
    free(path);
    free(name);
    free(out_path);
    free(err_path);
    return pid;
}

int mx_it_node_finish(pid_t pid, int timeout_ms, json_t **out)
{
    struct proc *p = find_proc(pid);
    char *data;
    size_t len = 0;
    int st;

    *out = NULL;
    if (p == NULL || p->err_path == NULL)
        return MX_ENOTFOUND;
    st = mx_it_wait_exit(pid, timeout_ms);
    if (st == MX_ETIMEDOUT) {
        say("%s: no exit after %d ms", p->name, timeout_ms);
        mx_it_signal(pid, SIGKILL);
        mx_it_wait_exit(pid, REAP_TIMEOUT_MS);
    }
    data = mx_it_read_file(p->out_path, &len);
    if (data && len) {
        json_error_t err;
        *out = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
        if (*out == NULL)
            say("%s: stdout is not one JSON object (%s): %.200s", p->name, err.text, data);
    }
    free(data);
    if (st < 0)
        return st;
    if (!WIFEXITED(st))
        return MX_EIO;
    return WEXITSTATUS(st);
}

int mx_it_node(const char *script, const char *const *args, const char *const *env, json_t **out)
{
    pid_t pid = mx_it_node_start(script, args, env);
    *out = NULL;
    if (pid <= 0)
        return MX_EIO;
    return mx_it_node_finish(pid, MX_IT_NODE_TIMEOUT_MS, out);
}

pid_t mx_it_client_start(const char *url, const char *scenario, const char *args_json,
                         const char *bearer)
{
    const char *args[] = {url, scenario, args_json ? args_json : "{}", NULL};
    const char *env[] = {"MX_CLIENT_HEADERS", NULL};
    char *headers_env = NULL;
    pid_t pid;

    if (bearer) {
        json_t *h = json_object();
        char *value = mx_xasprintf("Bearer %s", bearer);
        char *dump;
        json_object_set_new(h, "Authorization", json_string(value));
        dump = json_dumps(h, JSON_COMPACT);
        headers_env = mx_xasprintf("MX_CLIENT_HEADERS=%s", dump);
        free(dump);
        free(value);
        json_decref(h);
        env[0] = headers_env;
    }
    pid = mx_it_node_start("client.mjs", args, env);
    free(headers_env);
    return pid;
}

int mx_it_client(const char *url, const char *scenario, const char *args_json, const char *bearer,
                 json_t **out)
{
    pid_t pid = mx_it_client_start(url, scenario, args_json, bearer);
    *out = NULL;
    if (pid <= 0)
        return MX_EIO;
    return mx_it_node_finish(pid, MX_IT_NODE_TIMEOUT_MS, out);
}

/* ---- fixtures --------------------------------------------------------- */

pid_t mx_it_start_everything(const char *bearer, int *port)
{
    *port = 0;
    return mx_it_start_everything_as("streamableHttp", bearer, port);
}

pid_t mx_it_start_everything_as(const char *transport, const char *bearer, int *port)
{
    const char *src;
    char *bind_pre, *auth_pre, *server, *port_file, *port_env, *bearer_env, *url;
    pid_t pid;
    int p;
    int want = *port;

    *port = 0;
    if (!node_ready())
        return -1;
    src = mx_it_source_dir();
    bind_pre = mx_xasprintf("%s/tests/js/bind-localhost.mjs", src);
    auth_pre = mx_xasprintf("%s/tests/js/require-auth.mjs", src);
    server = mx_xasprintf(
        "%s/tests/js/node_modules/@modelcontextprotocol/server-everything/dist/index.js", src);
    port_file = unique_log_path("everything", "port");
    port_env = mx_xasprintf("MX_PORT_FILE=%s", port_file);
    bearer_env = mx_xasprintf("MX_UPSTREAM_BEARER=%s", bearer);
    {
        const char *argv[] = {"node",   "--import", bind_pre,  "--import",
                              auth_pre, server,     transport, NULL};
        /* PORT=0 and the port file: the preload reports the port the kernel
         * chose, so there is no window in which another process can take it. */
        char listen_env[32];
        snprintf(listen_env, sizeof(listen_env), "PORT=%d", want > 0 ? want : 0);
        const char *env[] = {listen_env, port_env, bearer_env, "NODE_OPTIONS", NULL};
        pid = mx_it_spawn("everything", argv, env, NULL);
    }
    p = pid > 0 ? mx_it_port_file(pid, port_file, MX_IT_START_TIMEOUT_MS) : -1;
    if (p > 0) {
        url = mx_xasprintf("http://127.0.0.1:%d/__auth_stats", p);
        if (poll_http(url, 200, pid, MX_IT_START_TIMEOUT_MS) < 0)
            p = -1;
        free(url);
    }
    free(bind_pre);
    free(auth_pre);
    free(server);
    free(port_file);
    free(port_env);
    free(bearer_env);
    if (pid <= 0 || p <= 0)
        return -1;
    *port = p;
    return pid;
}

pid_t mx_it_start_sim(const char *name, const char *bearer, const char *const *extra_args,
                      int *port)
{
    const char *argv[48];
    size_t argc = 0;
    char *bin = mx_xasprintf("%s/sandbox-sim", mx_it_build_dir());
    char *port_file = unique_log_path(name, "port");
    char *bearer_env = bearer ? mx_xasprintf("MX_SIM_BEARER=%s", bearer) : NULL;
    const char *env[] = {bearer_env ? bearer_env : "MX_SIM_BEARER", NULL};
    pid_t pid = -1;
    int p = -1;

    *port = 0;
    argv[argc++] = bin;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    argv[argc++] = "--port-file";
    argv[argc++] = port_file;
    if (bearer) {
        argv[argc++] = "--bearer-env";
        argv[argc++] = "MX_SIM_BEARER";
    }
    for (const char *const *a = extra_args; a && *a && argc < 47; a++)
        argv[argc++] = *a;
    argv[argc] = NULL;

    if (access(bin, X_OK) == 0)
        pid = mx_it_spawn(name, argv, env, NULL);
    else
        say("%s is not built", bin);
    if (pid > 0)
        p = mx_it_port_file(pid, port_file, MX_IT_START_TIMEOUT_MS);
    if (p > 0) {
        /* Any answer will do: /__stats wants the credential too. */
        char *url = mx_xasprintf("http://127.0.0.1:%d/__stats", p);
        if (poll_http(url, -1, pid, MX_IT_START_TIMEOUT_MS) < 0)
            p = -1;
        free(url);
    }
    free(bin);
    free(port_file);
    free(bearer_env);
    if (pid <= 0 || p <= 0)
        return -1;
    *port = p;
    return pid;
}

pid_t mx_it_start_mcplex(const char *config_path, int port)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", port);
    const char *argv[] = {bin, "serve", "-c", config_path, NULL};
    pid_t pid = mx_it_spawn("mcplex", argv, NULL, NULL);
    if (pid > 0 && poll_http(url, 200, pid, MX_IT_START_TIMEOUT_MS) < 0)
        pid = -1;
    free(bin);
    free(url);
    return pid;
}

pid_t mx_it_start_mcplex_tls(const char *config_path, int port, const char *ca)
{
    char *bin = mx_xasprintf("%s/mcplex", mx_it_build_dir());
    char *url = mx_xasprintf("https://127.0.0.1:%d/health", port);
    const char *argv[] = {bin, "serve", "-c", config_path, NULL};
    mx_it_set_ca_file(ca);
    pid_t pid = mx_it_spawn("mcplex", argv, NULL, NULL);
    if (pid > 0 && poll_http(url, 200, pid, MX_IT_START_TIMEOUT_MS) < 0)
        pid = -1;
    free(bin);
    free(url);
    return pid;
}

int mx_it_connect_from(const char *from, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    if (from) {
        struct sockaddr_in src = {0};
        src.sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
    }
    struct sockaddr_in dst = {0};
    dst.sin_family = AF_INET;
    dst.sin_port = htons((uint16_t)port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
    return fd;
}

void mx_it_wait_listening(pid_t pid, int port, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        close(fd);
        if (rc == 0)
            return;
        if (pid > 0 && mx_it_has_exited(pid))
            fail_msg("pid %ld exited before listening on 127.0.0.1:%d", (long)pid, port);
        if (now_ms() > deadline)
            fail_msg("nothing listens on 127.0.0.1:%d after %d ms", port, timeout_ms);
        sleep_ms(POLL_MS);
    }
}

char *mx_it_raw_exchange(int fd, const char *req, size_t len, int timeout_ms)
{
    assert_true(send(fd, req, len, MSG_NOSIGNAL) == (ssize_t)len);
    char buf[16384];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof(buf) - 1 && poll(&p, 1, timeout_ms) > 0) {
        ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return mx_xstrdup(buf);
}

int mx_it_start_sim_behind_mcplex(const char *listen_extra, char **ca)
{
    char secret[MX_IT_CANARY_SIZE];
    int sim_port;
    mx_it_canary(secret, sizeof(secret));
    assert_true(mx_it_start_sim("sim", secret, NULL, &sim_port) > 0);
    char *sec = mx_it_path("sim.secret");
    assert_int_equal(mx_it_write_file(sec, secret, strlen(secret)), 0);
    int port = mx_it_free_port();
    char *cfg = mx_xasprintf("[listen]\naddress = \"127.0.0.1:%d\"\ntls = %s\n%s"
                             "[proxy]\nstate_dir = \"%s\"\n"
                             "[servers.sim]\nurl = \"http://127.0.0.1:%d/mcp\"\n"
                             "auth = \"bearer\"\nsecret = \"file:%s\"\n",
                             port, ca ? "true" : "false", listen_extra, mx_it_dir(), sim_port, sec);
    char *path = mx_it_path("mcplex.toml");
    assert_int_equal(mx_it_write_file(path, cfg, strlen(cfg)), 0);
    if (ca) {
        /* the first serve makes the local CA in the state dir */
        *ca = mx_it_path("certs/ca.pem");
        assert_true(mx_it_start_mcplex_tls(path, port, *ca) > 0);
    } else {
        assert_true(mx_it_start_mcplex(path, port) > 0);
    }
    free(sec);
    free(cfg);
    free(path);
    return port;
}

/* ---- cmocka glue ------------------------------------------------------ */

int mx_it_setup(void **state)
{
    const char *build = getenv("MX_BUILD_DIR");
    const char *tmp = getenv("TMPDIR");
    char *base, *tmpl;

    (void)state;
    init_once();
    if (build && *build) {
        char *tests = mx_xasprintf("%s/tests", build);
        mkdir_ok(tests);
        free(tests);
        base = mx_xasprintf("%s/tests/it-tmp", build);
    } else {
        base = mx_xstrdup(tmp && *tmp ? tmp : "/tmp");
    }
    if (mkdir_ok(base) != 0) {
        free(base);
        return -1;
    }
    tmpl = mx_xasprintf("%s/%s-XXXXXX", base, program_invocation_short_name);
    free(base);
    if (mkdtemp(tmpl) == NULL) {
        say("mkdtemp %s: %s", tmpl, strerror(errno));
        free(tmpl);
        return -1;
    }
    test_dir = tmpl;
    test_passed = false;
    /* Every process a test starts has the test directory as its home: the
     * default state_dir (catalogue, certs) and config path of one test never
     * reach another's, nor the user's. */
    char *xdg = mx_xasprintf("%s/.config", tmpl);
    if (setenv("HOME", tmpl, 1) != 0 || setenv("XDG_CONFIG_HOME", xdg, 1) != 0 ||
        unsetenv("XDG_STATE_HOME") != 0) {
        say("setenv: %s", strerror(errno));
        free(xdg);
        return -1;
    }
    free(xdg);
    return 0;
}

void mx_it_pass(void)
{
    test_passed = true;
}

int mx_it_teardown(void **state)
{
    const char *keep = getenv("MX_IT_KEEP");
    (void)state;
    mx_it_kill_all();
    if (!test_passed) {
        print_logs();
        fprintf(stderr, "mx_it: test failed; its files are kept in %s\n", test_dir);
    } else if (keep && *keep && strcmp(keep, "0") != 0) {
        fprintf(stderr, "mx_it: MX_IT_KEEP set; files kept in %s\n", test_dir);
    } else if (test_dir) {
        rm_rf(test_dir);
    }
    for (int i = 0; i < nprocs; i++) {
        free(procs[i].name);
        free(procs[i].out_path);
        free(procs[i].err_path);
        memset(&procs[i], 0, sizeof(procs[i]));
    }
    nprocs = 0;
    mx_it_set_ca_file(NULL);
    mx_it_set_cwd(NULL);
    free(test_dir);
    test_dir = NULL;
    test_passed = false;
    return 0;
}

json_t *mx_it_client_ok(const char *url, const char *scenario, const char *args_json)
{
    json_t *out = NULL;
    int rc = mx_it_client(url, scenario, args_json, NULL, &out);
    if (rc != 0 || out == NULL)
        fail_msg("client %s %s: exit %d", scenario, args_json ? args_json : "", rc);
    return out;
}

void mx_it_assert_sampled_once(const json_t *out, const char *reply)
{
    assert_int_equal(json_array_size(json_object_get(out, "sampling_requests")), 1);
    char *dump = json_dumps(json_object_get(out, "result"), 0);
    if (dump == NULL || strstr(dump, reply) == NULL)
        fail_msg("sampling answer %s not in the result: %s", reply, dump ? dump : "(none)");
    free(dump);
}

char *mx_it_secret_file(const char *name, const char *value)
{
    char *path = mx_it_path(name);
    assert_int_equal(mx_it_write_file(path, value, strlen(value)), 0);
    return path;
}

void mx_it_sign_leaf(const char *certs_dir, const char *name, const char *cn, const char *san,
                     char **cert, char **key)
{
    char *ca = mx_xasprintf("%s/ca.pem", certs_dir);
    char *ca_key = mx_xasprintf("%s/ca.key", certs_dir);
    char *file = mx_xasprintf("%s.csr", name);
    char *csr = mx_it_path(file);
    free(file);
    file = mx_xasprintf("%s.key", name);
    *key = mx_it_path(file);
    free(file);
    file = mx_xasprintf("%s.pem", name);
    *cert = mx_it_path(file);
    free(file);
    char *subj = mx_xasprintf("/CN=%s", cn);
    char *ext = mx_xasprintf("subjectAltName=%s", san);
    char *req_name = mx_xasprintf("%s-req", name);
    char *sign_name = mx_xasprintf("%s-sign", name);
    const char *req[] = {
        "openssl", "req",     "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes",  "-keyout", *key,   "-subj",   subj, "-addext",  ext,
        "-out",    csr,       NULL};
    const char *sign[] = {
        "openssl",          "x509", "-req",  "-in", csr,    "-CA", ca,  "-CAkey", ca_key,
        "-copy_extensions", "copy", "-days", "1",   "-out", *cert, NULL};
    if (mx_it_run(req_name, req, NULL, SIGN_TIMEOUT_MS, NULL) != 0 ||
        mx_it_run(sign_name, sign, NULL, SIGN_TIMEOUT_MS, NULL) != 0)
        fail_msg("openssl could not make the leaf %s (%s); its logs are in %s", name, san,
                 mx_it_dir());
    free(ca);
    free(ca_key);
    free(csr);
    free(subj);
    free(ext);
    free(req_name);
    free(sign_name);
}

int mx_it_trace_count(const char *trace_path, const char *dir, const char *server,
                      const char *needle)
{
    char *trace = mx_it_read_file(trace_path, NULL);
    char want_dir[32], want_server[96];
    int n = 0;
    if (trace == NULL)
        return 0;
    snprintf(want_dir, sizeof(want_dir), "\"%s\"", dir);
    snprintf(want_server, sizeof(want_server), "\"server\":\"%s\"", server);
    for (char *line = trace; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        if (strstr(line, want_dir) && strstr(line, want_server) && strstr(line, needle))
            n++;
        line = nl ? nl + 1 : NULL;
    }
    free(trace);
    return n;
}

int mx_it_trace_wait(const char *trace_path, const char *dir, const char *server,
                     const char *needle, int want, int ms)
{
    int n = mx_it_trace_count(trace_path, dir, server, needle);
    for (int waited = 0; n < want && waited < ms; waited += 20) {
        usleep(20 * 1000);
        n = mx_it_trace_count(trace_path, dir, server, needle);
    }
    return n;
}

json_t *mx_it_health(int port, char **body_out)
{
    char *url = mx_xasprintf("http://127.0.0.1:%d/health", port);
    long status = 0;
    char *body = NULL;
    assert_int_equal(mx_it_http("GET", url, NULL, NULL, &status, &body), 0);
    assert_int_equal(status, 200);
    json_t *h = json_loads(body, 0, NULL);
    assert_non_null(h);
    free(url);
    if (body_out)
        *body_out = body;
    else
        free(body);
    return h;
}

int mx_it_canary_hits(const char *const *files, const char *const *canaries, size_t cnt)
{
    int total = 0;
    for (size_t i = 0; i < cnt; i++) {
        char **hits = NULL;
        int n = mx_it_scan_for(files, canaries[i], &hits);
        for (int k = 0; k < n; k++)
            fprintf(stderr, "canary %zu found in %s\n", i, hits[k]);
        mx_it_strv_free(hits);
        total += n < 0 ? 1 : n;
    }
    return total;
}

const char *mx_it_result_text(const json_t *out)
{
    const json_t *r = json_object_get(out, "result");
    return json_string_value(
        json_object_get(json_array_get(json_object_get(r, "content"), 0), "text"));
}

bool mx_it_has_string(const json_t *arr, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *t = json_string_value(v);
        if (t && strcmp(t, s) == 0)
            return true;
    }
    return false;
}

json_t *mx_it_sim_stats(int port, const char *token)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/__stats", port);
    char *auth = mx_xasprintf("Authorization: Bearer %s", token);
    const char *hdrs[] = {auth, NULL};
    long status = 0;
    char *body = NULL;
    json_t *o = NULL;
    if (mx_it_http("GET", url, hdrs, NULL, &status, &body) == 0 && status == 200)
        o = json_loads(body, 0, NULL);
    if (o == NULL)
        fprintf(stderr, "mx_it: GET %s: status %ld, no stats object\n", url, status);
    free(auth);
    free(body);
    return o;
}

json_int_t mx_it_sim_method_count(int port, const char *token, const char *method)
{
    json_t *st = mx_it_sim_stats(port, token);
    assert_non_null(st);
    json_int_t n = json_integer_value(json_object_get(json_object_get(st, "methods"), method));
    json_decref(st);
    return n;
}

void mx_it_open_session(const char *url, const char *client, char *sid, size_t cap)
{
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream", NULL, NULL};
    char *init = mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                              "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
                              "\"clientInfo\":{\"name\":\"%s\",\"version\":\"1\"}}}",
                              client);
    long status = 0;
    char *headers = NULL, *body = NULL;
    assert_int_equal(mx_it_http_full("POST", url, hdrs, init, 10000, &status, &headers, &body), 0);
    assert_int_equal(status, 200);
    mx_it_header_value(headers, "Mcp-Session-Id", sid, cap);
    assert_true(strlen(sid) > 0);
    free(headers);
    free(body);
    free(init);
    char *sid_h = mx_xasprintf("Mcp-Session-Id: %s", sid);
    hdrs[2] = sid_h;
    body = NULL;
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs,
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 10000,
                        &status, NULL, &body),
        0);
    assert_int_equal(status, 202);
    free(body);
    free(sid_h);
}

void mx_it_header_value(const char *headers, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    for (const char *p = headers; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            snprintf(out, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
            return;
        }
    }
}

void mx_it_answer_parse(struct mx_it_answer *a)
{
    const char *last = NULL;
    /* an SSE data field starts a line; "data: " inside a JSON body does not */
    for (const char *p = a->body ? strstr(a->body, "data: ") : NULL; p; p = strstr(p + 1, "data: "))
        if (p == a->body || p[-1] == '\n')
            last = p + 6;
    json_decref(a->msg);
    a->msg = a->body ? json_loads(last ? last : a->body, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
}

void mx_it_answer_clear(struct mx_it_answer *a)
{
    free(a->headers);
    free(a->body);
    json_decref(a->msg);
    memset(a, 0, sizeof(*a));
}

json_t *mx_it_result(const struct mx_it_answer *a)
{
    json_t *r = json_object_get(a->msg, "result");
    if (!json_is_object(r))
        fail_msg("no result: %s", a->body ? a->body : "(no body)");
    return r;
}

json_int_t mx_it_error_code(const struct mx_it_answer *a)
{
    return json_integer_value(json_object_get(json_object_get(a->msg, "error"), "code"));
}

const char *mx_it_first_text(const json_t *result)
{
    return json_string_value(
        json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

void mx_it_assert_modern_result(const json_t *result, bool cacheable)
{
    assert_string_equal(json_string_value(json_object_get(result, "resultType")), "complete");
    json_t *info =
        json_object_get(json_object_get(result, "_meta"), "io.modelcontextprotocol/serverInfo");
    assert_string_equal(json_string_value(json_object_get(info, "name")), "mcplex");
    if (cacheable) {
        assert_true(json_is_integer(json_object_get(result, "ttlMs")));
        assert_true(json_integer_value(json_object_get(result, "ttlMs")) >= 0);
        assert_string_equal(json_string_value(json_object_get(result, "cacheScope")), "private");
    }
}

json_t *mx_it_client26_ok(const char *url, const char *args_json)
{
    const char *argv[] = {url, args_json ? args_json : "{}", NULL};
    json_t *out = NULL;
    assert_int_equal(mx_it_node("client26.mjs", argv, NULL, &out), 0);
    assert_non_null(out);
    if (!json_is_true(json_object_get(out, "ok")))
        fail_msg("SDK v2 client at %s: %s", url, json_string_value(json_object_get(out, "error")));
    assert_string_equal(json_string_value(json_object_get(out, "protocol_version")), "2026-07-28");
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "server"), "name")),
                        "mcplex");
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(out, "wire"), i, e)
    {
        const char *m = json_string_value(json_object_get(e, "method"));
        assert_true(m == NULL || strcmp(m, "initialize") != 0);
        assert_false(json_is_true(json_object_get(e, "session")));
        assert_string_equal(json_string_value(json_object_get(e, "version")), "2026-07-28");
    }
    return out;
}

void mx_it_post26(const char *base, const char *path, const char *method, const char *name,
                  const char *params, const char *caps, const char *hdr_method, const char *version,
                  const char *extra, struct mx_it_answer *a)
{
    char *url = mx_xasprintf("%s%s", base, path);
    const char *v = version ? version : "2026-07-28";
    char *body =
        mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":{%s%s\"_meta\":{"
                     "\"io.modelcontextprotocol/protocolVersion\":\"%s\","
                     "\"io.modelcontextprotocol/clientCapabilities\":%s}}}",
                     method, params, *params ? "," : "", v, caps ? caps : "{}");
    char *hv = mx_xasprintf("MCP-Protocol-Version: %s", v);
    char *hm = mx_xasprintf("Mcp-Method: %s", hdr_method ? hdr_method : method);
    char *hn = name ? mx_xasprintf("Mcp-Name: %s", name) : NULL;
    const char *hdrs[] = {"Content-Type: application/json",
                          "Accept: application/json, text/event-stream",
                          hv,
                          hm,
                          hn ? hn : extra,
                          hn ? extra : NULL,
                          NULL};
    memset(a, 0, sizeof(*a));
    assert_int_equal(
        mx_it_http_full("POST", url, hdrs, body, 30000, &a->status, &a->headers, &a->body), 0);
    mx_it_answer_parse(a);
    if (a->msg == NULL)
        fail_msg("%s %s: not JSON (%ld): %s", path, method, a->status, a->body);
    free(hv);
    free(hm);
    free(hn);
    free(body);
    free(url);
}

/* ---- a raw 2026-07-28 POST, for streams that stay open ---- */

int mx_it_raw_post26(int port, const char *method, const char *name, const char *body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    char *name_hdr = name ? mx_xasprintf("Mcp-Name: %s\r\n", name) : mx_xstrdup("");
    char *head = mx_xasprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                              "Content-Type: application/json\r\n"
                              "Accept: application/json, text/event-stream\r\n"
                              "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: %s\r\n%s"
                              "Content-Length: %zu\r\n\r\n%s",
                              port, method, name_hdr, strlen(body), body);
    size_t len = strlen(head);
    assert_int_equal(write(fd, head, len), (ssize_t)len);
    free(head);
    free(name_hdr);
    return fd;
}

bool mx_it_raw_wait(int fd, char **acc, size_t *len, const char *needle, int times, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 100) {
        int seen = 0;
        for (const char *p = *acc ? strstr(*acc, needle) : NULL; p; p = strstr(p + 1, needle))
            seen++;
        if (seen >= times)
            return true;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) == 1) {
            char buf[4096];
            ssize_t n = read(fd, buf, sizeof(buf));
            if (n <= 0)
                return false;
            *acc = realloc(*acc, *len + (size_t)n + 1);
            assert_non_null(*acc);
            memcpy(*acc + *len, buf, (size_t)n);
            *len += (size_t)n;
            (*acc)[*len] = '\0';
        }
    }
    return false;
}
