/* SPDX-License-Identifier: MIT */
/*
 * Secret references ("env:", "file:", "vault:", "cmd:") checked, shown and
 * resolved into struct mx_secret. Resolution happens at start and reload
 * only, so it may block (a "cmd:" reference waits up to
 * MX_SECRET_CMD_TIMEOUT_MS). Every message names the reference; none ever
 * holds a byte of the value.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "err.h"
#include "keyring.h"
#include "path.h"
#include "secret.h"
#include "secret_int.h"
#include "secret_ref.h"
#include "proc.h"
#include "vault.h"

#define MX_SECRET_CMD_TIMEOUT_MS 5000

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_blank(const char *s)
{
    for (; *s; s++) {
        if (*s != ' ' && *s != '\t')
            return false;
    }
    return true;
}

/* systemd's credential names: no '/', not "." or "..", at most 255 bytes. */
static bool cred_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 255 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == ':' || c == '-'))
            return false;
    }
    return true;
}

const char *mx_secret_ref_check(const char *ref)
{
    if (ref == NULL || ref[0] == '\0')
        return "empty secret reference";
    if (has_prefix(ref, "env:")) {
        if (!mx_env_name_is_valid(ref + 4, strlen(ref + 4)))
            return "env: needs a variable name ([A-Za-z_][A-Za-z0-9_]*)";
        return NULL;
    }
    if (has_prefix(ref, "vault:")) {
        if (!mx_vault_name_is_valid(ref + 6))
            return "vault: needs an entry name of 1 to 64 characters from A-Za-z0-9_.-";
        return NULL;
    }
    if (has_prefix(ref, "file:")) {
        if (ref[5] == '\0')
            return "file: needs a path";
        return NULL;
    }
    if (has_prefix(ref, "cmd:")) {
        if (is_blank(ref + 4))
            return "cmd: needs a command";
        return NULL;
    }
    if (has_prefix(ref, "keyring:")) {
        const char *slash = strchr(ref + 8, '/');
        if (slash == NULL || slash == ref + 8 || slash[1] == '\0')
            return "keyring: needs SERVICE/ACCOUNT (the item's service and account attributes)";
        return NULL;
    }
    if (has_prefix(ref, "cred:")) {
        if (!cred_name_ok(ref + 5))
            return "cred: needs a credential name of 1 to 255 characters from A-Za-z0-9_.:-";
        return NULL;
    }
    return "unknown kind of secret reference; use vault:NAME, env:NAME, file:PATH, "
           "cmd:COMMAND, keyring:SERVICE/ACCOUNT or cred:NAME";
}

const char *mx_secret_ref_show(const char *ref, char *out, size_t cap)
{
    if (mx_secret_ref_check(ref) != NULL) {
        snprintf(out, cap, "(not a secret reference)");
        return out;
    }
    if (!has_prefix(ref, "cmd:")) {
        snprintf(out, cap, "%s", ref);
        return out;
    }
    const char *prog = ref + 4 + strspn(ref + 4, " \t");
    snprintf(out, cap, "cmd:%.*s", (int)strcspn(prog, " \t"), prog);
    return out;
}

static int from_env(const char *ref, const char *name, char **out, size_t *len,
                    struct mx_diag *diag)
{
    const char *v = getenv(name);
    if (v == NULL) {
        mx_diag_set(diag, NULL, 0, 0, "%s: environment variable %s is not set", ref, name);
        return MX_ENOTFOUND;
    }
    if (v[0] == '\0') {
        mx_diag_set(diag, NULL, 0, 0, "%s: environment variable %s is empty", ref, name);
        return MX_EINVAL;
    }
    *len = strlen(v);
    *out = mx_xstrndup(v, *len);
    return 0;
}

static int from_file(const char *ref, const char *path, const char *dir, char **out, size_t *len,
                     struct mx_diag *diag)
{
    char why[512];
    char *full = mx_path_resolve(dir, path);
    /* the path tried, where it is not the one written */
    char *what =
        strcmp(full, path) == 0 ? mx_xstrdup("secret file") : mx_xasprintf("secret file %s", full);
    int rc = mx_private_file_read(full, what, MX_SECRET_MAX_LEN, out, len, why, sizeof(why));
    free(what);
    free(full);
    if (rc)
        mx_diag_set(diag, NULL, 0, 0, "%s: %s", ref, why);
    return rc;
}

/* systemd's LoadCredential=/LoadCredentialEncrypted=: a file in the
 * directory the service manager names. */
static int from_cred(const char *ref, const char *name, char **out, size_t *len,
                     struct mx_diag *diag)
{
    char why[256];
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    if (dir == NULL || dir[0] == '\0') {
        mx_diag_set(diag, NULL, 0, 0,
                    "%s: $CREDENTIALS_DIRECTORY is not set; cred: works in a systemd unit with "
                    "LoadCredential=%s:PATH or LoadCredentialEncrypted=%s:PATH",
                    ref, name, name);
        return MX_ENOTFOUND;
    }
    char *path = mx_xasprintf("%s/%s", dir, name);
    int rc = mx_private_file_read(path, "credential file", MX_SECRET_MAX_LEN, out, len, why,
                                  sizeof(why));
    if (rc)
        mx_diag_set(diag, NULL, 0, 0, "%s: %s (%s)", ref, why, path);
    free(path);
    return rc;
}

static int from_keyring(const char *ref, const char *what, char **out, size_t *len,
                        struct mx_diag *diag)
{
    char why[512];
    const char *slash = strchr(what, '/');
    char *service = mx_xstrndup(what, (size_t)(slash - what));
    int rc = mx_keyring_lookup(service, slash + 1, out, len, why, sizeof(why));
    if (rc)
        mx_diag_set(diag, NULL, 0, 0, "%s: %s", ref, why);
    free(service);
    return rc;
}

static int from_vault(const char *ref, const char *name, const char *vault_path,
                      struct mx_secret **out, struct mx_diag *diag)
{
    struct mx_diag vd;
    char text[sizeof(vd.msg) + sizeof(vd.file) + 32];
    char *path = vault_path ? mx_path_expand(vault_path) : mx_vault_default_path();
    memset(&vd, 0, sizeof(vd));
    int rc = mx_vault_get(path, name, out, &vd);
    free(path);
    if (rc)
        mx_diag_set(diag, NULL, 0, 0, "%s: %s", ref, mx_diag_format(&vd, text, sizeof(text)));
    return rc;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_and_reap(pid_t pid)
{
    int status;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

static int timed_out(pid_t pid, const char *ref, struct mx_diag *diag)
{
    kill_and_reap(pid);
    mx_diag_set(diag, NULL, 0, 0, "%s: command timed out after %d s", ref,
                MX_SECRET_CMD_TIMEOUT_MS / 1000);
    return MX_ETIMEDOUT;
}

static int too_much(const char *ref, struct mx_diag *diag)
{
    mx_diag_set(diag, NULL, 0, 0, "%s: command printed more than %d bytes", ref, MX_SECRET_MAX_LEN);
    return MX_ELIMIT;
}

/* Non-blocking reads of what is left in the pipe. */
static int drain(int fd, char *buf, size_t *len, const char *ref, struct mx_diag *diag)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    for (;;) {
        ssize_t r = read(fd, buf + *len, MX_SECRET_MAX_LEN + 1 - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        *len += (size_t)r;
        if (*len > MX_SECRET_MAX_LEN)
            return too_much(ref, diag);
    }
}

/*
 * Collects the child's stdout until it exits, within the timeout. Once it has
 * exited, what it wrote is in the pipe; anything it left running in the
 * background may hold the pipe open, so EOF is not waited for.
 */
static int collect(pid_t pid, int fd, char *buf, size_t *len, const char *ref, struct mx_diag *diag)
{
    int64_t deadline = now_ms() + MX_SECRET_CMD_TIMEOUT_MS;
    bool eof = false;
    int status = 0;

    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w < 0 && errno != EINTR) {
            mx_diag_set(diag, NULL, 0, 0, "%s: waitpid: %s", ref, strerror(errno));
            return MX_EIO;
        }
        if (w == pid) {
            int rc = drain(fd, buf, len, ref, diag);
            if (rc)
                return rc;
            break;
        }
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return timed_out(pid, ref, diag);
        if (eof) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, left < 100 ? (int)left : 100) <= 0)
            continue;
        ssize_t r = read(fd, buf + *len, MX_SECRET_MAX_LEN + 1 - *len);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0) {
            eof = true;
            continue;
        }
        *len += (size_t)r;
        if (*len > MX_SECRET_MAX_LEN) {
            kill_and_reap(pid);
            return too_much(ref, diag);
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        mx_diag_set(diag, NULL, 0, 0, "%s: command exited with status %d", ref,
                    WEXITSTATUS(status));
    else
        mx_diag_set(diag, NULL, 0, 0, "%s: command was killed by signal %d", ref, WTERMSIG(status));
    return MX_EIO;
}

/* No shell: the command is split on spaces and tabs, without quoting. */
static int from_cmd(const char *ref, const char *cmd, char **out, size_t *len, struct mx_diag *diag)
{
    struct mx_argv a;
    char *buf = NULL;
    int fds[2] = {-1, -1};
    pid_t pid;
    int rc = mx_argv_split(cmd, &a);

    if (rc == MX_ELIMIT) {
        mx_diag_set(diag, NULL, 0, 0, "%s: more than %d arguments", ref, MX_SPAWN_MAX_ARGS);
        goto out;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        mx_diag_set(diag, NULL, 0, 0, "%s: pipe: %s", ref, strerror(errno));
        rc = MX_EIO;
        goto out;
    }
    int err = mx_spawn(a.v, environ, fds[1], false, &pid);
    close(fds[1]);
    fds[1] = -1;
    if (err) {
        if (err == ENOENT)
            mx_diag_set(diag, NULL, 0, 0, "%s: command '%s' not found", ref, a.v[0]);
        else
            mx_diag_set(diag, NULL, 0, 0, "%s: cannot run '%s': %s", ref, a.v[0], strerror(err));
        rc = err == ENOENT ? MX_ENOTFOUND : MX_EIO;
        goto out;
    }
    buf = mx_xmalloc(MX_SECRET_MAX_LEN + 1);
    *len = 0;
    rc = collect(pid, fds[0], buf, len, ref, diag);
    if (rc)
        goto out;
    buf[*len] = '\0';
    *out = buf;
    buf = NULL;
out:
    if (buf) {
        OPENSSL_cleanse(buf, MX_SECRET_MAX_LEN + 1);
        free(buf);
    }
    if (fds[0] >= 0)
        close(fds[0]);
    mx_argv_clear(&a);
    return rc;
}

const char *mx_secret_from_output(const char *buf, size_t len, struct mx_secret **out)
{
    *out = NULL;
    /* Files and commands end their output with a line break; one is not part of the value. */
    if (len && buf[len - 1] == '\n') {
        len--;
        if (len && buf[len - 1] == '\r')
            len--;
    }
    const char *why = mx_secret_value_check(buf, len);
    if (why == NULL)
        *out = mx_secret_new(buf, len);
    return why;
}

int mx_secret_resolve(const char *ref, const char *vault_path, const char *dir,
                      struct mx_secret **out, struct mx_diag *diag)
{
    char *buf = NULL;
    size_t len = 0;
    int rc;

    *out = NULL;
    /* Messages name the reference as shown, never a cmd:'s arguments. */
    char shown[256];
    const char *why = mx_secret_ref_check(ref);
    mx_secret_ref_show(ref, shown, sizeof(shown));
    if (why) {
        mx_diag_set(diag, NULL, 0, 0, "%s: %s", shown, why);
        return MX_EINVAL;
    }
    if (has_prefix(ref, "vault:"))
        return from_vault(shown, ref + 6, vault_path, out, diag);
    if (has_prefix(ref, "env:"))
        rc = from_env(shown, ref + 4, &buf, &len, diag);
    else if (has_prefix(ref, "file:"))
        rc = from_file(shown, ref + 5, dir, &buf, &len, diag);
    else if (has_prefix(ref, "cred:"))
        rc = from_cred(shown, ref + 5, &buf, &len, diag);
    else if (has_prefix(ref, "keyring:"))
        rc = from_keyring(shown, ref + 8, &buf, &len, diag);
    else
        rc = from_cmd(shown, ref + 4, &buf, &len, diag);
    if (rc)
        return rc;
    why = mx_secret_from_output(buf, len, out);
    if (why) {
        mx_diag_set(diag, NULL, 0, 0, "%s: %s", shown, why);
        rc = MX_EINVAL;
    }
    OPENSSL_cleanse(buf, len);
    free(buf);
    return rc;
}
