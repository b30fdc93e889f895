/* SPDX-License-Identifier: MIT */
/*
 * The legacy HTTP+SSE transport's `endpoint` event on arbitrary input: the
 * first line picks a configured stream url (one of a few fixed bases), the
 * rest is the event data. Never crashes; an accepted endpoint is an http(s)
 * URL of the base's origin (the credential never leaves it) with no space
 * or control character; a refusal always says why.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "log.h"
#include "upsess_sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const bases[] = {
    "http://127.0.0.1:8000/sse",
    "https://sandbox.example:8443/a/b/sse?x=1",
    "http://[::1]:9/sse",
    "https://Host.Example/sse",
};
/* the origin each base keeps: scheme://host, then the port (or the
 * scheme's default, written or not) */
static const char *const origins[] = {
    "http://127.0.0.1",
    "https://sandbox.example",
    "http://[::1]",
    "https://host.example",
};
static const char *const ports[] = {":8000", ":8443", ":9", ""};
static const char *const default_ports[] = {":80", ":443", ":80", ":443"};

static bool starts_with(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether |url| has the origin of base |b|, then a path, query or end. */
static bool same_origin(const char *url, size_t b)
{
    if (!starts_with(url, origins[b]))
        return false;
    const char *p = url + strlen(origins[b]);
    if (ports[b][0] && starts_with(p, ports[b]))
        p += strlen(ports[b]);
    else if (starts_with(p, default_ports[b]) && ports[b][0] == '\0')
        p += strlen(default_ports[b]);
    else if (ports[b][0])
        return false;
    return *p == '/' || *p == '?' || *p == '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t b = data[0] % (sizeof(bases) / sizeof(bases[0]));
    struct mx_str ref = mx_str_make((const char *)data + 1, size - 1);
    char *out = NULL;
    const char *why = NULL;
    int rc = mx_sse_endpoint_resolve(bases[b], ref, &out, &why);
    if (rc != 0) {
        MX_ASSERT(rc == MX_EINVAL || rc == MX_EPERM);
        MX_ASSERT(why != NULL && out == NULL);
        return 0;
    }
    MX_ASSERT(out != NULL);
    for (const char *p = out; *p; p++)
        MX_ASSERT((unsigned char)*p > 0x20 && (unsigned char)*p != 0x7f);
    /* same origin: the credential goes nowhere else */
    MX_ASSERT(same_origin(out, b));
    free(out);
    return 0;
}
