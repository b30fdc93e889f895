/* SPDX-License-Identifier: MIT */
/*
 * The mechanics of trusting the local CA: which system store this is, the
 * argv of each step, whether a store holds the CA, and running a step with
 * posix_spawn. What to print and in which order is cmd_trust.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "alloc.h"
#include "certs_int.h"
#include "err.h"
#include "trust.h"

/* Bundles are a few hundred KiB; anything much larger is not one. */
#define BUNDLE_MAX (16L * 1024 * 1024)

static const struct mx_trust_sys systems[MX_TRUST_SYS_CNT] = {
    {MX_TRUST_SYS_DEBIAN, "Debian/Ubuntu", "update-ca-certificates",
     "/usr/local/share/ca-certificates", ".crt", "/etc/ssl/certs/ca-certificates.crt"},
    {MX_TRUST_SYS_FEDORA, "Fedora", "update-ca-trust", "/etc/pki/ca-trust/source/anchors", ".pem",
     "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"},
    {MX_TRUST_SYS_ARCH, "Arch", "trust", NULL, NULL, "/etc/ssl/certs/ca-certificates.crt"},
};

/* A user's PATH often lacks these, and the tools of the system store live there. */
static const char *const sbin_dirs[] = {"/usr/local/sbin", "/usr/sbin", "/sbin"};

const struct mx_trust_sys *mx_trust_sys_get(enum mx_trust_sys_kind kind)
{
    return &systems[kind];
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool executable_in(const char *dir, size_t dir_len, const char *name)
{
    struct stat st;
    char *p = mx_xasprintf("%.*s/%s", (int)dir_len, dir, name);
    bool ok = stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
    free(p);
    return ok;
}

static bool in_path(const char *name)
{
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        return false;
    for (const char *s = path;;) {
        const char *e = strchr(s, ':');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n > 0 && executable_in(s, n, name))
            return true;
        if (e == NULL)
            return false;
        s = e + 1;
    }
}

/* |name| as it is to be run: itself when PATH has it, else its sbin path; NULL when absent. */
static char *which(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? mx_xstrdup(name) : NULL;
    if (in_path(name))
        return mx_xstrdup(name);
    for (size_t i = 0; i < sizeof(sbin_dirs) / sizeof(sbin_dirs[0]); i++) {
        if (executable_in(sbin_dirs[i], strlen(sbin_dirs[i]), name))
            return mx_xasprintf("%s/%s", sbin_dirs[i], name);
    }
    return NULL;
}

bool mx_trust_have(const char *name)
{
    char *p = which(name);
    free(p);
    return p != NULL;
}

const struct mx_trust_sys *mx_trust_sys_detect(void)
{
    if (mx_trust_have(systems[MX_TRUST_SYS_DEBIAN].tool))
        return &systems[MX_TRUST_SYS_DEBIAN];
    if (mx_trust_have(systems[MX_TRUST_SYS_FEDORA].tool) &&
        is_dir(systems[MX_TRUST_SYS_FEDORA].anchor_dir))
        return &systems[MX_TRUST_SYS_FEDORA];
    if (mx_trust_have(systems[MX_TRUST_SYS_ARCH].tool))
        return &systems[MX_TRUST_SYS_ARCH];
    return NULL;
}

int mx_trust_ca_load(struct mx_trust_ca *ca, const char *path, struct mx_diag *diag)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    memset(ca, 0, sizeof(*ca));
    int rc = mx_certs_read_cert(path, &ca->cert, NULL, diag);
    if (rc != 0)
        return rc;
    if (X509_digest(ca->cert, EVP_sha256(), md, &n) != 1 || n * 2 < MX_TRUST_FP_LEN) {
        mx_certs_ssl_diag(diag, path, "cannot hash the certificate");
        X509_free(ca->cert);
        ca->cert = NULL;
        return MX_EINVAL;
    }
    for (size_t i = 0; i < MX_TRUST_FP_LEN / 2; i++)
        snprintf(ca->fp + 2 * i, 3, "%02x", md[i]);
    snprintf(ca->nss_name, sizeof(ca->nss_name), "%s%s", MX_TRUST_NSS_PREFIX, ca->fp);
    ca->path = mx_xstrdup(path);
    return 0;
}

void mx_trust_ca_clear(struct mx_trust_ca *ca)
{
    X509_free(ca->cert);
    free(ca->path);
    memset(ca, 0, sizeof(*ca));
}

void mx_trust_cmd_clear(struct mx_trust_cmd *c)
{
    for (size_t i = 0; i < MX_TRUST_ARGV_MAX && c->argv[i]; i++)
        free(c->argv[i]);
    memset(c, 0, sizeof(*c));
}

/* Build |c| from a NULL-terminated list of arguments (copied). */
static void cmd_set(struct mx_trust_cmd *c, bool sudo, const char *const *args)
{
    size_t n = 0;
    memset(c, 0, sizeof(*c));
    if (sudo)
        c->argv[n++] = mx_xstrdup("sudo");
    for (; *args && n < MX_TRUST_ARGV_MAX; args++)
        c->argv[n++] = mx_xstrdup(*args);
}

static bool shell_safe(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *s))
            return false;
    }
    return true;
}

/* Append to |out| (length *|len|, capacity |cap|), truncating. */
static void put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *len + 1 < cap; i++)
        out[(*len)++] = s[i];
    out[*len] = '\0';
}

void mx_trust_cmd_format(const struct mx_trust_cmd *c, char *out, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    out[0] = '\0';
    for (size_t i = 0; i < MX_TRUST_ARGV_MAX && c->argv[i]; i++) {
        const char *a = c->argv[i];
        if (i)
            put(out, cap, &len, " ", 1);
        if (shell_safe(a)) {
            put(out, cap, &len, a, strlen(a));
            continue;
        }
        put(out, cap, &len, "'", 1);
        for (; *a; a++) {
            if (*a == '\'')
                put(out, cap, &len, "'\\''", 4);
            else
                put(out, cap, &len, a, 1);
        }
        put(out, cap, &len, "'", 1);
    }
}

char *mx_trust_anchor_path(const struct mx_trust_sys *sys, const struct mx_trust_ca *ca)
{
    if (sys->anchor_dir == NULL)
        return NULL;
    return mx_xasprintf("%s/mcplex-%s%s", sys->anchor_dir, ca->fp, sys->anchor_ext);
}

static const char *const *rebuild_args(const struct mx_trust_sys *sys)
{
    static const char *const debian[] = {"update-ca-certificates", NULL};
    static const char *const fedora[] = {"update-ca-trust", "extract", NULL};
    return sys->kind == MX_TRUST_SYS_DEBIAN ? debian : fedora;
}

size_t mx_trust_sys_steps(const struct mx_trust_sys *sys, const struct mx_trust_ca *ca,
                          bool untrust, const char *const *rm, size_t rm_cnt, bool sudo,
                          struct mx_trust_cmd *out)
{
    if (sys->kind == MX_TRUST_SYS_ARCH) {
        const char *args[] = {"trust", "anchor", untrust ? "--remove" : "--store", ca->path, NULL};
        cmd_set(&out[0], sudo, args);
        return 1;
    }
    if (untrust) {
        const char *args[MX_TRUST_ARGV_MAX + 1] = {"rm", "-f"};
        size_t n = 2;
        for (size_t i = 0; i < rm_cnt && n < MX_TRUST_ARGV_MAX - 1; i++)
            args[n++] = rm[i];
        args[n] = NULL;
        cmd_set(&out[0], sudo, args);
    } else {
        char *dst = mx_trust_anchor_path(sys, ca);
        const char *args[] = {"install", "-m", "644", ca->path, dst, NULL};
        cmd_set(&out[0], sudo, args);
        free(dst);
    }
    cmd_set(&out[1], sudo, rebuild_args(sys));
    return 2;
}

void mx_trust_nss_step(const char *db, const struct mx_trust_ca *ca, enum mx_trust_nss_op op,
                       struct mx_trust_cmd *out)
{
    char *dir = mx_xasprintf("sql:%s", db);
    if (op == MX_TRUST_NSS_ADD) {
        const char *args[] = {"certutil", "-A",         "-d", dir,      "-t", "C,,",
                              "-n",       ca->nss_name, "-i", ca->path, NULL};
        cmd_set(out, false, args);
    } else {
        const char *args[] = {
            "certutil", op == MX_TRUST_NSS_DEL ? "-D" : "-L", "-d", dir, "-n", ca->nss_name, NULL};
        cmd_set(out, false, args);
    }
    free(dir);
}

void mx_trust_list_free(char **list, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        free(list[i]);
    free(list);
}

static void list_add(char ***list, size_t *cnt, char *s)
{
    *list = mx_xrealloc(*list, (*cnt + 1) * sizeof(**list));
    (*list)[(*cnt)++] = s;
}

/* The directories of |pattern|'s matches (each ".../cert9.db"), sorted by glob. */
static void add_globbed(const char *pattern, char ***list, size_t *cnt)
{
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i];
        const char *slash = strrchr(p, '/');
        list_add(list, cnt, mx_xstrndup(p, (size_t)(slash - p)));
    }
    globfree(&g);
}

size_t mx_trust_nss_dbs(const char *home, char ***out)
{
    size_t cnt = 0;
    *out = NULL;
    /* glob(3) treats these as pattern characters; such a home is not searched. */
    if (strpbrk(home, "*?[\\") != NULL)
        return 0;
    char *p = mx_xasprintf("%s/.pki/nssdb/cert9.db", home);
    add_globbed(p, out, &cnt);
    free(p);
    p = mx_xasprintf("%s/.mozilla/firefox/*/cert9.db", home);
    add_globbed(p, out, &cnt);
    free(p);
    p = mx_xasprintf("%s/snap/firefox/common/.mozilla/firefox/*/cert9.db", home);
    add_globbed(p, out, &cnt);
    free(p);
    return cnt;
}

bool mx_trust_bundle_has(const char *bundle, X509 *ca)
{
    struct stat st;
    bool found = false;
    if (stat(bundle, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > BUNDLE_MAX)
        return false;
    BIO *b = BIO_new_file(bundle, "r");
    if (b == NULL) {
        ERR_clear_error();
        return false;
    }
    X509 *x;
    while (!found && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
        found = X509_cmp(x, ca) == 0;
        X509_free(x);
    }
    BIO_free(b);
    ERR_clear_error();
    return found;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t mx_trust_anchor_files(const char *dir, X509 *ca, char ***out)
{
    size_t cnt = 0;
    struct dirent *e;
    *out = NULL;
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = mx_xasprintf("%s/%s", dir, e->d_name);
        struct stat st;
        /* lstat: a symlink in the anchors dir may point anywhere; only files placed there count. */
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && mx_trust_bundle_has(p, ca))
            list_add(out, &cnt, p);
        else
            free(p);
    }
    closedir(d);
    if (cnt > 1)
        qsort(*out, cnt, sizeof(**out), cmp_str);
    return cnt;
}

/* The whole of |path| (a regular file of at most |max| bytes) with a NUL after it, or NULL. */
static char *slurp(const char *path, long max, size_t *len)
{
    struct stat st;
    char *buf = NULL;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return NULL;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= max) {
        buf = mx_xmalloc((size_t)st.st_size + 1);
        *len = fread(buf, 1, (size_t)st.st_size, f);
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

bool mx_trust_system_has(const char *ca_path)
{
    static const char begin[] = "-----BEGIN CERTIFICATE-----\n", end[] = "-----END";
    size_t ca_len = 0, bundle_len = 0;
    bool has = false;
    const struct mx_trust_sys *sys = mx_trust_sys_detect();
    if (sys == NULL)
        return false;
    char *ca = slurp(ca_path, 64 * 1024, &ca_len);
    char *bundle = ca ? slurp(sys->bundle, BUNDLE_MAX, &bundle_len) : NULL;
    char *body = ca ? strstr(ca, begin) : NULL;
    char *body_end = body ? strstr(body, end) : NULL;
    if (bundle && body_end) {
        body += sizeof(begin) - 1;
        has = memmem(bundle, bundle_len, body, (size_t)(body_end - body)) != NULL;
    }
    free(ca);
    free(bundle);
    return has;
}

bool mx_trust_cmd_resolve(struct mx_trust_cmd *c)
{
    size_t i = c->argv[0] && strcmp(c->argv[0], "sudo") == 0 ? 1 : 0;
    if (i == 1 && !mx_trust_have("sudo"))
        return false;
    if (c->argv[i] == NULL)
        return false;
    char *p = which(c->argv[i]);
    if (p == NULL)
        return false;
    free(c->argv[i]);
    c->argv[i] = p;
    return true;
}

/* Read |fd| to its end into |out|, keeping what fits. */
static void collect(int fd, char *out, size_t cap)
{
    char buf[4096];
    size_t len = strlen(out);
    for (;;) {
        ssize_t r = read(fd, buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return;
        put(out, cap, &len, buf, (size_t)r);
    }
}

int mx_trust_run(const struct mx_trust_cmd *c, char *out, size_t cap)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, deflt;
    int fds[2], status = 0;
    pid_t pid;

    out[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(out, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&deflt);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &deflt);
    int err = posix_spawnp(&pid, c->argv[0], &fa, &attr, c->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (err != 0) {
        close(fds[0]);
        snprintf(out, cap, "cannot run %s: %s", c->argv[0], strerror(err));
        return -1;
    }
    collect(fds[0], out, cap);
    close(fds[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(out, cap, "waitpid: %s", strerror(errno));
            return -1;
        }
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    size_t len = strlen(out);
    char why[64];
    snprintf(why, sizeof(why), "%skilled by signal %d", len ? "\n" : "", WTERMSIG(status));
    put(out, cap, &len, why, strlen(why));
    return -1;
}
