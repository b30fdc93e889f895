/* SPDX-License-Identifier: MIT */
/*
 * The certificates mcplex makes, against a Go client and a browser, each
 * verifying with code of its own: gron (Debian's build, Go 1.19's
 * crypto/x509, which reads SSL_CERT_FILE) and headless Chromium (its own
 * verifier, trusting the NSS db in $HOME/.pki/nssdb). Each fetches GET
 * /health from `mcplex serve` over TLS when it trusts the CA serve made on
 * first run, and fails on the same server without it.
 *
 * The CA's name constraint (permitted DNS:localhost): whoever holds ca.key
 * signs leaves with the openssl tool, served by `openssl s_server` on
 * 127.0.0.1. A leaf for localhost alone is taken by both clients; one that
 * names www.example.com is refused for the constraint, and a leaf with the
 * same names from a CA made without the constraint is taken. Chromium asks for
 * www.example.com itself, sent to 127.0.0.1 by --host-resolver-rules. Go
 * has no such switch and /etc/hosts is not the test's, so gron asks for
 * localhost and gets a leaf for localhost and www.example.com: Go checks
 * every name of the leaf against the constraint.
 *
 * hey, the Go load generator Debian ships, is no use here: it sets
 * InsecureSkipVerify and takes any certificate.
 *
 * Chromium runs with HOME and its profile in the test directory and every
 * host name but localhost unresolvable, so its own background requests go
 * nowhere. Each run is bounded in time, and no process of it is left when
 * it is done: the harness kills its process group, and its crash handlers,
 * which leave that group, are found by a marker in their environment.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "alloc.h"
#include "err.h"
#include "harness.h"
#include "num.h"

/* One gron, certutil, s_server start or Chromium run; Chromium takes about 2 s here. */
#define RUN_TIMEOUT_MS 60000
/* Chromium's helpers outside its process group, after it exited. */
#define GONE_TIMEOUT_MS 5000
#define MAX_LEFT        64

struct world {
    int port;    /* mcplex, TLS on 127.0.0.1 */
    char *certs; /* its state dir's certs: ca.pem, ca.key */
    char *ca;
    char *health;  /* https://localhost:<port>/health */
    char *address; /* 127.0.0.1:<port>, as /health names its listener */
    char *www;     /* what the s_servers serve: answer.json */
    char answer[MX_IT_CANARY_SIZE];
};

static void assert_contains(const char *hay, const char *needle)
{
    if (strstr(hay, needle) == NULL)
        fail_msg("missing \"%s\" in:\n%s", needle, hay);
}

static void assert_lacks(const char *hay, const char *needle)
{
    if (strstr(hay, needle) != NULL)
        fail_msg("unexpected \"%s\" in:\n%s", needle, hay);
}

static void need_tools(void)
{
    const char *argv[] = {"sh", "-c",
                          "command -v gron && command -v chromium && "
                          "command -v certutil && command -v openssl",
                          NULL};
    if (mx_it_run("tools", argv, NULL, RUN_TIMEOUT_MS, NULL) != 0)
        fail_msg("gron, chromium, certutil (libnss3-tools) and openssl are needed; "
                 ".ci/setup installs them");
}

/* mcplex over TLS, in front of a sandbox-sim, with its state dir's own CA
 * (made by this first serve); and the file the s_servers serve. */
static void world_start(struct world *w)
{
    memset(w, 0, sizeof(*w));
    need_tools();
    w->port = mx_it_start_sim_behind_mcplex("", &w->ca);
    w->certs = mx_it_path("certs");
    w->health = mx_xasprintf("https://localhost:%d/health", w->port);
    w->address = mx_xasprintf("127.0.0.1:%d", w->port);
    w->www = mx_it_path("www");
    assert_int_equal(mkdir(w->www, 0700), 0);
    mx_it_canary(w->answer, sizeof(w->answer));
    char *body = mx_xasprintf("{\"answer\":\"%s\"}\n", w->answer);
    char *file = mx_xasprintf("%s/answer.json", w->www);
    assert_int_equal(mx_it_write_file(file, body, strlen(body)), 0);
    free(body);
    free(file);
}

static void world_free(struct world *w)
{
    free(w->certs);
    free(w->ca);
    free(w->health);
    free(w->address);
    free(w->www);
}

/* `openssl s_server -WWW` in w->www with |cert| and |key| on 127.0.0.1;
 * its port. */
static int serve_leaf(const struct world *w, const char *name, const char *cert, const char *key)
{
    int port = mx_it_free_port();
    assert_true(port > 0);
    char *accept = mx_xasprintf("127.0.0.1:%d", port);
    const char *argv[] = {"sh",     "-c",    "cd \"$1\" && shift && exec openssl \"$@\"",
                          "sh",     w->www,  "s_server",
                          "-quiet", "-WWW",  "-accept",
                          accept,   "-cert", cert,
                          "-key",   key,     NULL};
    pid_t pid = mx_it_spawn(name, argv, NULL, NULL);
    assert_true(pid > 0);
    mx_it_wait_listening(pid, port, RUN_TIMEOUT_MS);
    free(accept);
    return port;
}

/* A CA like mcplex's but without its name constraint, made with the openssl
 * tool in the test directory's |name|/ (ca.pem, ca.key); that directory. */
static char *plain_ca(const char *name)
{
    char *dir = mx_it_path(name);
    char *ca = mx_xasprintf("%s/ca.pem", dir);
    char *ca_key = mx_xasprintf("%s/ca.key", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    const char *argv[] = {"openssl",
                          "req",
                          "-x509",
                          "-newkey",
                          "ec",
                          "-pkeyopt",
                          "ec_paramgen_curve:P-256",
                          "-nodes",
                          "-keyout",
                          ca_key,
                          "-subj",
                          "/CN=unconstrained test CA",
                          "-addext",
                          "basicConstraints=critical,CA:true",
                          "-addext",
                          "keyUsage=critical,keyCertSign,cRLSign",
                          "-days",
                          "1",
                          "-out",
                          ca,
                          NULL};
    assert_int_equal(mx_it_run(name, argv, NULL, RUN_TIMEOUT_MS, NULL), 0);
    free(ca);
    free(ca_key);
    return dir;
}

/* ---- Go: gron -------------------------------------------------------- */

/* `gron <url>` trusting |ca| through SSL_CERT_FILE (NULL: the system store
 * alone). Its exit status (4: the fetch failed); its output in *|out|. */
static int gron(const char *name, const char *url, const char *ca, char **out)
{
    char *file = ca ? mx_xasprintf("SSL_CERT_FILE=%s", ca) : mx_xstrdup("SSL_CERT_FILE");
    const char *env[] = {file, "SSL_CERT_DIR", NULL};
    const char *argv[] = {"gron", "-m", url, NULL};
    int rc = mx_it_run(name, argv, env, RUN_TIMEOUT_MS, out);
    assert_true(rc >= 0);
    fprintf(stderr, "it_tls_clients: %s: exit %d:\n%s\n", name, rc, *out);
    free(file);
    return rc;
}

static void test_go_client(void **state)
{
    (void)state;
    struct world w;
    char *out = NULL;

    world_start(&w);
    assert_int_equal(gron("gron", w.health, w.ca, &out), 0);
    assert_contains(out, "json.status = \"ok\";");
    char *line = mx_xasprintf("json.listen.address = \"%s\";", w.address);
    assert_contains(out, line);
    free(line);
    assert_contains(out, "json.listen.tls = true;");
    free(out);
    char *by_ip = mx_xasprintf("https://127.0.0.1:%d/health", w.port);
    assert_int_equal(gron("gron-ip", by_ip, w.ca, &out), 0);
    assert_contains(out, "json.status = \"ok\";");
    free(out);
    free(by_ip);
    /* The check does check: without the CA the same fetch fails. */
    assert_int_equal(gron("gron-untrusted", w.health, NULL, &out), 4);
    assert_contains(out, "x509: certificate signed by unknown authority");
    assert_lacks(out, "json.status");
    free(out);

    char *cert, *key, *url;
    char *answer = mx_xasprintf("json.answer = \"%s\";", w.answer);
    mx_it_sign_leaf(w.certs, "leaf-localhost", "localhost", "DNS:localhost", &cert, &key);
    url = mx_xasprintf("https://localhost:%d/answer.json", serve_leaf(&w, "s_server", cert, key));
    assert_int_equal(gron("gron-leaf-localhost", url, w.ca, &out), 0);
    assert_contains(out, answer);
    free(out);
    free(url);
    free(cert);
    free(key);
    mx_it_sign_leaf(w.certs, "leaf-public", "localhost", "DNS:localhost,DNS:www.example.com", &cert,
                    &key);
    url = mx_xasprintf("https://localhost:%d/answer.json",
                       serve_leaf(&w, "s_server-public", cert, key));
    assert_int_equal(gron("gron-leaf-public", url, w.ca, &out), 4);
    assert_contains(out, "DNS name \"www.example.com\" is not permitted by any constraint");
    assert_lacks(out, w.answer);
    free(out);
    free(url);
    free(cert);
    free(key);
    /* A leaf with the same names from a CA without the constraint is taken: the refusal is the
     * constraint. */
    char *plain = plain_ca("plain-ca");
    char *plain_pem = mx_xasprintf("%s/ca.pem", plain);
    mx_it_sign_leaf(plain, "leaf-public-plain", "localhost", "DNS:localhost,DNS:www.example.com",
                    &cert, &key);
    url = mx_xasprintf("https://localhost:%d/answer.json",
                       serve_leaf(&w, "s_server-public-plain", cert, key));
    assert_int_equal(gron("gron-leaf-public-plain", url, plain_pem, &out), 0);
    assert_contains(out, answer);
    free(out);
    free(url);
    free(cert);
    free(key);
    free(plain);
    free(plain_pem);
    free(answer);
    world_free(&w);
    mx_it_pass();
}

/* ---- the browser: headless Chromium ---------------------------------- */

/* A HOME whose NSS db (the one Chromium on Linux reads) trusts |ca| for
 * servers, or nothing (NULL); its path. */
static char *nss_home(const char *name, const char *ca)
{
    char *home = mx_it_path(name);
    char *pki = mx_xasprintf("%s/.pki", home);
    char *db = mx_xasprintf("sql:%s/.pki/nssdb", home);
    assert_int_equal(mkdir(home, 0700), 0);
    assert_int_equal(mkdir(pki, 0700), 0);
    assert_int_equal(mkdir(db + 4, 0700), 0);
    const char *create[] = {"certutil", "-N", "-d", db, "--empty-password", NULL};
    assert_int_equal(mx_it_run("certutil-new", create, NULL, RUN_TIMEOUT_MS, NULL), 0);
    if (ca) {
        const char *add[] = {"certutil", "-A",  "-d", db, "-n", "mcplex local CA",
                             "-t",       "C,,", "-i", ca, NULL};
        assert_int_equal(mx_it_run("certutil-add", add, NULL, RUN_TIMEOUT_MS, NULL), 0);
    }
    free(pki);
    free(db);
    return home;
}

/* A Chromium run: the process group the harness made for it, and the
 * marker ("NAME=value") in the environment of every process it started. */
struct run {
    pid_t pgid;
    const char *marker;
};

/* Whether the NUL-separated environment of /proc/|pid| holds |entry|. Chromium's
 * zygotes and renderers show none there; its crash handlers do. */
static bool environ_has(const char *pid, const char *entry)
{
    static char env[256 * 1024];
    char path[300];
    snprintf(path, sizeof(path), "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = 0;
    ssize_t r;
    while (len < sizeof(env) - 1 && (r = read(fd, env + len, sizeof(env) - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    env[len] = '\0';
    for (size_t off = 0; off < len; off += strlen(env + off) + 1) {
        if (strcmp(env + off, entry) == 0)
            return true;
    }
    return false;
}

/* The live (not zombie) processes of |run|: in its process group, or
 * marked; their pids into |pids|, how many. */
static int run_procs(const struct run *run, pid_t *pids, int cap)
{
    int n = 0;
    DIR *d = opendir("/proc");
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL && n < cap;) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        char *line = mx_it_read_file(path, NULL);
        if (line == NULL)
            continue;
        /* pid (comm) state ppid pgrp ...: comm may hold anything but ends at the last ')' */
        char state = 0;
        long pgid = 0;
        const char *rp = strrchr(line, ')');
        bool parsed = rp && sscanf(rp + 1, " %c %*d %ld", &state, &pgid) == 2;
        free(line);
        if (!parsed || state == 'Z')
            continue;
        int64_t pid = 0;
        if (mx_num_parse(e->d_name, strlen(e->d_name), 1, INT32_MAX, &pid) != 0)
            continue;
        if (pgid == (long)run->pgid || environ_has(e->d_name, run->marker))
            pids[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

/* run_procs() until none is left or |ms| have passed; how many are left. */
static int wait_gone(const struct run *run, pid_t *pids, int ms)
{
    struct timespec pause = {0, 50 * 1000 * 1000};
    int n;
    for (int waited = 0; (n = run_procs(run, pids, MAX_LEFT)) > 0 && waited < ms; waited += 50)
        nanosleep(&pause, NULL);
    return n;
}

/* No process of |run| is left once it exited: the harness killed its
 * process group; what left the group (the crash handler) gets
 * GONE_TIMEOUT_MS to go by itself, then SIGKILL by pid. */
static void assert_none_left(const struct run *run)
{
    pid_t pids[MAX_LEFT];
    int n = wait_gone(run, pids, GONE_TIMEOUT_MS);
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "it_tls_clients: Chromium's pid %ld outlived its run; killing it\n",
                (long)pids[i]);
        kill(pids[i], SIGKILL);
    }
    n = wait_gone(run, pids, GONE_TIMEOUT_MS);
    if (n > 0)
        fail_msg("%d Chromium processes are still there after SIGKILL (pid %ld first)", n,
                 (long)pids[0]);
}

struct page {
    char *dom;    /* what --dump-dom printed: empty when the page did not load */
    char *log;    /* Chromium's stderr */
    char *netlog; /* --log-net-log, JSON */
};

static void page_clear(struct page *pg)
{
    free(pg->dom);
    free(pg->log);
    free(pg->netlog);
    memset(pg, 0, sizeof(*pg));
}

static char *test_file(const char *name, const char *ext)
{
    char *file = mx_xasprintf("%s.%s", name, ext);
    char *path = mx_it_path(file);
    free(file);
    return path;
}

static char *read_or_empty(const char *path)
{
    char *text = mx_it_read_file(path, NULL);
    return text ? text : mx_xstrdup("");
}

/*
 * `chromium --headless=new --dump-dom <url>` with HOME |home| and a new
 * profile; host names other than localhost do not resolve, but for the rule
 * |map| (NULL: none), e.g. "MAP www.example.com 127.0.0.1".
 */
static void chromium(const char *name, const char *home, const char *map, const char *url,
                     struct page *pg)
{
    char tag[MX_IT_CANARY_SIZE];
    mx_it_canary(tag, sizeof(tag));
    char *dom = test_file(name, "html");
    char *log = test_file(name, "log");
    char *netlog = test_file(name, "netlog.json");
    char *profile = test_file(name, "profile");
    char *rules = mx_xasprintf("--host-resolver-rules=%s%sMAP * ~NOTFOUND, EXCLUDE localhost",
                               map ? map : "", map ? ", " : "");
    char *user_data = mx_xasprintf("--user-data-dir=%s", profile);
    char *net_log = mx_xasprintf("--log-net-log=%s", netlog);
    char *home_env = mx_xasprintf("HOME=%s", home);
    char *xdg_config = mx_xasprintf("XDG_CONFIG_HOME=%s/.config", home);
    char *xdg_cache = mx_xasprintf("XDG_CACHE_HOME=%s/.cache", home);
    char *marker = mx_xasprintf("MX_IT_CHROMIUM_RUN=%s", tag);
    const char *env[] = {home_env,      xdg_config,    xdg_cache,    marker,
                         "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                         "ALL_PROXY",   "all_proxy",   NULL};
    /* stdout (the DOM) to its own file; stderr to the log */
    const char *argv[] = {"sh",
                          "-c",
                          "out=$1; shift; exec \"$@\" >\"$out\"",
                          "sh",
                          dom,
                          "chromium",
                          "--headless=new",
                          "--no-sandbox", /* the tests run as root */
                          "--disable-gpu",
                          "--no-first-run",
                          "--disable-background-networking",
                          "--disable-component-update",
                          "--disable-sync",
                          "--disable-default-apps",
                          "--no-proxy-server",
                          user_data,
                          net_log,
                          rules,
                          "--dump-dom",
                          url,
                          NULL};
    pid_t pid = mx_it_spawn(name, argv, env, log);
    assert_true(pid > 0);
    int st = mx_it_wait_exit(pid, RUN_TIMEOUT_MS);
    if (st == MX_ETIMEDOUT) {
        mx_it_signal(pid, SIGKILL);
        mx_it_wait_exit(pid, RUN_TIMEOUT_MS);
    }
    const struct run run = {pid, marker};
    assert_none_left(&run);
    if (st < 0)
        fail_msg("%s: chromium did not finish in %d ms", name, RUN_TIMEOUT_MS);
    pg->dom = read_or_empty(dom);
    pg->log = read_or_empty(log);
    pg->netlog = read_or_empty(netlog);
    fprintf(stderr, "it_tls_clients: %s: %s, DOM:\n%s\n", name, WIFEXITED(st) ? "exited" : "killed",
            pg->dom);
    free(dom);
    free(log);
    free(netlog);
    free(profile);
    free(rules);
    free(user_data);
    free(net_log);
    free(home_env);
    free(xdg_config);
    free(xdg_cache);
    free(marker);
}

/* A page that failed for |error| (net::ERR_...): nothing dumped. */
static void assert_failed(const struct page *pg, const char *error)
{
    char *line = mx_xasprintf("Page load failed: %s\n", error);
    assert_contains(pg->log, line);
    assert_int_equal(strlen(pg->dom), 0);
    free(line);
}

static void test_browser(void **state)
{
    (void)state;
    struct world w;
    struct page pg = {0};

    world_start(&w);
    char *trusted = nss_home("home", w.ca);
    char *untrusted = nss_home("home-untrusted", NULL);
    chromium("chromium", trusted, NULL, w.health, &pg);
    assert_contains(pg.dom, "\"status\":\"ok\"");
    char *listen =
        mx_xasprintf("\"listen\":{\"address\":\"%s\",\"port\":%d,\"tls\":true}", w.address, w.port);
    assert_contains(pg.dom, listen);
    free(listen);
    assert_lacks(pg.log, "Page load failed");
    page_clear(&pg);
    /* The check does check: without the CA in its NSS db the same page fails. */
    chromium("chromium-untrusted", untrusted, NULL, w.health, &pg);
    assert_failed(&pg, "net::ERR_CERT_AUTHORITY_INVALID");
    page_clear(&pg);

    char *cert, *key, *url;
    mx_it_sign_leaf(w.certs, "leaf-localhost", "localhost", "DNS:localhost", &cert, &key);
    url = mx_xasprintf("https://localhost:%d/answer.json", serve_leaf(&w, "s_server", cert, key));
    chromium("chromium-leaf-localhost", trusted, NULL, url, &pg);
    assert_contains(pg.dom, w.answer);
    page_clear(&pg);
    free(url);
    free(cert);
    free(key);
    mx_it_sign_leaf(w.certs, "leaf-public", "www.example.com", "DNS:www.example.com", &cert, &key);
    url = mx_xasprintf("https://www.example.com:%d/answer.json",
                       serve_leaf(&w, "s_server-public", cert, key));
    chromium("chromium-leaf-public", trusted, "MAP www.example.com 127.0.0.1", url, &pg);
    assert_failed(&pg, "net::ERR_CERT_INVALID");
    /* the verifier's own words, in the net log's CERT_VERIFY_PROC event */
    assert_contains(pg.netlog, "(CN=www.example.com) -----\\nERROR: Not permitted by name "
                               "constraints");
    page_clear(&pg);
    free(url);
    free(cert);
    free(key);
    /* A leaf with the same names from a CA without the constraint is taken: the refusal is the
     * constraint. */
    char *plain = plain_ca("plain-ca");
    char *plain_pem = mx_xasprintf("%s/ca.pem", plain);
    char *plain_home = nss_home("home-plain", plain_pem);
    mx_it_sign_leaf(plain, "leaf-public-plain", "www.example.com", "DNS:www.example.com", &cert,
                    &key);
    url = mx_xasprintf("https://www.example.com:%d/answer.json",
                       serve_leaf(&w, "s_server-public-plain", cert, key));
    chromium("chromium-leaf-public-plain", plain_home, "MAP www.example.com 127.0.0.1", url, &pg);
    assert_contains(pg.dom, w.answer);
    page_clear(&pg);
    free(url);
    free(cert);
    free(key);
    free(plain);
    free(plain_pem);
    free(plain_home);
    free(trusted);
    free(untrusted);
    world_free(&w);
    mx_it_pass();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_go_client, mx_it_setup, mx_it_teardown),
        cmocka_unit_test_setup_teardown(test_browser, mx_it_setup, mx_it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
