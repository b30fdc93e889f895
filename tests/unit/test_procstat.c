/* SPDX-License-Identifier: MIT */
/*
 * The process's own cost as process_* metrics report it: the numbers are
 * read, and move when the process opens a descriptor, touches memory and
 * spends CPU.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "procstat.h"

static void test_procstat_reads(void **state)
{
    (void)state;
    struct mx_procstat a, b;
    assert_int_equal(mx_procstat_read(&a), 0);
    assert_true(a.resident_bytes > 0);
    assert_true(a.virtual_bytes >= a.resident_bytes);
    assert_true(a.open_fds >= 3); /* stdin, stdout, stderr at least */
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur != RLIM_INFINITY)
        assert_int_equal(a.max_fds, (uint64_t)rl.rlim_cur);

    /* two more descriptors, 32 MiB touched, some CPU spent */
    int f1 = open("/dev/null", O_RDONLY | O_CLOEXEC), f2 = dup(f1);
    assert_true(f1 >= 0 && f2 >= 0);
    size_t big = 32u << 20;
    unsigned char *p = malloc(big);
    assert_non_null(p);
    memset(p, 1, big);
    volatile uint64_t h = 1;
    for (uint64_t i = 0; i < 50ULL * 1000 * 1000; i++)
        h = h * 31 + p[i % big];
    assert_int_equal(mx_procstat_read(&b), 0);
    assert_int_equal(b.open_fds, a.open_fds + 2);
    assert_true(b.resident_bytes >= a.resident_bytes + (big / 2));
    assert_true(b.cpu_seconds > a.cpu_seconds);
    free(p);
    close(f1);
    close(f2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_procstat_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
