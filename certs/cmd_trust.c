/* SPDX-License-Identifier: MIT */
/*
 * `mcplex certs trust` and `mcplex certs untrust`: add the local CA to (or
 * remove it from) the system store and every NSS database of the user, as
 * mkcert and Caddy do. Each store is checked first, so a second run says
 * "already trusted"; each step is printed before it runs (with --dry-run,
 * only printed); sudo is used for the system step alone, and only when not
 * root. The steps themselves are trust.c's.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cmd_certs.h"
#include "err.h"
#include "trust.h"

struct run {
    const struct mx_trust_ca *ca;
    const char *cmd; /* "trust" or "untrust" */
    bool untrust;
    bool dry;
};

/* Print |text| indented, each line on its own (the output of a failed step). */
static void print_indented(FILE *f, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        fprintf(f, "    %.*s\n", (int)n, text);
        text += n + (nl ? 1 : 0);
    }
}

/*
 * Print each of |steps| and, unless a dry run, run it; stop at the first
 * that fails, after saying why on stderr (a program that is not installed,
 * its exit status and output). Returns whether all ran (or would run).
 */
static bool run_steps(const struct run *r, struct mx_trust_cmd *steps, size_t n)
{
    char line[2048];
    for (size_t i = 0; i < n; i++) {
        struct mx_trust_cmd *c = &steps[i];
        bool sudo = strcmp(c->argv[0], "sudo") == 0;
        if (!mx_trust_cmd_resolve(c)) {
            if (sudo && !mx_trust_have("sudo"))
                fprintf(stderr,
                        "mcplex certs %s: the system store needs root and sudo is not "
                        "installed; run `mcplex certs %s` as root\n",
                        r->cmd, r->cmd);
            else
                fprintf(stderr, "mcplex certs %s: %s is not installed (not in PATH or sbin)\n",
                        r->cmd, c->argv[sudo ? 1 : 0]);
            return false;
        }
        mx_trust_cmd_format(c, line, sizeof(line));
        printf("  $ %s\n", line);
        fflush(stdout);
        if (r->dry)
            continue;
        char *out = mx_xmalloc(MX_TRUST_OUTPUT_MAX);
        int rc = mx_trust_run(c, out, MX_TRUST_OUTPUT_MAX);
        if (rc != 0) {
            if (rc < 0)
                fprintf(stderr, "mcplex certs %s: `%s` failed:\n", r->cmd, line);
            else
                fprintf(stderr, "mcplex certs %s: `%s` exited with status %d:\n", r->cmd, line, rc);
            print_indented(stderr, *out ? out : "(it printed nothing)");
            free(out);
            return false;
        }
        free(out);
    }
    return true;
}

/* What the system store holds of the CA: its bundle, and the files in the anchors directory. */
struct sys_state {
    bool in_bundle;
    char **files;
    size_t cnt;
};

static void sys_state_read(const struct mx_trust_sys *sys, X509 *ca, struct sys_state *st)
{
    st->in_bundle = mx_trust_bundle_has(sys->bundle, ca);
    st->files = NULL;
    st->cnt = sys->anchor_dir ? mx_trust_anchor_files(sys->anchor_dir, ca, &st->files) : 0;
}

/* Trusted: the bundle holds the CA and so does an anchor file, where mcplex places one. */
static bool sys_state_trusted(const struct mx_trust_sys *sys, const struct sys_state *st)
{
    return st->in_bundle && (sys->anchor_dir == NULL || st->cnt > 0);
}

static void sys_state_clear(struct sys_state *st)
{
    mx_trust_list_free(st->files, st->cnt);
    memset(st, 0, sizeof(*st));
}

/* Returns 0, or 1 after saying on stderr what failed. */
static int do_system(const struct run *r)
{
    struct mx_trust_cmd steps[2];
    struct sys_state st;
    int rc = 1;

    const struct mx_trust_sys *sys = mx_trust_sys_detect();
    if (sys == NULL) {
        fprintf(stderr,
                "mcplex certs %s: system store: none of update-ca-certificates (Debian/Ubuntu), "
                "update-ca-trust (Fedora) or trust (Arch) is installed; %s %s by hand\n",
                r->cmd, r->untrust ? "remove" : "add", r->ca->path);
        return 1;
    }
    sys_state_read(sys, r->ca->cert, &st);
    if (!r->untrust && sys_state_trusted(sys, &st)) {
        printf("system store (%s): already trusted (%s)\n", sys->name,
               st.cnt ? st.files[0] : sys->bundle);
        rc = 0;
        goto out;
    }
    if (r->untrust && !st.in_bundle && st.cnt == 0) {
        printf("system store (%s): not trusted; nothing to remove\n", sys->name);
        rc = 0;
        goto out;
    }
    if (r->untrust && sys->anchor_dir && st.cnt == 0) {
        fprintf(stderr,
                "mcplex certs untrust: %s holds this CA, but no file in %s does: it was added "
                "some other way; remove it there, then run %s\n",
                sys->bundle, sys->anchor_dir, sys->tool);
        goto out;
    }
    printf("system store (%s): %s\n", sys->name,
           r->untrust ? "trusted; removing" : "not trusted yet");
    bool sudo = geteuid() != 0;
    if (sudo && !r->dry)
        printf("  (this step needs root: running it with sudo)\n");
    size_t n = mx_trust_sys_steps(sys, r->ca, r->untrust, (const char *const *)st.files, st.cnt,
                                  sudo, steps);
    bool ok = run_steps(r, steps, n);
    for (size_t i = 0; i < n; i++)
        mx_trust_cmd_clear(&steps[i]);
    if (!ok || r->dry) {
        rc = ok ? 0 : 1;
        goto out;
    }
    sys_state_clear(&st);
    sys_state_read(sys, r->ca->cert, &st);
    if (r->untrust ? st.in_bundle || st.cnt > 0 : !sys_state_trusted(sys, &st)) {
        fprintf(stderr, "mcplex certs %s: the steps ran, but %s %s the CA\n", r->cmd, sys->bundle,
                r->untrust ? "still holds" : "does not hold");
        goto out;
    }
    printf("  done: %s %s the CA\n", sys->bundle, r->untrust ? "no longer holds" : "holds");
    rc = 0;
out:
    sys_state_clear(&st);
    return rc;
}

/* Whether the NSS database |db| holds the CA's nickname (certutil -L -n). */
static bool nss_holds(const struct run *r, const char *db)
{
    struct mx_trust_cmd c;
    char out[1024];
    mx_trust_nss_step(db, r->ca, MX_TRUST_NSS_LIST, &c);
    bool has = mx_trust_cmd_resolve(&c) && mx_trust_run(&c, out, sizeof(out)) == 0;
    mx_trust_cmd_clear(&c);
    return has;
}

static const char *home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && *home)
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw ? pw->pw_dir : NULL;
}

/* Returns 0, or 1 after saying on stderr what failed. */
static int do_nss(const struct run *r)
{
    char **dbs;
    int rc = 0;
    const char *home = home_dir();
    if (home == NULL) {
        printf("NSS databases: no home directory to look in\n");
        return 0;
    }
    size_t cnt = mx_trust_nss_dbs(home, &dbs);
    if (cnt == 0) {
        printf("NSS databases: none under %s (.pki/nssdb, Firefox profiles)\n", home);
        return 0;
    }
    if (!mx_trust_have("certutil")) {
        fprintf(stderr,
                "mcplex certs %s: %zu NSS database(s) under %s (Chromium, Firefox), but certutil "
                "is not installed; install libnss3-tools (Debian/Ubuntu), nss-tools (Fedora) or "
                "nss (Arch), then run `mcplex certs %s` again\n",
                r->cmd, cnt, home, r->cmd);
        mx_trust_list_free(dbs, cnt);
        return 1;
    }
    for (size_t i = 0; i < cnt; i++) {
        bool has = nss_holds(r, dbs[i]);
        if (has != r->untrust) {
            printf("NSS database %s: %s\n", dbs[i],
                   has ? "already trusted" : "not trusted; nothing to remove");
            continue;
        }
        printf("NSS database %s: %s\n", dbs[i], has ? "trusted; removing" : "not trusted yet");
        struct mx_trust_cmd c;
        mx_trust_nss_step(dbs[i], r->ca, r->untrust ? MX_TRUST_NSS_DEL : MX_TRUST_NSS_ADD, &c);
        bool ok = run_steps(r, &c, 1);
        mx_trust_cmd_clear(&c);
        if (ok && !r->dry && nss_holds(r, dbs[i]) == r->untrust) {
            fprintf(stderr, "mcplex certs %s: certutil ran, but %s %s %s\n", r->cmd, dbs[i],
                    r->untrust ? "still lists" : "does not list", r->ca->nss_name);
            ok = false;
        }
        if (!ok)
            rc = 1;
    }
    mx_trust_list_free(dbs, cnt);
    return rc;
}

int mx_cmd_certs_trust(const char *ca_path, bool untrust, bool dry_run)
{
    struct mx_trust_ca ca;
    struct mx_diag d;
    char line[1024];
    const char *cmd = untrust ? "untrust" : "trust";

    memset(&d, 0, sizeof(d));
    int err = mx_trust_ca_load(&ca, ca_path, &d);
    if (err != 0) {
        fprintf(stderr, "mcplex certs %s: %s%s\n", cmd, mx_diag_format(&d, line, sizeof(line)),
                err == MX_ENOTFOUND ? "; run `mcplex certs init` first" : "");
        return 1;
    }
    struct run r = {&ca, cmd, untrust, dry_run};
    if (dry_run)
        printf("dry run: nothing is changed; the steps `mcplex certs %s` would run:\n", cmd);
    printf("CA %s (%s)\n", ca.path, ca.nss_name);
    int rc = do_system(&r);
    rc |= do_nss(&r);
    if (!untrust) {
        printf("\nNode-based clients (Claude Code, the MCP TypeScript SDK, the Inspector) do not "
               "read the system store; start them with\n"
               "  export NODE_EXTRA_CA_CERTS=%s\n"
               "or, from Node 22.19 and 24.6 on, with NODE_USE_SYSTEM_CA=1 once the system "
               "trusts the CA.\n",
               ca.path);
    } else {
        printf("\nWhere NODE_EXTRA_CA_CERTS=%s is set for Node-based clients, unset it too.\n",
               ca.path);
    }
    if (dry_run)
        printf("dry run: nothing was changed.\n");
    fflush(stdout);
    mx_trust_ca_clear(&ca);
    return rc;
}
