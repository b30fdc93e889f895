/* SPDX-License-Identifier: MIT */
/*
 * The state directory is the user's own: mx_dir_private() makes what is
 * missing 0700 and refuses a directory of another user or one that group or
 * others can write to; mx_file_write() never follows a planted name; and the
 * catalogue, written into <state_dir>/catalogue, goes through both.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "alloc.h"
#include "catalogue.h"
#include "diag.h"
#include "err.h"
#include "fileio.h"
#include "model.h"

static char tmp_dir[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/mx-test-state-XXXXXX");
    return mkdtemp(tmp_dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    return st.st_mode & 07777;
}

static int count_entries(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = mx_xmalloc(4096);
    size_t n = fread(buf, 1, 4095, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* A server "files" at a fixed URL, and the path of its catalogue under |state|. */
static char server_name[] = "files";
static char server_url[] = "http://127.0.0.1:1/mcp";

static char *catalogue_for(const char *state, struct mx_server_cfg *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->name = server_name;
    cfg->url = server_url;
    cfg->max_list_bytes = 16 * 1024 * 1024; /* the default */
    return mx_catalogue_path(state, cfg);
}

static int save(const char *path, const struct mx_server_cfg *cfg)
{
    json_t *lists[MX_CATALOGUE_KINDS] = {NULL};
    json_t *init = json_pack("{s:s}", "protocolVersion", "2025-06-18");
    lists[0] = json_pack("[{s:s}]", "name", "echo");
    int rc = mx_catalogue_save(path, cfg, init, lists);
    json_decref(init);
    json_decref(lists[0]);
    return rc;
}

/* Missing directories are made 0700 whatever the umask; what exists is checked. */
static void test_state_dir_private_makes_0700(void **state)
{
    (void)state;
    struct mx_diag d = {0};
    char *dir = mx_xasprintf("%s/a/b/c", tmp_dir);
    mode_t old = umask(0);
    int rc = mx_dir_private(dir, &d);
    umask(old);
    assert_int_equal(rc, 0);
    char *a = mx_xasprintf("%s/a", tmp_dir);
    assert_int_equal(mode_of(a), 0700);
    assert_int_equal(mode_of(dir), 0700);
    /* Again: it exists and is fine. */
    assert_int_equal(mx_dir_private(dir, &d), 0);
    free(a);
    free(dir);
}

static void test_state_dir_private_refuses(void **state)
{
    (void)state;
    struct mx_diag d = {0};
    static const mode_t open_modes[] = {0770, 0720, 0707, 0702, 01777};
    char *dir = mx_xasprintf("%s/state", tmp_dir);
    assert_int_equal(mkdir(dir, 0700), 0);

    for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
        assert_int_equal(chmod(dir, open_modes[i]), 0);
        memset(&d, 0, sizeof(d));
        assert_int_equal(mx_dir_private(dir, &d), MX_EPERM);
        assert_string_equal(d.file, dir);
        assert_non_null(strstr(d.msg, "writable by group or others"));
        assert_non_null(strstr(d.msg, "chmod 700"));
    }
    /* Readable by others is not the danger; writable is. */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(mx_dir_private(dir, &d), 0);

    /* Another user's directory: as root, make one; otherwise "/" is one. */
    const char *foreign = dir;
    if (geteuid() == 0)
        assert_int_equal(chown(dir, 1, 1), 0);
    else
        foreign = "/";
    memset(&d, 0, sizeof(d));
    assert_int_equal(mx_dir_private(foreign, &d), MX_EPERM);
    assert_non_null(strstr(d.msg, "not by this user"));

    /* Not a directory. */
    char *file = mx_xasprintf("%s/file", tmp_dir);
    write_text(file, "x");
    assert_int_not_equal(mx_dir_private(file, &d), 0);
    free(file);
    free(dir);
}

/*
 * The catalogue's temp file: a name planted where the old fixed name
 * (<path>.tmp.<pid>) was, as a symlink to a file of the user's, is not
 * followed; the victim keeps its bytes and the catalogue is written.
 */
static void test_state_dir_catalogue_no_follow(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    char *state_dir = mx_xasprintf("%s/state", tmp_dir);
    char *path = catalogue_for(state_dir, &cfg);
    char *cat_dir = mx_xasprintf("%s/catalogue", state_dir);
    char *victim = mx_xasprintf("%s/victim", tmp_dir);
    char *planted = mx_xasprintf("%s.tmp.%ld", path, (long)getpid());
    assert_int_equal(mkdir(state_dir, 0700), 0);
    assert_int_equal(mkdir(cat_dir, 0700), 0);
    write_text(victim, "precious\n");
    assert_int_equal(symlink(victim, planted), 0);

    assert_int_equal(save(path, &cfg), 0);
    char *v = slurp(victim);
    assert_string_equal(v, "precious\n");
    free(v);
    assert_int_equal(mode_of(path), 0600);
    /* Written whole, and it loads back. */
    json_t *init = NULL, *lists[MX_CATALOGUE_KINDS] = {NULL};
    assert_int_equal(mx_catalogue_load(path, &cfg, &init, lists), 0);
    assert_string_equal(json_string_value(json_object_get(init, "protocolVersion")), "2025-06-18");
    json_decref(init);
    for (int k = 0; k < MX_CATALOGUE_KINDS; k++)
        json_decref(lists[k]);
    /* No temp file left: the catalogue and the planted link only. */
    assert_int_equal(count_entries(cat_dir), 2);
    free(planted);
    free(victim);
    free(cat_dir);
    free(path);
    free(state_dir);
}

/* The upstream session kept beside a catalogue: owner-only, for its URL
 * only, gone when saved as none. */
static void test_state_dir_kept_session(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    char *state_dir = mx_xasprintf("%s/state", tmp_dir);
    char *path = catalogue_for(state_dir, &cfg);
    char *kept = mx_xasprintf("%s.session", path);
    char *sid = NULL, *version = NULL;
    assert_int_equal(mx_catalogue_session_load(path, &cfg, &sid, &version), MX_ENOTFOUND);
    assert_int_equal(mx_catalogue_session_save(path, &cfg, "0123abcd", "2025-11-25"), 0);
    assert_int_equal(mode_of(kept), 0600);
    assert_int_equal(mx_catalogue_session_load(path, &cfg, &sid, &version), 0);
    assert_string_equal(sid, "0123abcd");
    assert_string_equal(version, "2025-11-25");
    free(sid);
    free(version);
    /* another URL under the same name: not its session */
    static char other_url[] = "http://127.0.0.1:2/mcp";
    cfg.url = other_url;
    assert_int_equal(mx_catalogue_session_load(path, &cfg, &sid, &version), MX_ENOTFOUND);
    assert_null(sid);
    cfg.url = server_url;
    /* readable by others: not taken */
    assert_int_equal(chmod(kept, 0644), 0);
    assert_int_equal(mx_catalogue_session_load(path, &cfg, &sid, &version), MX_ENOTFOUND);
    assert_int_equal(chmod(kept, 0600), 0);
    assert_int_equal(mx_catalogue_session_save(path, &cfg, NULL, NULL), 0);
    assert_int_equal(access(kept, F_OK), -1);
    free(kept);
    free(path);
    free(state_dir);
}

/* A catalogue directory others can write to is not written into. */
static void test_state_dir_catalogue_refuses_open_dir(void **state)
{
    (void)state;
    struct mx_server_cfg cfg;
    char *state_dir = mx_xasprintf("%s/state", tmp_dir);
    char *path = catalogue_for(state_dir, &cfg);
    char *cat_dir = mx_xasprintf("%s/catalogue", state_dir);
    assert_int_equal(mkdir(state_dir, 0700), 0);
    assert_int_equal(mkdir(cat_dir, 0700), 0);
    assert_int_equal(chmod(cat_dir, 0777), 0);

    assert_int_equal(save(path, &cfg), MX_EIO);
    assert_int_equal(count_entries(cat_dir), 0);

    /* Made fresh, it is 0700 and written. */
    assert_int_equal(rmdir(cat_dir), 0);
    assert_int_equal(save(path, &cfg), 0);
    assert_int_equal(mode_of(cat_dir), 0700);
    assert_int_equal(count_entries(cat_dir), 1);
    free(cat_dir);
    free(path);
    free(state_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_state_dir_private_makes_0700, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_private_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_catalogue_no_follow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_catalogue_refuses_open_dir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_kept_session, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
