/* SPDX-License-Identifier: MIT */
/*
 * Task ids toward clients: a round trip, the same text for the same task,
 * and every forgery refused: another key, a changed byte, an alias swapped
 * inside a sealed id, a cursor passed as a task id, bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cursor.h"
#include "err.h"
#include "taskid.h"

static const uint8_t key[MX_CURSOR_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const uint8_t other_key[MX_CURSOR_KEY_LEN] = {9, 8, 7};

static int encode(const char *alias, const char *up, const uint8_t *k, char *out)
{
    return mx_taskid_encode(mx_str_cstr(alias), mx_str_cstr(up), k, out, MX_TASKID_TEXT_MAX);
}

static int decode(const char *text, const uint8_t *k, struct mx_taskid *t)
{
    return mx_taskid_decode(mx_str_cstr(text), k, t);
}

static void test_taskid_round_trip(void **state)
{
    char a[MX_TASKID_TEXT_MAX], b[MX_TASKID_TEXT_MAX];
    struct mx_taskid t;
    (void)state;
    int n = encode("sim", "0f3a-task", key, a);
    assert_true(n > 0);
    assert_int_equal(strlen(a), (size_t)n);
    assert_int_equal(decode(a, key, &t), 0);
    assert_string_equal(t.alias, "sim");
    assert_string_equal(t.up, "0f3a-task");
    assert_int_equal(t.up_len, 9);
    /* deterministic: tasks/get answers carry the id the client holds */
    assert_int_equal(encode("sim", "0f3a-task", key, b), n);
    assert_string_equal(a, b);
    /* the upstream's id does not show through as it is */
    assert_null(strstr(a, "0f3a-task"));
    /* safe in JSON, URLs and the Mcp-Name header */
    for (int i = 0; i < n; i++)
        assert_non_null(
            strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", a[i]));
}

static void test_taskid_forgery(void **state)
{
    char a[MX_TASKID_TEXT_MAX], b[MX_TASKID_TEXT_MAX], f[MX_TASKID_TEXT_MAX];
    struct mx_taskid t;
    (void)state;
    assert_true(encode("alpha", "task-1", key, a) > 0);
    assert_true(encode("bravo", "task-1", key, b) > 0);
    /* the same upstream task id under two upstreams: two different ids */
    assert_string_not_equal(a, b);
    /* another key (an earlier run without the kept key, another gateway) */
    assert_int_equal(decode(a, other_key, &t), MX_EINVAL);
    /* every single changed character */
    for (size_t i = 0; i < strlen(a); i++) {
        memcpy(f, a, sizeof(a));
        f[i] = f[i] == 'A' ? 'B' : 'A';
        assert_int_equal(decode(f, key, &t), MX_EINVAL);
    }
    /* an id sealed for one upstream, its alias bytes rewritten to another of
     * the same length ("alpha" -> "bravo") with the seal kept: refused */
    uint8_t raw[1024];
    long n = mx_cursor_open(mx_str_cstr(a), key, raw, sizeof(raw));
    assert_true(n > 0);
    memcpy(raw + 2, "bravo", 5);
    /* reseal under the wrong key: what a client without the key can do */
    assert_true(mx_cursor_seal(raw, (size_t)n, other_key, f, sizeof(f)) > 0);
    assert_int_equal(decode(f, key, &t), MX_EINVAL);
    /* truncated, empty, not base64url, a cursor's text */
    memcpy(f, a, sizeof(a));
    f[strlen(f) - 2] = '\0';
    assert_int_equal(decode(f, key, &t), MX_EINVAL);
    assert_int_equal(decode("", key, &t), MX_EINVAL);
    assert_int_equal(decode("not a task id!", key, &t), MX_EINVAL);
    struct mx_cursor c = {.kind = 0, .cnt = 1, .v = {{.src = 0, .gen = 1, .pos = 2}}};
    char cur[MX_CURSOR_TEXT_MAX];
    assert_true(mx_cursor_encode(&c, key, cur, sizeof(cur)) > 0);
    assert_int_equal(decode(cur, key, &t), MX_EINVAL);
    /* and a task id is no cursor */
    struct mx_cursor back;
    assert_int_equal(mx_cursor_decode(mx_str_cstr(a), key, &back), MX_EINVAL);
}

static void test_taskid_bounds(void **state)
{
    char out[MX_TASKID_TEXT_MAX];
    char alias[MX_TASKID_ALIAS_MAX + 2];
    char up[MX_TASKID_UP_MAX + 2];
    struct mx_taskid t;
    (void)state;
    memset(alias, 'a', sizeof(alias));
    memset(up, 'u', sizeof(up));
    alias[MX_TASKID_ALIAS_MAX] = '\0';
    up[MX_TASKID_UP_MAX] = '\0';
    /* at the caps: fits MX_TASKID_TEXT_MAX exactly */
    int n = encode(alias, up, key, out);
    assert_int_equal(n, MX_TASKID_TEXT_MAX - 1);
    assert_int_equal(decode(out, key, &t), 0);
    assert_int_equal(t.up_len, MX_TASKID_UP_MAX);
    /* one past either cap, or empty */
    alias[MX_TASKID_ALIAS_MAX] = 'a';
    alias[MX_TASKID_ALIAS_MAX + 1] = '\0';
    assert_int_equal(encode(alias, "x", key, out), MX_EINVAL);
    up[MX_TASKID_UP_MAX] = 'u';
    up[MX_TASKID_UP_MAX + 1] = '\0';
    assert_int_equal(encode("a", up, key, out), MX_EINVAL);
    assert_int_equal(encode("", "x", key, out), MX_EINVAL);
    assert_int_equal(encode("a", "", key, out), MX_EINVAL);
    /* a buffer one byte short */
    assert_int_equal(mx_taskid_encode(mx_str_cstr("sim"), mx_str_cstr("t"), key, out, 8),
                     MX_ELIMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taskid_round_trip),
        cmocka_unit_test(test_taskid_forgery),
        cmocka_unit_test(test_taskid_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
