/* SPDX-License-Identifier: MIT */
/*
 * Sequential tools/call latency, direct to an upstream and through mcplex,
 * interleaved call by call in one run so both see the same machine state.
 * Each side gets its own MCP session (initialize + notifications/initialized)
 * on one keep-alive connection, then N calls; prints p50/p90/p99/max per side
 * and the gateway's added latency. The upstream credential is read from an
 * environment variable, never from argv.
 *
 *   bench-seq-latency --direct URL --gateway URL [--bearer-env VAR]
 *                     [--cookie NAME --cookie-env VAR] [-n N] [--tool echo]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "alloc.h"
#include "buf.h"
#include "num.h"

struct side {
    const char *name;
    const char *url;
    CURL *h;
    struct curl_slist *hdrs;
    char session[256];
    struct mx_buf body;
    double *us;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    struct side *s = ud;
    mx_buf_append(&s->body, p, sz * n);
    return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    struct side *s = ud;
    size_t len = sz * n;
    static const char key[] = "mcp-session-id:";
    if (len > sizeof(key) && strncasecmp(p, key, sizeof(key) - 1) == 0) {
        const char *v = p + sizeof(key) - 1;
        size_t vl = len - (sizeof(key) - 1);
        while (vl && (*v == ' ' || *v == '\t')) {
            v++;
            vl--;
        }
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
            vl--;
        snprintf(s->session, sizeof(s->session), "%.*s", (int)vl, v);
    }
    return len;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* POST |json|; returns the HTTP status, or -1 on a transport error. */
static long post(struct side *s, const char *json)
{
    struct curl_slist *h = NULL;
    for (struct curl_slist *i = s->hdrs; i; i = i->next)
        h = curl_slist_append(h, i->data);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    h = curl_slist_append(h, "Expect:");
    char sid[300];
    if (s->session[0]) {
        snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", s->session);
        h = curl_slist_append(h, sid);
        h = curl_slist_append(h, "MCP-Protocol-Version: 2025-06-18");
    }
    mx_buf_reset(&s->body);
    curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, json);
    CURLcode rc = curl_easy_perform(s->h);
    long status = -1;
    if (rc == CURLE_OK)
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    return status;
}

static int side_open(struct side *s, int n)
{
    s->h = curl_easy_init();
    mx_buf_init(&s->body, 1 << 20);
    s->us = mx_xcalloc((size_t)n, sizeof(double));
    curl_easy_setopt(s->h, CURLOPT_URL, s->url);
    curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(s->h, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(s->h, CURLOPT_PROXY, "");
    long st = post(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                      "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                      "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}");
    if (st != 200 || !s->session[0]) {
        fprintf(stderr, "%s: initialize failed (HTTP %ld)\n", s->name, st);
        return -1;
    }
    st = post(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    if (st != 202 && st != 200) {
        fprintf(stderr, "%s: notifications/initialized got HTTP %ld\n", s->name, st);
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, int n, double p)
{
    int i = (int)(p / 100.0 * (n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
    struct side sides[2] = {{.name = "direct"}, {.name = "mcplex"}};
    const char *bearer_env = NULL, *cookie = NULL, *cookie_env = NULL, *tool = "echo";
    int n = 1000;
    static const struct option opts[] = {{"direct", required_argument, NULL, 'd'},
                                         {"gateway", required_argument, NULL, 'g'},
                                         {"bearer-env", required_argument, NULL, 'b'},
                                         {"cookie", required_argument, NULL, 'k'},
                                         {"cookie-env", required_argument, NULL, 'e'},
                                         {"tool", required_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    int64_t v;
    while ((ch = getopt_long(argc, argv, "n:", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
            sides[0].url = optarg;
            break;
        case 'g':
            sides[1].url = optarg;
            break;
        case 'b':
            bearer_env = optarg;
            break;
        case 'k':
            cookie = optarg;
            break;
        case 'e':
            cookie_env = optarg;
            break;
        case 't':
            tool = optarg;
            break;
        case 'n':
            if (mx_num_parse(optarg, strlen(optarg), 1, 10000000, &v) != 0) {
                fprintf(stderr, "bad -n\n");
                return 2;
            }
            n = (int)v;
            break;
        default:
            return 2;
        }
    }
    if (!sides[0].url || !sides[1].url) {
        fprintf(stderr, "usage: bench-seq-latency --direct URL --gateway URL "
                        "[--bearer-env VAR | --cookie NAME --cookie-env VAR] [-n N]\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* Only the direct side carries the credential: mcplex injects its own. */
    const char *secret = bearer_env ? getenv(bearer_env) : cookie_env ? getenv(cookie_env) : NULL;
    if ((bearer_env || cookie_env) && (secret == NULL || !*secret)) {
        fprintf(stderr, "the credential variable is not set\n");
        return 2;
    }
    if (secret) {
        char *line = bearer_env ? mx_xasprintf("Authorization: Bearer %s", secret)
                                : mx_xasprintf("Cookie: %s=%s", cookie ? cookie : "", secret);
        sides[0].hdrs = curl_slist_append(NULL, line);
        free(line);
    }
    for (int i = 0; i < 2; i++) {
        if (side_open(&sides[i], n) != 0)
            return 1;
    }
    char call[512];
    int errors[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        snprintf(call, sizeof(call),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"%s\",\"arguments\":{\"message\":\"m%d\"}}}",
                 i + 1, tool, i);
        /* Alternate which side goes first so neither always runs on a warm cache. */
        for (int k = 0; k < 2; k++) {
            struct side *s = &sides[(i + k) % 2];
            double t0 = now_us();
            long st = post(s, call);
            s->us[i] = now_us() - t0;
            if (st != 200 ||
                memmem(mx_buf_data(&s->body), mx_buf_len(&s->body), "\"result\"", 8) == NULL)
                errors[(i + k) % 2]++;
        }
    }
    printf("%d sequential tools/call %s, one keep-alive connection per side, interleaved\n", n,
           tool);
    printf("%-8s %10s %10s %10s %10s %10s %7s\n", "side", "p50 us", "p90 us", "p99 us", "max us",
           "mean us", "errors");
    double p50[2], p99[2];
    for (int i = 0; i < 2; i++) {
        double sum = 0;
        for (int k = 0; k < n; k++)
            sum += sides[i].us[k];
        qsort(sides[i].us, (size_t)n, sizeof(double), cmp_double);
        p50[i] = pct(sides[i].us, n, 50);
        p99[i] = pct(sides[i].us, n, 99);
        printf("%-8s %10.0f %10.0f %10.0f %10.0f %10.0f %7d\n", sides[i].name, p50[i],
               pct(sides[i].us, n, 90), p99[i], sides[i].us[n - 1], sum / n, errors[i]);
    }
    printf("mcplex adds: p50 %+.0f us (%.2fx direct), p99 %+.0f us (%.2fx direct)\n",
           p50[1] - p50[0], p50[1] / p50[0], p99[1] - p99[0], p99[1] / p99[0]);
    for (int i = 0; i < 2; i++) {
        curl_easy_cleanup(sides[i].h);
        curl_slist_free_all(sides[i].hdrs);
        mx_buf_clear(&sides[i].body);
        free(sides[i].us);
    }
    curl_global_cleanup();
    return errors[0] || errors[1] ? 1 : 0;
}
