/* SPDX-License-Identifier: MIT */
/*
 * Id and token mapping: two sessions using the same ids never cross, tokens
 * map back to the right client token, cancellation finds the upstream id,
 * server-to-client ids map both ways, and dropping a session leaves the
 * others alone. Also the table growing past its first size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"
#include "idmap.h"

struct call_case {
    uint64_t session;
    const char *id;    /* JSON */
    const char *token; /* JSON or NULL */
    size_t upstream;
    uint64_t upsess;
};

static const struct call_case calls[] = {
    {1, "1", "\"tok\"", 0, 10}, {2, "1", "\"tok\"", 0, 11}, {1, "\"1\"", NULL, 1, 20},
    {2, "2", "7", 2, 30},       {3, "1", NULL, 0, 10},
};

static json_t *j(const char *text)
{
    return text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
}

static void test_idmap_calls(void **state)
{
    (void)state;
    struct mx_idmap *m = mx_idmap_new();
    const struct mx_idmap_call *got[5];
    size_t n = sizeof(calls) / sizeof(calls[0]);
    for (size_t i = 0; i < n; i++) {
        json_t *id = j(calls[i].id), *tok = j(calls[i].token);
        assert_int_equal(mx_idmap_call_add(m, calls[i].session, id, tok, calls[i].upstream,
                                           calls[i].upsess, (void *)(uintptr_t)(i + 1), &got[i]),
                         0);
        json_decref(id);
        json_decref(tok);
    }
    assert_int_equal(mx_idmap_call_cnt(m), n);
    for (size_t i = 0; i < n; i++) {
        /* upstream ids are all different, whatever the clients used */
        for (size_t k = 0; k < i; k++)
            assert_true(got[i]->up_id != got[k]->up_id);
        json_t *id = j(calls[i].id);
        assert_ptr_equal(mx_idmap_call_by_client(m, calls[i].session, id), got[i]);
        json_decref(id);
        assert_ptr_equal(mx_idmap_call_by_up(m, got[i]->up_id), got[i]);
        json_t *upj = json_integer((json_int_t)got[i]->up_id);
        assert_ptr_equal(mx_idmap_call_by_up_json(m, upj), got[i]);
        /* a token maps back only for calls that asked for progress, and
         * only as written by the upstream session the call went over */
        const struct mx_idmap_call *t;
        int rc = mx_idmap_call_from(m, calls[i].upstream, calls[i].upsess, upj, &t);
        assert_int_equal(rc, calls[i].token ? 0 : MX_ENOTFOUND);
        assert_ptr_equal(t, calls[i].token ? got[i] : NULL);
        if (calls[i].token) {
            /* the same upstream on another session, another upstream on the same key */
            assert_int_equal(
                mx_idmap_call_from(m, calls[i].upstream, calls[i].upsess + 100, upj, &t), MX_EPERM);
            assert_null(t);
            assert_int_equal(mx_idmap_call_from(m, calls[i].upstream + 1, calls[i].upsess, upj, &t),
                             MX_EPERM);
            assert_null(t);
        }
        json_decref(upj);
        assert_int_equal((uintptr_t)got[i]->data, i + 1);
        assert_int_equal(got[i]->upstream, calls[i].upstream);
    }
    /* a string "1" is not the integer 1 */
    json_t *one = json_integer(1), *sone = json_string("1"), *two = json_integer(2);
    assert_ptr_equal(mx_idmap_call_by_client(m, 1, one), got[0]);
    assert_ptr_equal(mx_idmap_call_by_client(m, 1, sone), got[2]);
    assert_null(mx_idmap_call_by_client(m, 1, two));
    assert_null(mx_idmap_call_by_client(m, 9, one));
    /* the same id again in the same session while in flight */
    const struct mx_idmap_call *dup;
    assert_int_equal(mx_idmap_call_add(m, 1, one, NULL, 0, 10, NULL, &dup), MX_EEXIST);
    /* bad ids and tokens */
    json_t *nul = json_null(), *obj = json_object();
    assert_int_equal(mx_idmap_call_add(m, 1, nul, NULL, 0, 10, NULL, &dup), MX_EINVAL);
    assert_int_equal(mx_idmap_call_add(m, 1, two, obj, 0, 10, NULL, &dup), MX_EINVAL);
    assert_int_equal(mx_idmap_call_add(m, 0, two, NULL, 0, 10, NULL, &dup), MX_EINVAL);
    /* strings that look like another id's key are their own: a string
     * holding NUL, and one spelling that string's JSON */
    json_t *z = json_stringn("a\0b", 3), *zj = json_string("a\\u0000b\""), *neg = json_string("-1");
    json_t *ineg = json_integer(-1);
    const struct mx_idmap_call *ez, *ezj, *eneg, *eineg;
    assert_int_equal(mx_idmap_call_add(m, 5, z, NULL, 0, 10, NULL, &ez), 0);
    assert_int_equal(mx_idmap_call_add(m, 5, zj, NULL, 0, 10, NULL, &ezj), 0);
    assert_int_equal(mx_idmap_call_add(m, 5, neg, NULL, 0, 10, NULL, &eneg), 0);
    assert_int_equal(mx_idmap_call_add(m, 5, ineg, NULL, 0, 10, NULL, &eineg), 0);
    assert_ptr_equal(mx_idmap_call_by_client(m, 5, z), ez);
    assert_ptr_equal(mx_idmap_call_by_client(m, 5, zj), ezj);
    assert_ptr_equal(mx_idmap_call_by_client(m, 5, neg), eneg);
    assert_ptr_equal(mx_idmap_call_by_client(m, 5, ineg), eineg);
    assert_int_equal(mx_idmap_call_add(m, 5, z, NULL, 0, 10, NULL, &dup), MX_EEXIST);
    mx_idmap_call_remove(m, ez->up_id);
    mx_idmap_call_remove(m, ezj->up_id);
    mx_idmap_call_remove(m, eneg->up_id);
    mx_idmap_call_remove(m, eineg->up_id);
    json_decref(z);
    json_decref(zj);
    json_decref(neg);
    json_decref(ineg);
    /* every call names the upstream session it goes over */
    assert_int_equal(mx_idmap_call_add(m, 1, two, NULL, 0, 0, NULL, &dup), MX_EINVAL);
    assert_null(mx_idmap_call_by_up_json(m, sone));
    assert_null(mx_idmap_call_by_up_json(m, nul));
    /* remove one; the other session's equal id stays */
    mx_idmap_call_remove(m, got[0]->up_id);
    assert_null(mx_idmap_call_by_client(m, 1, one));
    assert_ptr_equal(mx_idmap_call_by_client(m, 2, one), got[1]);
    mx_idmap_call_remove(m, 999999);
    /* dropping session 2 reports its calls and leaves 1 and 3 */
    size_t seen = 0;
    size_t dropped = mx_idmap_drop_session(m, 2, NULL, NULL, NULL);
    (void)seen;
    assert_int_equal(dropped, 2);
    assert_int_equal(mx_idmap_call_cnt(m), 2);
    assert_ptr_equal(mx_idmap_call_by_client(m, 1, sone), got[2]);
    assert_ptr_equal(mx_idmap_call_by_client(m, 3, one), got[4]);
    json_decref(one);
    json_decref(sone);
    json_decref(two);
    json_decref(nul);
    json_decref(obj);
    mx_idmap_free(m);
    mx_idmap_free(NULL);
}

static void count_call(const struct mx_idmap_call *c, void *arg)
{
    size_t *n = arg;
    assert_int_equal(c->session, 7);
    (*n)++;
}

static void test_idmap_grow(void **state)
{
    (void)state;
    struct mx_idmap *m = mx_idmap_new();
    const struct mx_idmap_call *c;
    for (int i = 0; i < 1000; i++) {
        json_t *id = json_integer(i);
        assert_int_equal(mx_idmap_call_add(m, (uint64_t)(i % 2 ? 7 : 8), id, id, 0, 1, NULL, &c),
                         0);
        json_decref(id);
    }
    for (int i = 0; i < 1000; i++) {
        json_t *id = json_integer(i);
        c = mx_idmap_call_by_client(m, (uint64_t)(i % 2 ? 7 : 8), id);
        assert_non_null(c);
        assert_int_equal(json_integer_value(c->client_token), i);
        json_decref(id);
    }
    size_t n = 0;
    assert_int_equal(mx_idmap_drop_session(m, 7, count_call, NULL, &n), 500);
    assert_int_equal(n, 500);
    assert_int_equal(mx_idmap_call_cnt(m), 500);
    mx_idmap_free(m);
}

static void count_s2c(const struct mx_idmap_s2c *e, void *arg)
{
    size_t *n = arg;
    assert_int_equal(e->session, 3);
    (*n)++;
}

static void test_idmap_s2c(void **state)
{
    size_t n3 = 0;
    (void)state;
    struct mx_idmap *m = mx_idmap_new();
    const struct mx_idmap_s2c *a, *b, *c, *x;
    json_t *zero = json_integer(0), *szero = json_string("0");
    /* two upstream sessions sending the same id to two client sessions */
    assert_int_equal(mx_idmap_s2c_add(m, 1, 100, 0, zero, 5, &a), 0);
    assert_int_equal(mx_idmap_s2c_add(m, 2, 200, 1, zero, 0, &b), 0);
    assert_int_equal(mx_idmap_s2c_add(m, 1, 100, 0, szero, 0, &c), 0);
    assert_int_equal(mx_idmap_s2c_add(m, 1, 100, 0, zero, 0, &x), MX_EEXIST);
    assert_true(a->client_id != b->client_id && b->client_id != c->client_id);
    json_t *ida = json_integer((json_int_t)a->client_id);
    json_t *idb = json_integer((json_int_t)b->client_id);
    /* a client can only answer what was sent to it */
    assert_ptr_equal(mx_idmap_s2c_by_client(m, 1, ida), a);
    assert_null(mx_idmap_s2c_by_client(m, 2, ida));
    assert_ptr_equal(mx_idmap_s2c_by_client(m, 2, idb), b);
    assert_ptr_equal(mx_idmap_s2c_by_up(m, 100, zero), a);
    assert_ptr_equal(mx_idmap_s2c_by_up(m, 100, szero), c);
    assert_ptr_equal(mx_idmap_s2c_by_up(m, 200, zero), b);
    assert_null(mx_idmap_s2c_by_up(m, 300, zero));
    assert_int_equal(a->call, 5);
    assert_true(json_equal(a->up_id, zero));
    assert_int_equal(mx_idmap_s2c_cnt(m), 3);
    /* an upstream session that went away takes its requests along */
    assert_int_equal(mx_idmap_drop_upsess(m, 100), 2);
    assert_null(mx_idmap_s2c_by_client(m, 1, ida));
    mx_idmap_s2c_remove(m, b->client_id);
    assert_int_equal(mx_idmap_s2c_cnt(m), 0);
    json_t *nul = json_null();
    assert_int_equal(mx_idmap_s2c_add(m, 1, 100, 0, nul, 0, &x), MX_EINVAL);
    assert_int_equal(mx_idmap_s2c_add(m, 0, 100, 0, zero, 0, &x), MX_EINVAL);
    for (int i = 0; i < 300; i++) {
        json_t *id = json_integer(i);
        assert_int_equal(mx_idmap_s2c_add(m, 3, 400, 0, id, 0, &x), 0);
        json_decref(id);
    }
    assert_int_equal(mx_idmap_drop_session(m, 3, NULL, count_s2c, &n3), 300);
    assert_int_equal(n3, 300);
    json_decref(nul);
    json_decref(ida);
    json_decref(idb);
    json_decref(zero);
    json_decref(szero);
    mx_idmap_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idmap_calls),
        cmocka_unit_test(test_idmap_grow),
        cmocka_unit_test(test_idmap_s2c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
