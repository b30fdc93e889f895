/* SPDX-License-Identifier: MIT */
/*
 * `mcplex status`: GET /health of a running gateway and print a table of
 * the listener and the upstreams (cmd_status.h). The address comes from
 * --url (the gateway's base, its /mcp or /mcp/<server> URL) or from [listen]
 * of the config, read alone when the rest of the file has an error; a TLS
 * listener with the default certificate is verified against the local CA in
 * <state_dir>/certs (for --url, the default state dir's, or --ca). `reload`
 * finds the gateway through the same functions.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "alloc.h"
#include "buf.h"
#include "certs.h"
#include "cmd_status.h"
#include "cmdline.h"
#include "err.h"
#include "model.h"
#include "num.h"
#include "proc.h"
#include "secret.h"
#include "secret_ref.h"

#define HEALTH_CAP        (4 * 1024 * 1024)
#define STATUS_TIMEOUT_MS 5000L
#define PROBE_TIMEOUT_MS  1500L /* serve asking who holds its port */
#define NAME_COL_MAX      32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mcplex status [-c FILE | --url URL [--ca FILE]] [--json | --open]\n"
            "\n"
            "Asks a running gateway for GET /health and prints its listener and\n"
            "upstreams: state, since when, requests, failures, wakes, tools and the\n"
            "median upstream latency of the last minute, then each upstream's last\n"
            "error (unreachable, tls, auth-failed, gone) and its age. Of a config,\n"
            "only [listen] and [proxy] must be right: an error elsewhere is shown as\n"
            "a warning.\n"
            "\n" MX_STATUS_WHERE_HELP "  --json             print the /health JSON as it came\n"
            "  --open             open the status page in the browser (xdg-open), else\n"
            "                     print its link: a one-time login link, asked of the\n"
            "                     gateway with the client token ([listen] client_token of\n"
            "                     the config; with --url, $" MX_STATUS_TOKEN_ENV "), valid once\n"
            "                     within a minute\n"
            "  -h, --help         this text\n"
            "\n"
            "Exit status: 0 the gateway answered, 1 it did not, 2 usage error.\n");
}

/* ---- table ---- */

static const char *str_or_dash(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "-";
}

static void int_or_dash(char *out, size_t cap, const json_t *v)
{
    if (json_is_integer(v))
        snprintf(out, cap, "%lld", (long long)json_integer_value(v));
    else
        snprintf(out, cap, "-");
}

static void age(char *out, size_t cap, long long s)
{
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(out, cap, "%llds", s);
    else if (s < 2 * 3600)
        snprintf(out, cap, "%lldm", s / 60);
    else if (s < 2 * 86400)
        snprintf(out, cap, "%lldh%02lldm", s / 3600, s / 60 % 60);
    else
        snprintf(out, cap, "%lldd%02lldh", s / 86400, s / 3600 % 24);
}

/* "2025-01-02T03:04:05Z" (health.c's format) → "12m ago"; as given otherwise. */
static void since(char *out, size_t cap, const char *iso, time_t now)
{
    struct tm tm;
    char a[32];
    memset(&tm, 0, sizeof(tm));
    const char *end = iso ? strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
    if (end == NULL || *end != '\0') {
        snprintf(out, cap, "%s", iso ? iso : "-");
        return;
    }
    age(a, sizeof(a), (long long)(now - timegm(&tm)));
    snprintf(out, cap, "%s ago", a);
}

/* The aggregate's view of |name| (tools listed), from health.mcp.upstreams. */
static const json_t *mcp_upstream(const json_t *health, const char *name)
{
    const json_t *ups = json_object_get(json_object_get(health, "mcp"), "upstreams");
    size_t i;
    const json_t *u;
    json_array_foreach(ups, i, u)
    {
        const char *n = json_string_value(json_object_get(u, "name"));
        if (n && strcmp(n, name) == 0)
            return u;
    }
    return NULL;
}

void mx_status_render(FILE *out, const json_t *health, const char *url, time_t now)
{
    char up[32], conns[24], infl[24], refused[24], sessions[24];
    const json_t *uptime = json_object_get(health, "uptime_s");
    const json_t *listen = json_object_get(health, "listen");

    if (json_is_integer(uptime))
        age(up, sizeof(up), (long long)json_integer_value(uptime));
    else
        snprintf(up, sizeof(up), "-");
    fprintf(out, "mcplex %s at %s: %s, up %s\n", str_or_dash(health, "version"), url,
            str_or_dash(health, "status"), up);

    int_or_dash(conns, sizeof(conns), json_object_get(health, "connections"));
    int_or_dash(infl, sizeof(infl), json_object_get(health, "inflight"));
    int_or_dash(refused, sizeof(refused), json_object_get(health, "refused"));
    int_or_dash(sessions, sizeof(sessions),
                json_object_get(json_object_get(health, "mcp"), "sessions"));
    if (json_is_object(listen)) {
        char port[24];
        int_or_dash(port, sizeof(port), json_object_get(listen, "port"));
        fprintf(out, "listener  %s (port %s, %s)\n", str_or_dash(listen, "address"), port,
                json_is_true(json_object_get(listen, "tls")) ? "TLS" : "plain HTTP");
    }
    fprintf(out, "clients   %s connections, %s requests in flight, %s sessions, %s refused\n",
            conns, infl, sessions, refused);

    const json_t *ups = json_object_get(health, "upstreams");
    size_t i;
    const json_t *u;
    int w = (int)strlen("SERVER");
    json_array_foreach(ups, i, u)
    {
        size_t n = strlen(str_or_dash(u, "name"));
        if ((int)n > w)
            w = n > NAME_COL_MAX ? NAME_COL_MAX : (int)n;
    }
    fprintf(out, "\n%-*s  %-11s  %-10s  %8s  %8s  %5s  %5s  %9s\n", w, "SERVER", "STATE", "SINCE",
            "REQUESTS", "FAILURES", "WAKES", "TOOLS", "P50 (1m)");
    json_array_foreach(ups, i, u)
    {
        const char *name = str_or_dash(u, "name");
        char s[40], req[24], fail[24], wakes[24], tools[24], p50[24];
        since(s, sizeof(s), json_string_value(json_object_get(u, "since")), now);
        int_or_dash(req, sizeof(req), json_object_get(u, "requests"));
        int_or_dash(fail, sizeof(fail), json_object_get(u, "failures"));
        int_or_dash(wakes, sizeof(wakes), json_object_get(u, "wakes"));
        int_or_dash(tools, sizeof(tools), json_object_get(mcp_upstream(health, name), "tools"));
        const json_t *p = json_object_get(u, "p50_ms_1m");
        if (json_is_number(p))
            snprintf(p50, sizeof(p50), "%.1f ms", json_number_value(p));
        else
            snprintf(p50, sizeof(p50), "-");
        fprintf(out, "%-*.*s  %-11s  %-10s  %8s  %8s  %5s  %5s  %9s\n", w, NAME_COL_MAX, name,
                str_or_dash(u, "state"), s, req, fail, wakes, tools, p50);
    }
    if (json_array_size(ups) == 0)
        fprintf(out, "(no upstreams configured)\n");

    /* each upstream's last error, as /health classified it */
    bool head = false;
    json_array_foreach(ups, i, u)
    {
        const json_t *e = json_object_get(u, "last_error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const json_t *a = json_object_get(e, "age_s");
        if (msg == NULL)
            continue;
        if (!head)
            fprintf(out, "\nLAST ERROR\n");
        head = true;
        if (json_is_integer(a))
            fprintf(out, "%-*.*s  %s (%lld s ago)\n", w, NAME_COL_MAX, str_or_dash(u, "name"), msg,
                    (long long)json_integer_value(a));
        else
            fprintf(out, "%-*.*s  %s\n", w, NAME_COL_MAX, str_or_dash(u, "name"), msg);
    }
}

/* ---- finding the gateway ---- */

struct target {
    char *url;     /* .../health */
    char *ca_file; /* NULL: the system store */
};

static void target_clear(struct target *t)
{
    free(t->url);
    free(t->ca_file);
}

/* The local CA in the certs directory of |state_dir|; with |if_there|, NULL
 * when it is not there. Caller frees. */
static char *local_ca(const char *state_dir, bool if_there)
{
    struct mx_certs_paths p;
    char *dir = mx_certs_default_dir(state_dir);
    mx_certs_paths_init(&p, dir);
    char *ca = !if_there || access(p.ca_cert, F_OK) == 0 ? mx_xstrdup(p.ca_cert) : NULL;
    mx_certs_paths_clear(&p);
    free(dir);
    return ca;
}

int mx_status_gateway_base(const struct mx_config *cfg, char **base, char **ca_file)
{
    const char *a = cfg->listen.address;
    const char *colon = strrchr(a, ':');
    int64_t port;
    *base = NULL;
    *ca_file = NULL;
    if (colon == NULL || mx_num_parse(colon + 1, strlen(colon + 1), 0, 65535, &port) != 0) {
        fprintf(stderr, "mcplex: %s: [listen] address '%s' has no port\n", cfg->path, a);
        return MX_EINVAL;
    }
    if (port == 0) {
        fprintf(stderr,
                "mcplex: %s: [listen] address '%s' asks for any free port; pass the "
                "gateway's address with --url\n",
                cfg->path, a);
        return MX_EINVAL;
    }
    char *host = mx_xstrndup(a, (size_t)(colon - a));
    const char *h = host;
    if (strcmp(h, "0.0.0.0") == 0 || strcmp(h, "") == 0)
        h = "127.0.0.1";
    else if (strcmp(h, "[::]") == 0)
        h = "[::1]";
    *base = mx_xasprintf("%s://%s:%d", cfg->listen.tls ? "https" : "http", h, (int)port);
    free(host);
    /* The default certificate chains to the local CA; a configured one is
     * expected to chain to something the system trusts. */
    if (cfg->listen.tls && cfg->listen.cert == NULL)
        *ca_file = local_ca(cfg->proxy.state_dir, false);
    return 0;
}

/* Where the segment of |url| that ends at |end| (exclusive) starts. */
static size_t segment_start(const char *url, size_t from, size_t end)
{
    size_t i = end;
    while (i > from && url[i - 1] != '/')
        i--;
    return i;
}

static bool segment_is(const char *url, size_t start, size_t end, const char *name)
{
    return end - start == strlen(name) && memcmp(url + start, name, end - start) == 0;
}

char *mx_status_health_url(const char *url)
{
    size_t skip;
    if (strncasecmp(url, "https://", 8) == 0)
        skip = 8;
    else if (strncasecmp(url, "http://", 7) == 0)
        skip = 7;
    else
        return NULL;
    size_t path = skip + strcspn(url + skip, "/?#");
    if (path == skip)
        return NULL;
    size_t end = path + strcspn(url + path, "?#");
    while (end > path && url[end - 1] == '/')
        end--;
    size_t last = segment_start(url, path, end);
    if (end > path && segment_is(url, last, end, "health"))
        return mx_xstrndup(url, end);
    /* what serve tells clients: <base>/mcp and <base>/mcp/<server> */
    if (end > path && segment_is(url, last, end, "mcp")) {
        end = last - 1;
    } else if (last > path + 1) {
        size_t prev = segment_start(url, path, last - 1);
        if (segment_is(url, prev, last - 1, "mcp"))
            end = prev - 1;
    }
    return mx_xasprintf("%.*s/health", (int)end, url);
}

/*
 * The config |arg| names (mx_config_find), for its [listen] and [proxy]
 * alone when something else in it is wrong (said as a warning). NULL after
 * printing why not.
 */
static struct mx_config *where_config(const char *arg)
{
    struct mx_diag d = {0}, ld = {0};
    struct mx_config *cfg = NULL;
    char msg[1024];
    char *path = mx_config_find(arg);
    int rc = mx_config_load(path, &cfg, &d);
    if (rc == MX_EINVAL && mx_config_load_listen(path, &cfg, &ld) == 0) {
        fprintf(stderr,
                "mcplex: warning: %s\n"
                "mcplex: warning: asking the gateway that [listen] names; it serves the "
                "config it last loaded\n",
                mx_diag_format(&d, msg, sizeof(msg)));
    } else if (rc == MX_EINVAL) {
        fprintf(stderr,
                "mcplex: %s\n"
                "mcplex: cannot tell the gateway's address from this config; fix it, or pass "
                "--url URL\n",
                mx_diag_format(&ld, msg, sizeof(msg)));
    } else if (rc != 0) {
        fprintf(stderr,
                "mcplex: %s\n"
                "mcplex: pass -c FILE, or --url URL with the gateway's address (e.g. "
                "https://127.0.0.1:8443)\n",
                mx_diag_format(&d, msg, sizeof(msg)));
    }
    free(path);
    return cfg;
}

/* The /health target from --url (with --ca, else the local CA of the
 * default certs directory when there is one) or from the config's [listen].
 * Returns 0, or 1 after printing why. */
static int target_make(const struct mx_status_where *w, struct target *t)
{
    if (w->url) {
        t->url = mx_status_health_url(w->url);
        if (t->url == NULL) {
            fprintf(stderr, "mcplex: --url must be the gateway's http:// or https:// URL, e.g. "
                            "https://127.0.0.1:8443 or https://127.0.0.1:8443/mcp\n");
            return 1;
        }
        if (w->ca) {
            t->ca_file = mx_xstrdup(w->ca);
        } else if (strncasecmp(t->url, "https:", 6) == 0) {
            char *state = mx_config_default_state_dir();
            t->ca_file = local_ca(state, true);
            free(state);
        }
        return 0;
    }
    struct mx_config *cfg = where_config(w->cfg);
    if (cfg == NULL)
        return 1;
    char *base;
    int rc = mx_status_gateway_base(cfg, &base, &t->ca_file);
    mx_config_free(cfg);
    if (rc != 0)
        return 1;
    t->url = mx_xasprintf("%s/health", base);
    free(base);
    return 0;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *data)
{
    struct mx_buf *b = data;
    /* returning less than given makes libcurl stop with a write error */
    return mx_buf_append(b, p, size * nmemb) == 0 ? size * nmemb : 0;
}

/* Why |rc| ended the transfer to |t|, on stderr: a TLS failure is not "no
 * answer", and each says what to try. */
static void say_failure(const struct target *t, CURLcode rc, const char *err)
{
    const char *why = err[0] ? err : curl_easy_strerror(rc);
    bool https = strncasecmp(t->url, "https:", 6) == 0;
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
        fprintf(stderr,
                "mcplex: TLS: certificate verify failed for %s; is the CA from `mcplex certs "
                "init` trusted? pass --ca FILE\n"
                "mcplex: (%s; CA file tried: %s)\n",
                t->url, why, t->ca_file ? t->ca_file : "none, the system store");
        return;
    case CURLE_SSL_CACERT_BADFILE:
        fprintf(stderr, "mcplex: TLS: cannot use the CA file %s (%s); pass --ca FILE (PEM)\n",
                t->ca_file ? t->ca_file : "of the system store", why);
        return;
    case CURLE_SSL_CONNECT_ERROR:
        fprintf(stderr,
                "mcplex: TLS handshake with %s failed: %s; if the gateway serves plain HTTP "
                "(tls = false), use an http:// URL\n",
                t->url, why);
        return;
    default:
        break;
    }
    fprintf(stderr, "mcplex: no gateway answered at %s: %s\n", t->url, why);
    if (rc == CURLE_COULDNT_CONNECT)
        fprintf(stderr, "mcplex: is `mcplex serve` running there?\n");
    else if (!https && (rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR))
        fprintf(stderr, "mcplex: something took the connection but sent no HTTP answer; if the "
                        "gateway serves TLS, use an https:// URL\n");
}

/* A GET of |url| into |out|, errors into |err| (CURL_ERROR_SIZE); NULL
 * when libcurl cannot make a handle. */
static CURL *health_get(const char *url, struct mx_buf *out, char *err)
{
    CURL *c = curl_easy_init();
    if (c == NULL)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* a proxy from the environment must not stand between us and loopback */
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "mcplex-status/" MX_VERSION);
    return c;
}

/* Run |c| against the gateway of |t| (its CA, the status timeout) and free
 * it; the HTTP status in |*status|. */
static CURLcode perform(const struct target *t, CURL *c, long *status)
{
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, STATUS_TIMEOUT_MS);
    if (t->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_easy_cleanup(c);
    return rc;
}

/* GET |t->url|. Returns 0 with the body in |out|, or 1 after printing why. */
static int fetch(const struct target *t, struct mx_buf *out)
{
    char err[CURL_ERROR_SIZE] = "";
    long status = 0;
    CURL *c = health_get(t->url, out, err);
    if (c == NULL) {
        fprintf(stderr, "mcplex: cannot initialise libcurl\n");
        return 1;
    }
    CURLcode rc = perform(t, c, &status);
    if (rc != CURLE_OK) {
        say_failure(t, rc, err);
        return 1;
    }
    if (status != 200) {
        fprintf(stderr, "mcplex: %s answered HTTP %ld; is that an mcplex gateway?\n", t->url,
                status);
        return 1;
    }
    return 0;
}

json_t *mx_status_fetch(const struct mx_status_where *w)
{
    struct target t = {0};
    struct mx_buf body;
    json_t *h = NULL;
    json_error_t jerr;
    mx_buf_init(&body, HEALTH_CAP);
    if (target_make(w, &t) == 0 && fetch(&t, &body) == 0) {
        h = json_loadb(mx_buf_data(&body), mx_buf_len(&body), JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(h)) {
            fprintf(stderr, "mcplex: %s did not answer /health JSON: %s\n", t.url, jerr.text);
            json_decref(h);
            h = NULL;
        }
    }
    mx_buf_clear(&body);
    target_clear(&t);
    return h;
}

/*
 * One quiet look at GET |base|/health: MX_PORT_MCPLEX with *|pid| when an
 * mcplex answered, MX_PORT_FREE when nothing took the connection, else
 * MX_PORT_OTHER, with *|answered| false when nothing came back in time.
 */
static enum mx_port_owner probe_once(const char *base, long *pid, bool *answered)
{
    char err[CURL_ERROR_SIZE] = "";
    long status = 0;
    struct mx_buf body;
    enum mx_port_owner who = MX_PORT_OTHER;
    char *url = mx_xasprintf("%s/health", base);
    mx_buf_init(&body, HEALTH_CAP);
    *answered = false;
    CURL *c = health_get(url, &body, err);
    if (c == NULL)
        goto out;
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, PROBE_TIMEOUT_MS / 2);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PROBE_TIMEOUT_MS);
    /* Only the pid is read, and nothing is sent but the path: whoever holds
     * the port need not prove who it is, so any certificate will do (the
     * running gateway may use another state dir's CA). */
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (rc == CURLE_COULDNT_CONNECT) {
        who = MX_PORT_FREE;
        goto out;
    }
    *answered = rc != CURLE_OPERATION_TIMEDOUT;
    if (rc != CURLE_OK || status != 200)
        goto out;
    json_t *h = json_loadb(mx_buf_data(&body), mx_buf_len(&body), JSON_REJECT_DUPLICATES, NULL);
    const json_t *jpid = json_object_get(h, "pid");
    if (json_is_integer(jpid) && json_integer_value(jpid) > 0 &&
        json_is_string(json_object_get(h, "version")) &&
        json_is_object(json_object_get(h, "listen"))) {
        *pid = (long)json_integer_value(jpid);
        who = MX_PORT_MCPLEX;
    }
    json_decref(h);
out:
    mx_buf_clear(&body);
    free(url);
    return who;
}

enum mx_port_owner mx_status_port_owner(const struct mx_config *cfg, long *pid)
{
    const char *colon = strrchr(cfg->listen.address, ':');
    int64_t port = 0;
    char *base = NULL, *ca = NULL;
    bool answered;
    *pid = 0;
    if (colon == NULL || mx_num_parse(colon + 1, strlen(colon + 1), 0, 65535, &port) != 0 ||
        port == 0 || mx_status_gateway_base(cfg, &base, &ca) != 0)
        return MX_PORT_FREE; /* any port will do, or nothing to ask */
    enum mx_port_owner who = probe_once(base, pid, &answered);
    if (who == MX_PORT_OTHER && answered) {
        /* a gateway of another config may speak the other scheme */
        bool tls = strncmp(base, "https:", 6) == 0;
        char *other = mx_xasprintf("%s%s", tls ? "http" : "https", base + (tls ? 5 : 4));
        if (probe_once(other, pid, &answered) == MX_PORT_MCPLEX)
            who = MX_PORT_MCPLEX;
        free(other);
    }
    free(base);
    free(ca);
    return who;
}

int mx_status_where_opt(int ch, const char *arg, void *data)
{
    struct mx_status_where *w = data;
    if (ch == 'c')
        w->cfg = arg;
    else if (ch == 'u')
        w->url = arg;
    else if (ch == 'a')
        w->ca = arg;
    return 0;
}

bool mx_status_where_fits(const void *data)
{
    const struct mx_status_where *w = data;
    return !(w->cfg && w->url) && !(w->ca && !w->url);
}

struct status_opts {
    struct mx_status_where where;
    bool raw;  /* --json */
    bool open; /* --open */
};

static int status_opt(int ch, const char *arg, void *data)
{
    struct status_opts *o = data;
    if (ch == 'j') {
        o->raw = true;
        return 0;
    }
    if (ch == 'o') {
        o->open = true;
        return 0;
    }
    return mx_status_where_opt(ch, arg, &o->where);
}

static bool status_fits(const void *data)
{
    const struct status_opts *o = data;
    return mx_status_where_fits(&o->where) && !(o->raw && o->open);
}

/* ---- --open ---- */

/* The client token: [listen] client_token of the config, or with --url
 * $MCPLEX_TOKEN. NULL when there is none (the gateway may need none);
 * *|bad| after printing why a configured one did not resolve. */
static struct mx_secret *client_token(const struct mx_status_where *w, bool *bad)
{
    struct mx_secret *sec = NULL;
    *bad = false;
    if (w->url) {
        const char *v = getenv(MX_STATUS_TOKEN_ENV);
        return v && v[0] ? mx_secret_new(v, strlen(v)) : NULL;
    }
    struct mx_config *cfg = where_config(w->cfg);
    if (cfg == NULL) {
        *bad = true;
        return NULL;
    }
    if (cfg->listen.client_token_ref) {
        struct mx_diag d = {0};
        char msg[1024];
        if (mx_secret_resolve(cfg->listen.client_token_ref, cfg->proxy.vault, cfg->dir, &sec, &d) !=
            0) {
            fprintf(stderr, "mcplex: %s\nmcplex: the login link needs the client token\n",
                    mx_diag_format(&d, msg, sizeof(msg)));
            *bad = true;
        }
    }
    mx_config_free(cfg);
    return sec;
}

/* POST <base>/status/code with the token; the code into |code| (33
 * bytes). Returns 0, or 1 after printing why. */
static int login_code(const struct target *t, const char *base, const struct mx_secret *tok,
                      bool from_url, char *code)
{
    char err[CURL_ERROR_SIZE] = "";
    struct mx_buf body;
    struct curl_slist *hdrs = NULL;
    long status = 0;
    int ret = 1;
    char *url = mx_xasprintf("%s/status/code", base);
    char *auth = tok ? mx_secret_header_new(tok, MX_AUTH_BEARER, NULL) : NULL;
    mx_buf_init(&body, 4096);
    CURL *c = health_get(url, &body, err);
    if (c == NULL) {
        fprintf(stderr, "mcplex: cannot initialise libcurl\n");
        goto out;
    }
    if (auth)
        hdrs = curl_slist_append(hdrs, auth);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    CURLcode rc = perform(t, c, &status);
    if (rc != CURLE_OK) {
        say_failure(t, rc, err);
        goto out;
    }
    if (status == 403) {
        if (tok)
            fprintf(stderr,
                    "mcplex: %s refused the client token; is it the one the gateway "
                    "serves with?\n",
                    url);
        else
            fprintf(stderr, "mcplex: %s needs the client token: %s\n", url,
                    from_url ? "set $" MX_STATUS_TOKEN_ENV " to it"
                             : "run with -c and the gateway's config");
        goto out;
    }
    json_t *o = status == 200 ? json_loadb(mx_buf_data(&body), mx_buf_len(&body), 0, NULL) : NULL;
    const char *v = json_string_value(json_object_get(o, "code"));
    if (v == NULL || strlen(v) != 32) {
        fprintf(stderr,
                "mcplex: %s answered HTTP %ld without a login code; is the gateway an "
                "mcplex with a status page (0.2 or later)?\n",
                url, status);
    } else {
        memcpy(code, v, 33);
        ret = 0;
    }
    json_decref(o);
out:
    curl_slist_free_all(hdrs);
    if (auth)
        mx_secret_wipe_free(auth);
    mx_buf_clear(&body);
    free(url);
    return ret;
}

/* xdg-open |url| when a desktop session is there; whether it took it. */
static bool browse(const char *url)
{
    const char *d = getenv("DISPLAY"), *wd = getenv("WAYLAND_DISPLAY");
    if (!(d && d[0]) && !(wd && wd[0]))
        return false;
    char prog[] = "xdg-open";
    char *u = mx_xstrdup(url);
    char *argv[] = {prog, u, NULL};
    pid_t pid;
    int st = 0;
    int rc = mx_spawn(argv, environ, -1, true, &pid);
    free(u);
    if (rc != 0)
        return false;
    pid_t got;
    do
        got = waitpid(pid, &st, 0);
    while (got < 0 && errno == EINTR);
    return got == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int open_page(const struct mx_status_where *w, const struct target *t)
{
    bool bad;
    char code[33];
    struct mx_secret *tok = client_token(w, &bad);
    if (bad)
        return 1;
    /* t->url is <base>/health */
    char *base = mx_xstrndup(t->url, strlen(t->url) - strlen("/health"));
    int ret = login_code(t, base, tok, w->url != NULL, code);
    mx_secret_free(tok);
    if (ret == 0) {
        char *url = mx_xasprintf("%s/status/login?code=%s", base, code);
        if (browse(url)) {
            printf("mcplex: opened the status page in your browser (%s/status)\n", base);
        } else {
            printf("Open this link in your browser; it logs in once, within a minute:\n%s\n", url);
        }
        free(url);
    }
    free(base);
    return ret;
}

int mx_cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {MX_STATUS_WHERE_OPTIONS,
                                         {"json", no_argument, NULL, 'j'},
                                         {"open", no_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const struct mx_cmdline cl = {"c:h", opts, usage, status_opt, status_fits};
    struct status_opts o = {0};
    int ret = mx_cmdline_parse(&cl, argc, argv, &o);
    if (ret != MX_CMDLINE_RUN)
        return ret;

    struct target t = {0};
    struct mx_buf body;
    ret = 1;
    mx_buf_init(&body, HEALTH_CAP);
    if (target_make(&o.where, &t) != 0)
        goto out;
    if (mx_cmdline_curl_init() != 0)
        goto out;
    if (o.open) {
        ret = open_page(&o.where, &t);
        goto out_curl;
    }
    if (fetch(&t, &body) != 0)
        goto out_curl;
    if (o.raw) {
        fwrite(mx_buf_data(&body), 1, mx_buf_len(&body), stdout);
        if (mx_buf_len(&body) && mx_buf_data(&body)[mx_buf_len(&body) - 1] != '\n')
            fputc('\n', stdout);
        ret = 0;
        goto out_curl;
    }
    json_error_t jerr;
    json_t *h = json_loadb(mx_buf_data(&body), mx_buf_len(&body), JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(h)) {
        fprintf(stderr, "mcplex: %s did not answer /health JSON: %s\n", t.url, jerr.text);
        json_decref(h);
        goto out_curl;
    }
    mx_status_render(stdout, h, t.url, time(NULL));
    json_decref(h);
    ret = 0;
out_curl:
    curl_global_cleanup();
out:
    mx_buf_clear(&body);
    target_clear(&t);
    if (fflush(stdout) != 0)
        ret = 1;
    return ret;
}
