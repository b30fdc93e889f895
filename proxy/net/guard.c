/* SPDX-License-Identifier: MIT */
/*
 * Local endpoint policy. A web page can make a browser send requests to
 * 127.0.0.1 (and, through DNS rebinding, with a Host of its own choosing), so
 * mcplex checks Host and Origin before anything else (MCP 2025-06-18,
 * Streamable HTTP, Security Warning). A missing or wrong client token gets
 * 403, never 401: MCP clients treat 401 as "start OAuth".
 */
#include <string.h>

#include "guard.h"
#include "revision.h"
#include "num.h"

/* Split "host[:port]" or "[v6][:port]" into the host part; false if malformed. */
static bool host_part(struct mx_str hp, struct mx_str *host)
{
    if (hp.len == 0)
        return false;
    if (hp.p[0] == '[') {
        const char *close = memchr(hp.p, ']', hp.len);
        if (close == NULL)
            return false;
        *host = mx_str_make(hp.p + 1, (size_t)(close - hp.p) - 1);
        size_t rest = hp.len - (size_t)(close - hp.p) - 1;
        if (rest == 0)
            return true;
        if (close[1] != ':')
            return false;
        hp = mx_str_make(close + 2, rest - 1);
    } else {
        const char *colon = memchr(hp.p, ':', hp.len);
        if (colon == NULL) {
            *host = hp;
            return true;
        }
        *host = mx_str_make(hp.p, (size_t)(colon - hp.p));
        hp = mx_str_make(colon + 1, hp.len - host->len - 1);
    }
    int64_t port;
    return mx_num_parse(hp.p, hp.len, 0, 65535, &port) == 0 && hp.p[0] != '-' && hp.p[0] != '+';
}

static bool is_ipv4_loopback(struct mx_str h)
{
    /* exactly 127.a.b.c, each part 1-3 digits in 0..255 */
    size_t i = 0;
    for (int part = 0; part < 4; part++) {
        size_t j = i;
        while (j < h.len && h.p[j] >= '0' && h.p[j] <= '9')
            j++;
        int64_t v;
        if (j == i || j - i > 3 || mx_num_parse(h.p + i, j - i, 0, 255, &v) != 0)
            return false;
        if (part == 0 && v != 127)
            return false;
        if (part < 3) {
            if (j >= h.len || h.p[j] != '.')
                return false;
            j++;
        }
        i = j;
    }
    return i == h.len;
}

bool mx_guard_host_is_loopback(struct mx_str hp)
{
    struct mx_str h;
    if (!host_part(hp, &h) || h.len == 0)
        return false;
    /* a trailing dot names the same host */
    if (h.p[h.len - 1] == '.')
        h.len--;
    if (mx_str_caseeq_cstr(h, "localhost") || mx_str_caseeq_cstr(h, "::1"))
        return true;
    /* RFC 6761 §6.3: *.localhost resolves to loopback */
    static const struct mx_str suffix = {".localhost", 10};
    if (h.len > suffix.len &&
        mx_str_caseeq(mx_str_make(h.p + h.len - suffix.len, suffix.len), suffix))
        return true;
    return is_ipv4_loopback(h);
}

bool mx_guard_origin_allowed(const struct mx_guard_cfg *cfg, struct mx_str origin)
{
    for (size_t i = 0; i < cfg->allowed_origin_cnt; i++) {
        if (mx_str_caseeq(origin, mx_str_cstr(cfg->allowed_origins[i])))
            return true;
    }
    return false;
}

/*
 * An Origin naming the very host and port the request was sent to belongs to
 * a page mcplex itself would have served: a same-origin request, which the
 * browser's own rules already allow (RFC 6454 §5). Only with a loopback Host,
 * so a rebound name never qualifies.
 */
static bool same_origin(struct mx_str origin, struct mx_str host)
{
    static const struct mx_str schemes[] = {{"http://", 7}, {"https://", 8}};
    if (!mx_guard_host_is_loopback(host))
        return false;
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        struct mx_str sc = schemes[i];
        if (origin.len == sc.len + host.len && mx_str_caseeq(mx_str_make(origin.p, sc.len), sc) &&
            mx_str_caseeq(mx_str_make(origin.p + sc.len, host.len), host))
            return true;
    }
    return false;
}

static bool host_allowed(const struct mx_guard_cfg *cfg, struct mx_str hp)
{
    struct mx_str h;
    if (mx_guard_host_is_loopback(hp))
        return true;
    if (cfg->listen_host == NULL || !host_part(hp, &h))
        return false;
    return mx_str_caseeq(h, mx_str_cstr(cfg->listen_host));
}

static bool token_ok(const struct mx_guard_cfg *cfg, const struct mx_str *auth)
{
    static const struct mx_str scheme = {"Bearer ", 7};
    if (auth == NULL || auth->len <= scheme.len ||
        !mx_str_caseeq(mx_str_make(auth->p, scheme.len), scheme))
        return false;
    struct mx_str tok = mx_str_trim(mx_str_make(auth->p + scheme.len, auth->len - scheme.len));
    return mx_secret_equal(cfg->client_token, tok.p, tok.len);
}

bool mx_guard_header_value_ok(struct mx_str v)
{
    for (size_t i = 0; i < v.len; i++) {
        unsigned char c = (unsigned char)v.p[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

static bool under(struct mx_str path, struct mx_str top)
{
    return path.len >= top.len && memcmp(path.p, top.p, top.len) == 0 &&
           (path.len == top.len || path.p[top.len] == '/');
}

/* /mcp, /sse (MCP 2024-11-05, HTTP with SSE) or below them: the MCP
 * endpoints, whose GET opens an SSE stream. */
static bool mcp_path(struct mx_str path)
{
    return under(path, MX_STR_LIT("/mcp")) || under(path, MX_STR_LIT("/sse"));
}

enum mx_guard_verdict mx_guard_check(const struct mx_guard_cfg *cfg, const struct mx_guard_req *req)
{
    /* RFC 9112 §3.2: an HTTP/1.1 request without Host is invalid anyway. */
    if (req->host == NULL || !host_allowed(cfg, *req->host))
        return MX_GUARD_BAD_HOST;
    if (req->origin && !mx_guard_origin_allowed(cfg, *req->origin) &&
        !same_origin(*req->origin, *req->host))
        return MX_GUARD_BAD_ORIGIN;
    if (cfg->client_token) {
        bool health = mx_str_eq(req->method, MX_STR_LIT("GET")) &&
                      mx_str_eq(req->path, MX_STR_LIT("/health"));
        bool page =
            mx_guard_is_page_path(req->path) && !mx_str_eq(req->path, MX_STR_LIT("/status/code"));
        bool login = mx_str_eq(req->path, MX_STR_LIT("/status/login"));
        /* The login cookie stands in for the token on the page's paths
         * only: it never opens /mcp, /metrics or the code that logs in. */
        if (page && !login && !req->page_login && !token_ok(cfg, req->authorization))
            return MX_GUARD_NO_LOGIN;
        if (!page && !health && !token_ok(cfg, req->authorization))
            return MX_GUARD_NO_TOKEN;
    }
    /*
     * A GET at an MCP endpoint only ever opens an SSE stream (MCP 2025-06-18,
     * Streamable HTTP: the client MUST list text/event-stream in Accept). A
     * page can make a browser send a GET with no Origin and no custom header
     * (an <img> or <script> tag), whose Accept names images and the wildcard range; refused
     * here, it never reaches an upstream with its credential nor wakes one.
     */
    if (mx_str_eq(req->method, MX_STR_LIT("GET")) && mcp_path(req->path) &&
        !mx_rev_accepts(req->accept, "text/event-stream", false))
        return MX_GUARD_NOT_STREAM;
    return MX_GUARD_OK;
}

bool mx_guard_is_page_path(struct mx_str path)
{
    static const struct mx_str status = {"/status", 7};
    if (mx_str_eq(path, MX_STR_LIT("/")))
        return true;
    return path.len >= status.len && memcmp(path.p, status.p, status.len) == 0 &&
           (path.len == status.len || path.p[status.len] == '/');
}

int mx_guard_status(enum mx_guard_verdict v)
{
    return v == MX_GUARD_NOT_STREAM ? 406 : 403;
}

const char *mx_guard_message(enum mx_guard_verdict v)
{
    switch (v) {
    case MX_GUARD_OK:
        return "ok";
    case MX_GUARD_BAD_HOST:
        return "Host is not a loopback name or address; mcplex only answers requests addressed "
               "to this machine (DNS rebinding protection)";
    case MX_GUARD_BAD_ORIGIN:
        return "Origin not allowed; add it to [listen] allowed_origins to let this web page in";
    case MX_GUARD_NO_TOKEN:
        return "missing or wrong client token: configure your MCP client to send "
               "'Authorization: Bearer <token>' with the token named by [listen] client_token";
    case MX_GUARD_NO_LOGIN:
        return "the status page needs the client token: run `mcplex status --open` for a "
               "one-time login link, or send 'Authorization: Bearer <token>'";
    case MX_GUARD_NOT_STREAM:
        return "Not Acceptable: a GET at an MCP endpoint opens an SSE stream, and its Accept "
               "must list text/event-stream";
    }
    return "refused";
}
