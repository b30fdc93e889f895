/* SPDX-License-Identifier: MIT */
/* The last calls (callring.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "callring.h"

void mx_callring_copy(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap) {
        n = cap - 1;
        /* back off continuation bytes so no character is cut in half */
        while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
            n--;
    }
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

uint32_t mx_callring_session_hash(const char *id)
{
    uint32_t h = 2166136261u;
    if (id == NULL)
        return 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        h ^= *p;
        h *= 16777619u;
    }
    return h ? h : 1;
}

void mx_callring_push(struct mx_callring *ring, const struct mx_callrec *r)
{
    struct mx_callrec *slot = &ring->rec[ring->next];
    *slot = *r;
    slot->seq = ++ring->seq;
    ring->next = (ring->next + 1) % MX_CALLRING_CNT;
    if (ring->cnt < MX_CALLRING_CNT)
        ring->cnt++;
}

json_t *mx_callring_ms(double s)
{
    return s >= 0.0 ? json_real((double)(long long)(s * 1e6 + 0.5) / 1e3) : json_null();
}

json_t *mx_callrec_json(const struct mx_callrec *r)
{
    char at[40], session[16];
    time_t sec = (time_t)r->at;
    struct tm tm;
    gmtime_r(&sec, &tm);
    size_t n = strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(at + n, sizeof(at) - n, ".%03dZ", (int)((r->at - (double)sec) * 1000.0) % 1000);
    snprintf(session, sizeof(session), "s-%08x", (unsigned)r->session);
    json_t *o =
        json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "seq", (json_int_t)r->seq, "at", at,
                  "era", r->modern ? "2026-07-28" : "2025", "method", r->method, "server",
                  r->server, "target", r->target, "status", r->status, "outcome", r->outcome);
    json_object_set_new(o, "session", r->session ? json_string(session) : json_null());
    json_object_set_new(o, "wait_ms", mx_callring_ms(r->wait_s));
    json_object_set_new(o, "wake_ms", mx_callring_ms(r->wake_s));
    json_object_set_new(o, "upstream_ms", mx_callring_ms(r->upstream_s));
    json_object_set_new(o, "total_ms", mx_callring_ms(r->total_s));
    return o;
}

json_t *mx_callring_json(const struct mx_callring *ring)
{
    json_t *a = json_array();
    size_t first = (ring->next + MX_CALLRING_CNT - ring->cnt) % MX_CALLRING_CNT;
    for (size_t i = 0; i < ring->cnt; i++)
        json_array_append_new(a, mx_callrec_json(&ring->rec[(first + i) % MX_CALLRING_CNT]));
    return a;
}

void mx_callring_split(double t_recv, double t_up_start, double t_up_done, double now,
                       const double *wake_from, const double *wake_to, size_t wake_cnt,
                       struct mx_callsplit *out)
{
    out->wait_s = out->wake_s = out->upstream_s = -1.0;
    if (t_up_start > 0.0 && t_up_done >= t_up_start) {
        double wake = 0.0;
        for (size_t i = 0; i < wake_cnt; i++) {
            double from = wake_from[i], to = wake_to[i] > 0.0 ? wake_to[i] : now;
            if (from <= 0.0)
                continue;
            double a = from > t_up_start ? from : t_up_start;
            double b = to < t_up_done ? to : t_up_done;
            if (b > a)
                wake += b - a;
        }
        double up = t_up_done - t_up_start;
        if (wake > up)
            wake = up;
        out->wake_s = wake;
        out->upstream_s = up - wake;
        if (t_recv > 0.0 && t_up_start >= t_recv && now >= t_up_done)
            out->wait_s = (t_up_start - t_recv) + (now - t_up_done);
    } else if (t_up_start == 0.0 && t_recv > 0.0 && now >= t_recv) {
        out->wait_s = now - t_recv;
    }
}
