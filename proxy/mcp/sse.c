/* SPDX-License-Identifier: MIT */
/*
 * SSE framing both ways. Lines end in CRLF, LF or CR (WHATWG HTML
 * §9.2.6); a CR at the end of one chunk may be followed by the LF of the
 * same line ending in the next chunk, which saw_cr remembers.
 */
#include <string.h>

#include "err.h"
#include "num.h"
#include "sse.h"

void mx_sse_decoder_init(struct mx_sse_decoder *d, size_t max_event, mx_sse_event_cb cb, void *data)
{
    memset(d, 0, sizeof(*d));
    mx_buf_init(&d->line, max_event);
    mx_buf_init(&d->event, 256);
    mx_buf_init(&d->data, max_event);
    mx_buf_init(&d->id, 1024);
    d->retry_ms = -1;
    d->cb = cb;
    d->cb_data = data;
}

void mx_sse_decoder_clear(struct mx_sse_decoder *d)
{
    mx_buf_clear(&d->line);
    mx_buf_clear(&d->event);
    mx_buf_clear(&d->data);
    mx_buf_clear(&d->id);
}

static int dispatch(struct mx_sse_decoder *d)
{
    int rc = 0;
    if (d->has_data) {
        struct mx_sse_event ev;
        struct mx_str data = mx_buf_str(&d->data);
        /* the spec drops the final LF appended after the last data line */
        if (data.len && data.p[data.len - 1] == '\n')
            data.len--;
        ev.event = mx_buf_str(&d->event);
        ev.data = data;
        ev.id = mx_buf_str(&d->id);
        ev.retry_ms = d->retry_ms;
        rc = d->cb(&ev, d->cb_data);
    }
    mx_buf_reset(&d->event);
    mx_buf_reset(&d->data);
    d->has_data = 0;
    d->retry_ms = -1;
    return rc;
}

static int process_line(struct mx_sse_decoder *d, struct mx_str line)
{
    if (line.len == 0)
        return dispatch(d);
    if (line.p[0] == ':')
        return 0; /* comment */
    const char *colon = memchr(line.p, ':', line.len);
    struct mx_str field = line, value = {"", 0};
    if (colon) {
        field.len = (size_t)(colon - line.p);
        value = mx_str_make(colon + 1, line.len - field.len - 1);
        if (value.len && value.p[0] == ' ') {
            value.p++;
            value.len--;
        }
    }
    if (mx_str_eq(field, MX_STR_LIT("data"))) {
        if (mx_buf_append(&d->data, value.p, value.len) || mx_buf_append(&d->data, "\n", 1))
            return MX_ELIMIT;
        d->has_data = 1;
    } else if (mx_str_eq(field, MX_STR_LIT("event"))) {
        mx_buf_reset(&d->event);
        if (mx_buf_append(&d->event, value.p, value.len))
            return MX_ELIMIT;
    } else if (mx_str_eq(field, MX_STR_LIT("id"))) {
        if (memchr(value.p, '\0', value.len) == NULL) {
            mx_buf_reset(&d->id);
            if (mx_buf_append(&d->id, value.p, value.len))
                return MX_ELIMIT;
        }
    } else if (mx_str_eq(field, MX_STR_LIT("retry"))) {
        int64_t v;
        if (mx_num_parse(value.p, value.len, 0, 86400000, &v) == 0 && value.p[0] != '-' &&
            value.p[0] != '+')
            d->retry_ms = (long)v;
    }
    return 0;
}

int mx_sse_decode(struct mx_sse_decoder *d, const char *p, size_t len)
{
    static const char bom[3] = {'\xEF', '\xBB', '\xBF'};
    size_t i = 0;
    /* A UTF-8 BOM at the very start is ignored; bytes that only looked like
     * its beginning are ordinary line bytes (none is a line end). */
    while (d->bom_checked < 3 && i < len) {
        if (p[i] == bom[d->bom_checked]) {
            d->bom_checked++;
            i++;
            continue;
        }
        if (mx_buf_append(&d->line, bom, (size_t)d->bom_checked))
            return MX_ELIMIT;
        d->bom_checked = 3;
    }
    for (; i < len; i++) {
        char ch = p[i];
        if (d->saw_cr) {
            d->saw_cr = 0;
            if (ch == '\n')
                continue;
        }
        if (ch == '\r' || ch == '\n') {
            if (ch == '\r')
                d->saw_cr = 1;
            int rc = process_line(d, mx_buf_str(&d->line));
            mx_buf_reset(&d->line);
            if (rc)
                return rc;
            continue;
        }
        /* Copy the run up to the next line end in one go. */
        size_t j = i;
        while (j < len && p[j] != '\r' && p[j] != '\n')
            j++;
        if (mx_buf_append(&d->line, p + i, j - i))
            return MX_ELIMIT;
        i = j - 1;
    }
    return 0;
}

int mx_sse_encode(struct mx_buf *out, const char *event, const char *id, struct mx_str data)
{
    int rc = 0;
    size_t start = out->len;
    if (event && *event)
        rc |= mx_buf_printf(out, "event: %s\n", event);
    if (id && *id)
        rc |= mx_buf_printf(out, "id: %s\n", id);
    for (size_t pos = 0;;) {
        const char *nl = data.len > pos ? memchr(data.p + pos, '\n', data.len - pos) : NULL;
        size_t e = nl ? (size_t)(nl - data.p) : data.len;
        rc |= mx_buf_append(out, "data: ", 6);
        rc |= mx_buf_append(out, data.p + pos, e - pos);
        rc |= mx_buf_append(out, "\n", 1);
        if (nl == NULL)
            break;
        pos = e + 1;
    }
    rc |= mx_buf_append(out, "\n", 1);
    if (rc) {
        out->len = start;
        return MX_ELIMIT;
    }
    return 0;
}
