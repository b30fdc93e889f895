/* SPDX-License-Identifier: MIT */
/*
 * Request engine of `mcplex bench` (benchrun.h): libcurl multi, one easy
 * handle per concurrent slot, times from CURLINFO. It owns the side's MCP
 * session and the sessions its initialize rows open (deleted at the end).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "alloc.h"
#include "benchrun.h"
#include "buf.h"
#include "err.h"
#include "revision.h"

#define BODY_CAP (8 * 1024 * 1024)
#define SID_MAX  256
#define POLL_MS  50

struct slot {
    struct mx_bench_side *side;
    CURL *h;
    struct mx_buf body;
    char sid[SID_MAX]; /* Mcp-Session-Id of an initialize answer */
    char *payload;
    int64_t id;
    char errbuf[CURL_ERROR_SIZE];
};

struct mx_bench_side {
    char *url;
    char *ca_file;
    char *auth; /* secret header line; wiped */
    bool http1;
    long timeout_ms;
    char sid[SID_MAX];
    char proto[32];
    char *call_params; /* {"name":…,"arguments":…} */
    CURLM *multi;
    struct slot *slots;
    size_t slot_cnt;
    struct curl_slist *hdr_init; /* for initialize: no session */
    struct curl_slist *hdr_sess; /* with the session */
    char **opened;               /* sessions opened by initialize rows, deleted at the end */
    size_t opened_cnt, opened_cap;
    int64_t next_id;
    long last_http_version;
    char last_error[CURL_ERROR_SIZE + 64]; /* why the last failed request failed */
};

static void oom(void)
{
    fprintf(stderr, "mcplex: out of memory\n");
    abort();
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void slist_wipe_free(struct curl_slist *l)
{
    for (struct curl_slist *i = l; i; i = i->next)
        OPENSSL_cleanse(i->data, strlen(i->data));
    curl_slist_free_all(l);
}

static struct curl_slist *headers_new(const struct mx_bench_side *s, bool with_session)
{
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    h = curl_slist_append(h, "Expect:");
    if (s->auth)
        h = curl_slist_append(h, s->auth);
    if (with_session && s->sid[0]) {
        char line[SID_MAX + 64];
        snprintf(line, sizeof(line), "Mcp-Session-Id: %s", s->sid);
        h = curl_slist_append(h, line);
        snprintf(line, sizeof(line), "MCP-Protocol-Version: %s", s->proto);
        h = curl_slist_append(h, line);
    }
    if (h == NULL)
        oom();
    return h;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct slot *sl = ud;
    return mx_buf_append(&sl->body, p, size * nmemb) == 0 ? size * nmemb : 0;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct slot *sl = ud;
    size_t len = size * nmemb;
    static const char key[] = "mcp-session-id:";
    if (len > sizeof(key) && strncasecmp(p, key, sizeof(key) - 1) == 0) {
        const char *v = p + sizeof(key) - 1;
        size_t vl = len - (sizeof(key) - 1);
        while (vl && (*v == ' ' || *v == '\t')) {
            v++;
            vl--;
        }
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(sl->sid))
            snprintf(sl->sid, sizeof(sl->sid), "%.*s", (int)vl, v);
    }
    return len;
}

struct mx_bench_side *mx_bench_side_new(const char *url, const char *ca_file, char *auth_header,
                                        bool http1, long timeout_ms)
{
    struct mx_bench_side *s = mx_xcalloc(1, sizeof(*s));
    s->url = mx_xstrdup(url);
    s->ca_file = ca_file ? mx_xstrdup(ca_file) : NULL;
    s->auth = auth_header;
    s->http1 = http1;
    s->timeout_ms = timeout_ms;
    /* Both sides ask for the revision mcplex's own upstream sessions ask for
     * (upmsg.c), so direct and gateway calls cost the upstream the same: an
     * upstream may answer one revision more slowly than another
     * (server-everything streams a 2025-11-25 answer behind a priming event,
     * about 1 ms more than a 2025-06-18 one), and that time is not mcplex's. */
    snprintf(s->proto, sizeof(s->proto), "%s", mx_rev_session_versions[0]);
    s->multi = curl_multi_init();
    if (s->multi == NULL)
        oom();
    s->hdr_init = headers_new(s, false);
    s->hdr_sess = headers_new(s, true);
    s->next_id = 1;
    return s;
}

static void slot_clear(struct slot *sl)
{
    if (sl->h)
        curl_easy_cleanup(sl->h);
    mx_buf_clear(&sl->body);
    free(sl->payload);
    memset(sl, 0, sizeof(*sl));
}

/* Make sure the side has |n| slots with easy handles. */
static void slots_ensure(struct mx_bench_side *s, size_t n)
{
    if (n <= s->slot_cnt)
        return;
    s->slots = mx_xrealloc(s->slots, n * sizeof(*s->slots));
    for (size_t i = s->slot_cnt; i < n; i++) {
        struct slot *sl = &s->slots[i];
        memset(sl, 0, sizeof(*sl));
        sl->side = s;
        sl->h = curl_easy_init();
        if (sl->h == NULL)
            oom();
        mx_buf_init(&sl->body, BODY_CAP);
    }
    /* Slots move only between batches, when no handle is in flight; each
     * request sets its handle's pointers to the slot again. */
    s->slot_cnt = n;
}

static void remember_session(struct mx_bench_side *s, const char *sid)
{
    if (s->opened_cnt == s->opened_cap) {
        s->opened_cap = s->opened_cap ? s->opened_cap * 2 : 64;
        s->opened = mx_xrealloc(s->opened, s->opened_cap * sizeof(*s->opened));
    }
    s->opened[s->opened_cnt++] = mx_xstrdup(sid);
}

/* DELETE the session |sid| on |h| (reused, so on a kept-alive connection);
 * untimed, its outcome ignored: the benchmark only tidies up. */
static void send_delete(struct mx_bench_side *s, CURL *h, const char *sid)
{
    struct curl_slist *hd = NULL;
    char line[SID_MAX + 32];
    if (s->auth)
        hd = curl_slist_append(hd, s->auth);
    snprintf(line, sizeof(line), "Mcp-Session-Id: %s", sid);
    hd = curl_slist_append(hd, line);
    struct slot sink;
    memset(&sink, 0, sizeof(sink));
    mx_buf_init(&sink.body, 64 * 1024);
    curl_easy_setopt(h, CURLOPT_URL, s->url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     s->http1 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    if (s->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
    (void)curl_easy_perform(h);
    mx_buf_clear(&sink.body);
    slist_wipe_free(hd);
}

/* DELETE every session the initialize rows opened (a server may cap its
 * sessions and evict the side's own one otherwise). */
static void delete_opened(struct mx_bench_side *s)
{
    if (s->opened_cnt == 0)
        return;
    CURL *h = curl_easy_init();
    if (h == NULL)
        oom();
    for (size_t i = 0; i < s->opened_cnt; i++) {
        send_delete(s, h, s->opened[i]);
        free(s->opened[i]);
    }
    s->opened_cnt = 0;
    curl_easy_cleanup(h);
}

void mx_bench_side_free(struct mx_bench_side *s)
{
    if (s == NULL)
        return;
    if (s->sid[0])
        remember_session(s, s->sid);
    delete_opened(s);
    free(s->opened);
    for (size_t i = 0; i < s->slot_cnt; i++)
        slot_clear(&s->slots[i]);
    free(s->slots);
    if (s->multi)
        curl_multi_cleanup(s->multi);
    slist_wipe_free(s->hdr_init);
    slist_wipe_free(s->hdr_sess);
    if (s->auth) {
        OPENSSL_cleanse(s->auth, strlen(s->auth));
        free(s->auth);
    }
    free(s->url);
    free(s->ca_file);
    free(s->call_params);
    free(s);
}

const char *mx_bench_side_last_error(const struct mx_bench_side *s)
{
    return s->last_error;
}

bool mx_bench_side_is_tls(const struct mx_bench_side *s)
{
    return strncasecmp(s->url, "https:", 6) == 0;
}

const char *mx_bench_side_http_version(const struct mx_bench_side *s)
{
    switch (s->last_http_version) {
    case CURL_HTTP_VERSION_1_0:
        return "1.0";
    case CURL_HTTP_VERSION_1_1:
        return "1.1";
    case CURL_HTTP_VERSION_2_0:
        return "2";
    default:
        return "?";
    }
}

void mx_bench_side_set_call(struct mx_bench_side *s, const char *tool, const json_t *args)
{
    json_t *p = json_pack("{s:s, s:O}", "name", tool, "arguments", args);
    free(s->call_params);
    s->call_params = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (s->call_params == NULL)
        oom();
}

static char *payload_new(struct mx_bench_side *s, enum mx_bench_kind kind, int64_t id)
{
    switch (kind) {
    case MX_BENCH_INITIALIZE:
        return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"initialize\","
                            "\"params\":{\"protocolVersion\":\"%s\",\"capabilities\":{},"
                            "\"clientInfo\":{\"name\":\"mcplex-bench\",\"version\":\"%s\"}}}",
                            (long long)id, mx_rev_session_versions[0], MX_VERSION);
    case MX_BENCH_TOOLS_LIST:
        return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/list\"}",
                            (long long)id);
    case MX_BENCH_TOOLS_CALL:
        return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"tools/call\","
                            "\"params\":%s}",
                            (long long)id, s->call_params ? s->call_params : "{}");
    case MX_BENCH_CONNECT:
    case MX_BENCH_PING:
        break;
    }
    return mx_xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ping\"}", (long long)id);
}

/* Prepare |sl| for one request of |kind| and add it to the multi handle. */
static void slot_start(struct slot *sl, enum mx_bench_kind kind)
{
    struct mx_bench_side *s = sl->side;
    CURL *h = sl->h;
    mx_buf_reset(&sl->body);
    sl->sid[0] = '\0';
    sl->errbuf[0] = '\0';
    free(sl->payload);
    sl->id = s->next_id++;
    sl->payload = payload_new(s, kind, sl->id);
    curl_easy_setopt(h, CURLOPT_URL, s->url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, sl->payload);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(sl->payload));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER,
                     kind == MX_BENCH_INITIALIZE ? s->hdr_init : s->hdr_sess);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sl);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, sl);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, sl->errbuf);
    curl_easy_setopt(h, CURLOPT_PRIVATE, sl);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "mcplex-bench/" MX_VERSION);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                     s->http1 ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
    /* Nagle would add up to 40 ms to small requests on some kernels. */
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    long fresh = kind == MX_BENCH_CONNECT ? 1L : 0L;
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, fresh);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, fresh);
    if (s->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
    if (curl_multi_add_handle(s->multi, h) != CURLM_OK)
        oom();
}

/* |p|,|len| parsed as a JSON-RPC message with id |id|; new reference or NULL. */
static json_t *json_match(const char *p, size_t len, int64_t id)
{
    json_error_t e;
    json_t *o = json_loadb(p, len, 0, &e);
    json_t *jid = json_object_get(o, "id");
    if (json_is_integer(jid) && json_integer_value(jid) == id)
        return o;
    json_decref(o);
    return NULL;
}

/*
 * The JSON-RPC message with id |id| in |p|,|len|: a JSON body, or an SSE
 * stream whose events carry one message each in their data lines (joined
 * with "\n", as the SSE spec says). New reference or NULL.
 */
static json_t *find_msg(const char *p, size_t len, int64_t id)
{
    size_t i = 0;
    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i < len && p[i] == '{')
        return json_match(p + i, len - i, id);
    struct mx_buf data;
    json_t *found = NULL;
    mx_buf_init(&data, len + 1);
    while (i < len && found == NULL) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - p) : len;
        const char *line = p + i;
        size_t l = end - i;
        if (l && line[l - 1] == '\r')
            l--;
        if (l == 0) {
            /* a blank line ends the event */
            if (mx_buf_len(&data))
                found = json_match(mx_buf_data(&data), mx_buf_len(&data), id);
            mx_buf_reset(&data);
        } else if (l >= 5 && memcmp(line, "data:", 5) == 0) {
            size_t o = (l > 5 && line[5] == ' ') ? 6 : 5;
            if (mx_buf_len(&data))
                (void)mx_buf_append(&data, "\n", 1);
            (void)mx_buf_append(&data, line + o, l - o);
        }
        i = end + 1;
    }
    if (found == NULL && mx_buf_len(&data))
        found = json_match(mx_buf_data(&data), mx_buf_len(&data), id);
    mx_buf_clear(&data);
    return found;
}

bool mx_bench_rpc_ok(const char *p, size_t len, int64_t id)
{
    json_t *m = find_msg(p, len, id);
    json_t *res = json_object_get(m, "result");
    bool ok = json_is_object(res) && !json_is_true(json_object_get(res, "isError"));
    json_decref(m);
    return ok;
}

struct outcome {
    bool ok;
    int64_t total_us, connect_us, tls_us;
    long status;
};

static struct outcome slot_finish(struct slot *sl, enum mx_bench_kind kind, CURLcode rc)
{
    struct mx_bench_side *s = sl->side;
    struct outcome o = {0};
    curl_off_t total = 0, conn = 0, app = 0;
    long ver = 0;
    curl_easy_getinfo(sl->h, CURLINFO_RESPONSE_CODE, &o.status);
    curl_easy_getinfo(sl->h, CURLINFO_TOTAL_TIME_T, &total);
    curl_easy_getinfo(sl->h, CURLINFO_CONNECT_TIME_T, &conn);
    curl_easy_getinfo(sl->h, CURLINFO_APPCONNECT_TIME_T, &app);
    if (curl_easy_getinfo(sl->h, CURLINFO_HTTP_VERSION, &ver) == CURLE_OK && ver)
        s->last_http_version = ver;
    o.total_us = (int64_t)total;
    /* CONNECT_TIME is from the start to the TCP connect; the name lookup
     * of a numeric address is ~0, so it is the connect itself. */
    o.connect_us = (int64_t)conn;
    o.tls_us = app > conn ? (int64_t)(app - conn) : 0;
    o.ok = rc == CURLE_OK && o.status == 200 &&
           mx_bench_rpc_ok(mx_buf_data(&sl->body), mx_buf_len(&sl->body), sl->id);
    if (rc != CURLE_OK)
        snprintf(s->last_error, sizeof(s->last_error), "%s",
                 sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(rc));
    else if (o.status != 200)
        snprintf(s->last_error, sizeof(s->last_error), "HTTP %ld", o.status);
    else if (!o.ok)
        snprintf(s->last_error, sizeof(s->last_error),
                 "HTTP 200 without a JSON-RPC result for the request's id (%zu bytes)",
                 mx_buf_len(&sl->body));
    if (o.ok && kind == MX_BENCH_INITIALIZE) {
        if (sl->sid[0])
            remember_session(s, sl->sid);
    }
    return o;
}

void mx_bench_side_run(struct mx_bench_side *s, enum mx_bench_kind kind, size_t count, size_t conc,
                       struct mx_benchstat *st, struct mx_benchstat *tls, int64_t *wall_us,
                       mx_bench_progress_cb progress, void *ud)
{
    if (conc < 1)
        conc = 1;
    if (conc > count)
        conc = count;
    slots_ensure(s, conc);
    int64_t t0 = now_us();
    size_t started = 0, done = 0;
    for (size_t i = 0; i < conc; i++) {
        slot_start(&s->slots[i], kind);
        started++;
    }
    bool tls_side = mx_bench_side_is_tls(s);
    while (done < count) {
        int running = 0;
        curl_multi_perform(s->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(s->multi, &left)) != NULL) {
            if (m->msg != CURLMSG_DONE)
                continue;
            CURL *h = m->easy_handle;
            CURLcode rc = m->data.result;
            struct slot *sl = NULL;
            curl_easy_getinfo(h, CURLINFO_PRIVATE, (char **)&sl);
            curl_multi_remove_handle(s->multi, h);
            struct outcome o = slot_finish(sl, kind, rc);
            if (!o.ok) {
                mx_benchstat_error(st);
                if (kind == MX_BENCH_CONNECT && tls && tls_side)
                    mx_benchstat_error(tls);
            } else if (kind == MX_BENCH_CONNECT) {
                mx_benchstat_add(st, o.connect_us);
                if (tls && tls_side)
                    mx_benchstat_add(tls, o.tls_us);
            } else {
                mx_benchstat_add(st, o.total_us);
            }
            done++;
            if (progress)
                progress(ud, done, count);
            if (started < count) {
                slot_start(sl, kind);
                started++;
            }
        }
        if (done < count)
            curl_multi_poll(s->multi, NULL, 0, POLL_MS, NULL);
    }
    *wall_us = now_us() - t0;
    delete_opened(s);
}

/* One request of |kind| on slot 0; returns its body (caller frees) when it
 * was a JSON-RPC success, else NULL with |err| set. */
static char *single(struct mx_bench_side *s, enum mx_bench_kind kind, const char *what, char *err,
                    size_t errcap, char *sid_out)
{
    slots_ensure(s, 1);
    struct slot *sl = &s->slots[0];
    slot_start(sl, kind);
    CURLMsg *m = NULL;
    int left;
    while (m == NULL) {
        int running = 0;
        curl_multi_perform(s->multi, &running);
        while ((m = curl_multi_info_read(s->multi, &left)) != NULL && m->msg != CURLMSG_DONE)
            ;
        if (m == NULL)
            curl_multi_poll(s->multi, NULL, 0, POLL_MS, NULL);
    }
    CURLcode rc = m->data.result;
    curl_multi_remove_handle(s->multi, sl->h);
    long status = 0;
    curl_easy_getinfo(sl->h, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
        snprintf(err, errcap, "%s: %s", what, sl->errbuf[0] ? sl->errbuf : curl_easy_strerror(rc));
        return NULL;
    }
    if (status != 200) {
        snprintf(err, errcap, "%s: HTTP %ld", what, status);
        return NULL;
    }
    if (!mx_bench_rpc_ok(mx_buf_data(&sl->body), mx_buf_len(&sl->body), sl->id)) {
        snprintf(err, errcap, "%s: no JSON-RPC result in the answer", what);
        return NULL;
    }
    if (sid_out)
        snprintf(sid_out, SID_MAX, "%s", sl->sid);
    return mx_xstrndup(mx_buf_data(&sl->body), mx_buf_len(&sl->body));
}

/* The JSON-RPC result object of |body| with id |id|; new reference or NULL. */
static json_t *result_of(const char *body, int64_t id)
{
    json_t *m = find_msg(body, strlen(body), id);
    json_t *res = json_object_get(m, "result");
    json_incref(res);
    json_decref(m);
    return res;
}

int mx_bench_side_open(struct mx_bench_side *s, char *err, size_t errcap)
{
    char sid[SID_MAX] = "";
    int64_t id = s->next_id;
    char *body = single(s, MX_BENCH_INITIALIZE, "initialize", err, errcap, sid);
    if (body == NULL)
        return MX_EUPSTREAM;
    json_t *res = result_of(body, id);
    const char *pv = json_string_value(json_object_get(res, "protocolVersion"));
    if (pv && strlen(pv) < sizeof(s->proto))
        snprintf(s->proto, sizeof(s->proto), "%s", pv);
    json_decref(res);
    free(body);
    snprintf(s->sid, sizeof(s->sid), "%s", sid);
    slist_wipe_free(s->hdr_sess);
    s->hdr_sess = headers_new(s, true);

    /* notifications/initialized: 202, no body */
    CURL *h = curl_easy_init();
    if (h == NULL)
        oom();
    static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
    long status = 0;
    struct slot tmp;
    memset(&tmp, 0, sizeof(tmp));
    mx_buf_init(&tmp.body, 64 * 1024);
    curl_easy_setopt(h, CURLOPT_URL, s->url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, note);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, s->hdr_sess);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &tmp);
    if (s->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    mx_buf_clear(&tmp.body);
    if (rc != CURLE_OK || (status != 202 && status != 200 && status != 204)) {
        snprintf(err, errcap, "notifications/initialized: %s",
                 rc != CURLE_OK ? curl_easy_strerror(rc) : "unexpected HTTP status");
        return MX_EUPSTREAM;
    }
    return 0;
}

int mx_bench_side_tools(struct mx_bench_side *s, json_t **out, char *err, size_t errcap)
{
    int64_t id = s->next_id;
    char *body = single(s, MX_BENCH_TOOLS_LIST, "tools/list", err, errcap, NULL);
    *out = NULL;
    if (body == NULL)
        return MX_EUPSTREAM;
    *out = result_of(body, id);
    free(body);
    if (*out == NULL) {
        snprintf(err, errcap, "tools/list: no result");
        return MX_EUPSTREAM;
    }
    return 0;
}
