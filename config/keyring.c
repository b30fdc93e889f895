/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsecret/secret.h>

#include "alloc.h"
#include "err.h"
#include "keyring.h"

#define LIBSECRET "libsecret-1.so.0"

/* What libsecret offers, found once. */
struct lib {
    void *handle;
    __typeof__(secret_password_lookup_sync) *lookup;
    __typeof__(secret_password_free) *password_free;
    __typeof__(g_error_free) *error_free;
};

static struct lib *lib_load(char *why, size_t why_cap)
{
    static struct lib lib;
    if (lib.handle)
        return &lib;
    void *h = dlopen(LIBSECRET, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(why, why_cap,
                 "keyring: needs libsecret (%s), which is not installed; install it "
                 "(Debian: apt install libsecret-1-0) or use vault:NAME",
                 LIBSECRET);
        return NULL;
    }
    /* POSIX dlsym: a function's address through an object pointer */
    *(void **)&lib.lookup = dlsym(h, "secret_password_lookup_sync");
    *(void **)&lib.password_free = dlsym(h, "secret_password_free");
    *(void **)&lib.error_free = dlsym(h, "g_error_free");
    if (lib.lookup == NULL || lib.password_free == NULL || lib.error_free == NULL) {
        snprintf(why, why_cap, "keyring: %s lacks the functions mcplex uses", LIBSECRET);
        dlclose(h);
        return NULL;
    }
    lib.handle = h;
    return &lib;
}

int mx_keyring_lookup(const char *service, const char *account, char **out, size_t *len, char *why,
                      size_t why_cap)
{
    /* secret-tool's own schema: items are matched by their attributes */
    static const SecretSchema schema = {
        .name = "org.freedesktop.Secret.Generic",
        .flags = SECRET_SCHEMA_DONT_MATCH_NAME,
        .attributes = {{"service", SECRET_SCHEMA_ATTRIBUTE_STRING},
                       {"account", SECRET_SCHEMA_ATTRIBUTE_STRING}},
    };
    struct lib *l = lib_load(why, why_cap);
    GError *err = NULL;
    *out = NULL;
    *len = 0;
    if (l == NULL)
        return MX_EIO;
    gchar *pw = l->lookup(&schema, NULL, &err, "service", service, "account", account, NULL);
    if (err) {
        /* libsecret's message names the bus or the collection, never a value */
        snprintf(why, why_cap,
                 "no Secret Service answered (%s); start one (gnome-keyring-daemon, KeePassXC) "
                 "in this session, or use vault:NAME",
                 err->message ? err->message : "unknown error");
        l->error_free(err);
        if (pw)
            l->password_free(pw);
        return MX_EIO;
    }
    if (pw == NULL) {
        snprintf(why, why_cap,
                 "no item with service '%s' and account '%s' in the keyring; store one with "
                 "`secret-tool store --label mcplex service %s account %s`",
                 service, account, service, account);
        return MX_ENOTFOUND;
    }
    *len = strlen(pw);
    *out = mx_xstrndup(pw, *len);
    l->password_free(pw); /* libsecret wipes it */
    return 0;
}
