/* SPDX-License-Identifier: MIT */
/*
 * Client sessions of /mcp: unguessable ids, lookup (wrong length, unknown,
 * closed), the session cap at max and max+1, idle expiry on the loop (not
 * while busy), close telling the owner once, the messages waiting for a GET
 * stream at the bounds of its buffer and what a Last-Event-ID may resume,
 * and nothing left after the table goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ev.h>

#include "err.h"
#include "session.h"

static int closed;

static void on_close(struct mx_session *s, void *data)
{
    (void)s;
    (void)data;
    closed++;
}

static const struct mx_session_cbs cbs = {on_close};

static void test_session_table(void **state)
{
    struct ev_loop *loop = ev_default_loop(0);
    (void)state;
    closed = 0;
    struct mx_session_table *t = mx_session_table_new(loop, 60000, 3, &cbs, NULL);
    struct mx_session *a = mx_session_new(t), *b = mx_session_new(t), *c = mx_session_new(t);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_null(mx_session_new(t)); /* at the cap */
    assert_null(mx_session_new(t));
    assert_int_equal(mx_session_refused_cnt(t), 2);
    assert_int_equal(mx_session_cnt(t), 3);
    assert_int_equal(strlen(a->id), MX_SESSION_ID_LEN);
    assert_string_not_equal(a->id, b->id);
    assert_true(a->key && b->key && a->key != b->key);
    assert_ptr_equal(mx_session_find(t, mx_str_cstr(b->id)), b);
    assert_null(mx_session_find(t, mx_str_make(b->id, MX_SESSION_ID_LEN - 1)));
    assert_null(mx_session_find(t, MX_STR_LIT("0123456789abcdef0123456789abcdef")));
    assert_ptr_equal(mx_session_by_key(t, c->key), c);
    mx_session_close(b);
    mx_session_close(b);
    assert_int_equal(closed, 1);
    assert_null(mx_session_find(t, mx_str_cstr(b->id))); /* b is still allocated here */
    assert_non_null(mx_session_new(t));                  /* room again */
    ev_run(loop, EVRUN_NOWAIT);                          /* the reaper frees b */
    mx_session_table_free(t);
    assert_int_equal(closed, 4);
    assert_int_equal(mx_session_live_cnt(), 0);
}

static void test_session_idle_expiry(void **state)
{
    struct ev_loop *loop = ev_default_loop(0);
    (void)state;
    closed = 0;
    struct mx_session_table *t = mx_session_table_new(loop, 30, 10, &cbs, NULL);
    struct mx_session *busy = mx_session_new(t);
    mx_session_new(t);
    busy->busy = 1; /* a request in flight */
    ev_tstamp end = ev_now(loop) + 1.0;
    while (closed < 1 && ev_now(loop) < end)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(closed, 1);
    assert_int_equal(mx_session_cnt(t), 1);
    assert_ptr_equal(mx_session_first(t), busy);
    busy->busy = 0;
    end = ev_now(loop) + 1.0;
    while (closed < 2 && ev_now(loop) < end)
        ev_run(loop, EVRUN_ONCE);
    assert_int_equal(closed, 2);
    mx_session_table_free(t);
    assert_int_equal(mx_session_live_cnt(), 0);
}

/* Whether a GET with Last-Event-ID |id| could resume now (the checks only). */
static int can_resume(struct mx_session *s, const char *id, uint64_t *oldest)
{
    return mx_session_resume(s, NULL, mx_str_cstr(id), oldest);
}

static void test_session_queue_bounds(void **state)
{
    struct ev_loop *loop = ev_default_loop(0);
    uint64_t oldest = 0;
    (void)state;
    struct mx_session_table *t = mx_session_table_new(loop, 60000, 1, &cbs, NULL);
    struct mx_session *s = mx_session_new(t);
    json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/x");
    /* without a GET stream messages wait, up to the count bound: a resume
     * from before the first still finds them all */
    for (int i = 0; i < MX_SESSION_QUEUE_MAX; i++)
        mx_session_push(s, msg);
    assert_int_equal(can_resume(s, "0-0", &oldest), 0);
    mx_session_push(s, msg);
    assert_int_equal(can_resume(s, "0-0", &oldest), MX_ELIMIT); /* the oldest went */
    assert_int_equal(oldest, 1);
    assert_int_equal(can_resume(s, "0-1", &oldest), 0);
    /* newer than the newest, another stream, not an id */
    assert_int_equal(can_resume(s, "0-258", &oldest), MX_ENOTFOUND);
    assert_int_equal(can_resume(s, "7-1", &oldest), MX_ENOTFOUND);
    assert_int_equal(can_resume(s, "x", &oldest), MX_EINVAL);
    assert_int_equal(can_resume(s, "0-", &oldest), MX_EINVAL);
    json_decref(msg);
    mx_session_table_free(t);

    /* the byte bound: one big message pushes all older ones out */
    struct mx_rstream_limits lim = {1000, 64 * 1024};
    t = mx_session_table_new(loop, 60000, 1, &cbs, NULL);
    mx_session_table_set_limits(t, &lim);
    s = mx_session_new(t);
    size_t big = 40 * 1024;
    char *text = malloc(big);
    memset(text, 'x', big);
    msg = json_pack("{s:s%}", "data", text, big);
    mx_session_push(s, msg);
    assert_int_equal(can_resume(s, "0-0", &oldest), 0);
    mx_session_push(s, msg);
    assert_int_equal(can_resume(s, "0-0", &oldest), MX_ELIMIT);
    assert_int_equal(can_resume(s, "0-1", &oldest), 0);
    json_decref(msg);
    free(text);
    mx_session_table_free(t);
    assert_int_equal(mx_session_live_cnt(), 0);
    assert_int_equal(mx_rstream_live_cnt(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_table),
        cmocka_unit_test(test_session_idle_expiry),
        cmocka_unit_test(test_session_queue_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
