/* SPDX-License-Identifier: MIT */
/* SSE decoder/encoder: every split of a stream yields the same events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "sse.h"

struct collected {
    struct mx_buf out; /* "event|id|data|retry\n" per event */
    int cnt;
};

static int collect(const struct mx_sse_event *ev, void *data)
{
    struct collected *c = data;
    c->cnt++;
    mx_buf_printf(&c->out, "%.*s|%.*s|%.*s|%ld\n", (int)ev->event.len, ev->event.p, (int)ev->id.len,
                  ev->id.p, (int)ev->data.len, ev->data.p, ev->retry_ms);
    return 0;
}

static void assert_buf_is(const struct mx_buf *b, const char *want)
{
    assert_int_equal(mx_buf_len(b), strlen(want));
    assert_memory_equal(mx_buf_data(b), want, strlen(want));
}

static void decode_split(const char *stream, size_t len, size_t a, size_t b, struct collected *c)
{
    struct mx_sse_decoder d;
    mx_buf_init(&c->out, 1 << 16);
    c->cnt = 0;
    mx_sse_decoder_init(&d, 4096, collect, c);
    assert_int_equal(mx_sse_decode(&d, stream, a), 0);
    assert_int_equal(mx_sse_decode(&d, stream + a, b - a), 0);
    assert_int_equal(mx_sse_decode(&d, stream + b, len - b), 0);
    mx_sse_decoder_clear(&d);
}

static const struct {
    const char *stream;
    const char *want;
    int cnt;
} cases[] = {
    {"data: {\"a\":1}\n\n", "||{\"a\":1}|-1\n", 1},
    {"event: message\r\nid: 7\r\ndata: x\r\n\r\n", "message|7|x|-1\n", 1},
    {"data: a\rdata: b\r\r", "||a\nb|-1\n", 1},
    {": comment\n\ndata:nospace\n\n", "||nospace|-1\n", 1},
    {"\xEF\xBB\xBF"
     "data: bom\n\n",
     "||bom|-1\n", 1},
    {"id: 1\ndata: one\n\ndata: two\n\n", "|1|one|-1\n|1|two|-1\n", 2},
    {"retry: 3000\ndata: r\n\n", "||r|3000\n", 1},
    {"event: e\n\n", "", 0}, /* no data: nothing dispatched */
    {"data: unterminated", "", 0},
    {"data\n\n", "|||-1\n", 1},
    {"data: a\ndata: b\n\nid: 9\nevent: end\ndata: c\n\n", "||a\nb|-1\nend|9|c|-1\n", 2},
};

static void test_sse_decode_every_split(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        size_t len = strlen(cases[k].stream);
        for (size_t a = 0; a <= len; a++) {
            for (size_t b = a; b <= len; b++) {
                struct collected c;
                decode_split(cases[k].stream, len, a, b, &c);
                assert_int_equal(c.cnt, cases[k].cnt);
                assert_buf_is(&c.out, cases[k].want);
                mx_buf_clear(&c.out);
            }
        }
    }
}

static void test_sse_decode_byte_at_a_time(void **state)
{
    (void)state;
    const char *s = "event: message\r\ndata: {\"jsonrpc\":\"2.0\"}\r\n\r\ndata: 2\n\n";
    struct collected c;
    struct mx_sse_decoder d;
    mx_buf_init(&c.out, 4096);
    c.cnt = 0;
    mx_sse_decoder_init(&d, 4096, collect, &c);
    for (size_t i = 0; i < strlen(s); i++)
        assert_int_equal(mx_sse_decode(&d, s + i, 1), 0);
    assert_int_equal(c.cnt, 2);
    assert_buf_is(&c.out, "message||{\"jsonrpc\":\"2.0\"}|-1\n||2|-1\n");
    mx_sse_decoder_clear(&d);
    mx_buf_clear(&c.out);
}

static void test_sse_decode_limit(void **state)
{
    (void)state;
    struct collected c;
    struct mx_sse_decoder d;
    char big[200];
    memset(big, 'x', sizeof(big));
    mx_buf_init(&c.out, 4096);
    mx_sse_decoder_init(&d, 100, collect, &c);
    assert_int_equal(mx_sse_decode(&d, "data: ", 6), 0);
    assert_int_equal(mx_sse_decode(&d, big, sizeof(big)), MX_ELIMIT);
    mx_sse_decoder_clear(&d);
    mx_buf_clear(&c.out);
}

static void test_sse_encode_roundtrip(void **state)
{
    (void)state;
    const char *datas[] = {"{\"x\":1}", "a\nb", "", "trailing\n"};
    for (size_t k = 0; k < sizeof(datas) / sizeof(datas[0]); k++) {
        struct mx_buf out;
        struct collected c;
        mx_buf_init(&out, 4096);
        assert_int_equal(mx_sse_encode(&out, "message", "5", mx_str_cstr(datas[k])), 0);
        decode_split(mx_buf_data(&out), mx_buf_len(&out), 0, 0, &c);
        assert_int_equal(c.cnt, 1);
        char want[256];
        snprintf(want, sizeof(want), "message|5|%s|-1\n", datas[k]);
        assert_buf_is(&c.out, want);
        mx_buf_clear(&out);
        mx_buf_clear(&c.out);
    }
}

static void test_sse_encode_cap(void **state)
{
    (void)state;
    struct mx_buf out;
    mx_buf_init(&out, 16);
    assert_int_equal(mx_sse_encode(&out, NULL, NULL, mx_str_cstr("0123456789")), MX_ELIMIT);
    assert_int_equal(mx_buf_len(&out), 0);
    mx_buf_clear(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sse_decode_every_split),
        cmocka_unit_test(test_sse_decode_byte_at_a_time),
        cmocka_unit_test(test_sse_decode_limit),
        cmocka_unit_test(test_sse_encode_roundtrip),
        cmocka_unit_test(test_sse_encode_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
