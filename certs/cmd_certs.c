/* SPDX-License-Identifier: MIT */
/*
 * `mcplex certs init` makes the local CA and the localhost leaf and prints
 * how to make each kind of client trust the CA; `mcplex certs show` prints
 * paths, names, validity and the CA's name constraints; `trust` and
 * `untrust` (cmd_trust.c) add the CA to the system and NSS stores or take it
 * out. None prints key material. The directory comes from --dir, else the
 * config's state_dir (the config is optional here), else the default
 * state_dir.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "alloc.h"
#include "certs.h"
#include "certs_int.h"
#include "cli.h"
#include "cmd_certs.h"
#include "err.h"
#include "model.h"
#include "path.h"

#define DEFAULT_ADDRESS "127.0.0.1:8443"

struct where {
    char *dir;
    char *address;       /* listen address, for the curl example */
    char *config;        /* config file it came from, NULL when none */
    char *listen_cert;   /* the config's own listen.cert, which serve uses instead */
    const char *dir_arg; /* --dir as given, to repeat in the commands printed */
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mcplex certs init [--dir D] [--renew] [-c FILE]\n"
            "       mcplex certs show [--dir D] [-c FILE]\n"
            "       mcplex certs trust [--dry-run] [--dir D] [-c FILE]\n"
            "       mcplex certs untrust [--dry-run] [--dir D] [-c FILE]\n"
            "\n"
            "init makes a local CA (ECDSA P-256, name-constrained to the DNS name localhost)\n"
            "and a certificate for localhost, 127.0.0.1 and ::1 signed by it, then prints\n"
            "how to make clients trust the CA. show prints what is there. None of them\n"
            "prints key material.\n"
            "\n"
            "trust adds the CA (ca.pem, never a key) to the system store (Debian/Ubuntu:\n"
            "update-ca-certificates; Fedora: update-ca-trust; Arch: trust anchor), through\n"
            "sudo when not root, and to each NSS database under $HOME (~/.pki/nssdb for\n"
            "Chromium, Firefox profiles) with certutil; a store that already holds it is\n"
            "left alone. untrust takes it out of the same stores. Each step is printed\n"
            "before it runs.\n"
            "\n"
            "  --dir D            certificate directory (default: <state_dir>/certs, with\n"
            "                     state_dir from the config, else $XDG_STATE_HOME/mcplex,\n"
            "                     XDG default ~/.local/state)\n"
            "  --renew            init: replace existing files (a new CA, to be trusted again);\n"
            "                     --force is the same\n"
            "  --dry-run          trust, untrust: print the steps, change nothing\n"
            "  -c, --config FILE  config to take state_dir from\n"
            "  -h, --help         this text\n"
            "\n"
            "Exit status: 0 done, 1 failed (or, for show, something missing or unusable),\n"
            "2 usage error.\n");
}

static void where_clear(struct where *w)
{
    free(w->dir);
    free(w->address);
    free(w->config);
    free(w->listen_cert);
    memset(w, 0, sizeof(*w));
}

/* Returns 0, or -1 after printing why. */
static int find_dir(struct where *w, const char *dir_arg, const char *config_arg)
{
    struct mx_config *cfg = NULL;
    struct mx_diag d;
    char line[1024];
    int rc;

    memset(&d, 0, sizeof(d));
    char *path = mx_config_find(config_arg);
    bool have_config = config_arg != NULL || access(path, F_OK) == 0;
    /* Without a config the defaults are an empty config's, so they cannot drift from model.c. */
    if (have_config)
        rc = mx_config_load(path, &cfg, &d);
    else
        rc = mx_config_parse("(defaults)", "", 0, &cfg, &d);
    free(path);
    if (rc != 0 && (config_arg != NULL || dir_arg == NULL)) {
        fprintf(stderr, "%s\n", mx_diag_format(&d, line, sizeof(line)));
        fprintf(stderr, "mcplex certs: cannot tell which directory to use; pass --dir D\n");
        return -1;
    }
    if (dir_arg)
        w->dir = mx_path_expand(dir_arg);
    else
        w->dir = mx_certs_default_dir(cfg->proxy.state_dir);
    w->address = mx_xstrdup(cfg ? cfg->listen.address : DEFAULT_ADDRESS);
    if (cfg && have_config) {
        w->config = mx_xstrdup(cfg->path);
        if (cfg->listen.cert)
            w->listen_cert = mx_xstrdup(cfg->listen.cert);
    }
    mx_config_free(cfg);
    return 0;
}

static void note_listen_cert(const struct where *w)
{
    if (w->listen_cert)
        printf("\nnote: %s sets listen.cert = %s; serve uses that, not these files.\n", w->config,
               w->listen_cert);
}

static void print_trust(const struct mx_certs_paths *p, const struct where *w)
{
    printf("\nThe CA can only vouch for the DNS name localhost (a critical name constraint),\n"
           "so neither it nor a stolen CA key can impersonate a host by its DNS name.\n"
           "Trust the CA, not the leaf: serve re-issues the leaf from it before it expires.\n");
    printf("\nTo make clients trust the CA:\n");
    printf("  Node-based clients (Claude Code, the MCP TypeScript SDK, the MCP Inspector):\n"
           "    export NODE_EXTRA_CA_CERTS=%s\n",
           p->ca_cert);
    printf("  The system store (curl, wget, Python's ssl module and most other programs) and\n"
           "  the NSS databases of Chromium and Firefox (update-ca-certificates, update-ca-trust\n"
           "  or trust, and certutil; --dry-run prints the steps first):\n"
           "    mcplex certs trust%s%s\n",
           w->dir_arg ? " --dir " : "", w->dir_arg ? w->dir_arg : "");
    printf("  Python (SSL_CERT_FILE for the ssl module, REQUESTS_CA_BUNDLE for requests). Both\n"
           "  replace the default bundle, so point them at one that also holds the CA:\n"
           "    cat /etc/ssl/certs/ca-certificates.crt %s > %s/bundle.pem\n"
           "    export SSL_CERT_FILE=%s/bundle.pem REQUESTS_CA_BUNDLE=%s/bundle.pem\n",
           p->ca_cert, p->dir, p->dir, p->dir);
    printf("  curl:\n"
           "    curl --cacert %s https://%s/health\n",
           p->ca_cert, w->address);
}

static int run_init(const struct where *w, bool renew)
{
    struct mx_certs_paths p;
    struct mx_diag d;
    char line[1024];

    memset(&d, 0, sizeof(d));
    mx_certs_paths_init(&p, w->dir);
    int rc = mx_certs_init(&p, renew, &d);
    if (rc != 0) {
        fprintf(stderr, "mcplex certs init: %s\n", mx_diag_format(&d, line, sizeof(line)));
        mx_certs_paths_clear(&p);
        return 1;
    }
    printf("made a local CA and a localhost certificate in %s\n", p.dir);
    printf("  CA certificate    %s  (give this to clients)\n", p.ca_cert);
    printf("  CA key            %s  (mode 0600; keep it private)\n", p.ca_key);
    printf("  leaf certificate  %s  (localhost, 127.0.0.1, ::1; %d days)\n", p.leaf_cert,
           MX_CERTS_LEAF_DAYS);
    printf("  leaf key          %s  (mode 0600)\n", p.leaf_key);
    print_trust(&p, w);
    note_listen_cert(w);
    mx_certs_paths_clear(&p);
    return 0;
}

static int run_trust(const struct where *w, bool untrust, bool dry_run)
{
    struct mx_certs_paths p;
    mx_certs_paths_init(&p, w->dir);
    int rc = mx_cmd_certs_trust(p.ca_cert, untrust, dry_run);
    note_listen_cert(w);
    mx_certs_paths_clear(&p);
    return rc;
}

/* Copy |len| bytes of |p| into |out|, control and non-ASCII bytes as '?': names come from files. */
static void clean_copy(char *out, size_t cap, const unsigned char *p, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < cap; i++)
        out[n++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
    if (cap)
        out[n] = '\0';
}

static void name_str(const X509_NAME *name, char *out, size_t cap)
{
    char *data = NULL;
    BIO *b = BIO_new(BIO_s_mem());
    snprintf(out, cap, "(unreadable)");
    if (b && X509_NAME_print_ex(b, name, 0, XN_FLAG_RFC2253) >= 0) {
        long len = BIO_get_mem_data(b, &data);
        if (len >= 0 && data)
            clean_copy(out, cap, (const unsigned char *)data, (size_t)len);
    }
    BIO_free(b);
}

static void time_str(const ASN1_TIME *t, char *out, size_t cap)
{
    struct tm tm;
    if (ASN1_TIME_to_tm(t, &tm) != 1 || strftime(out, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(out, cap, "(bad time)");
}

/* Leading one bits of a netmask, or -1 when it is not contiguous. */
static int prefix_len(const unsigned char *mask, size_t len)
{
    int bits = 0;
    size_t i = 0;
    for (; i < len && mask[i] == 0xff; i++)
        bits += 8;
    if (i < len) {
        unsigned char m = mask[i];
        while (m & 0x80) {
            bits++;
            m = (unsigned char)(m << 1);
        }
        if (m != 0)
            return -1;
        for (i++; i < len; i++) {
            if (mask[i] != 0)
                return -1;
        }
    }
    return bits;
}

/* "DNS:x" or "IP:a"; in name constraints (|nc|) an IP entry is address + mask, shown as a/len. */
static void general_name_str(const GENERAL_NAME *g, bool nc, char *out, size_t cap)
{
    char a[INET6_ADDRSTRLEN], m[INET6_ADDRSTRLEN], tmp[256];
    int type;
    const ASN1_STRING *s = GENERAL_NAME_get0_value(g, &type);

    if (type == GEN_DNS) {
        clean_copy(tmp, sizeof(tmp), ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
        snprintf(out, cap, "DNS:%s", tmp);
        return;
    }
    if (type != GEN_IPADD) {
        snprintf(out, cap, "(name of type %d)", type);
        return;
    }
    const unsigned char *ip = ASN1_STRING_get0_data(s);
    size_t len = (size_t)ASN1_STRING_length(s), half = nc ? len / 2 : len;
    int af = half == 4 ? AF_INET : half == 16 ? AF_INET6 : -1;
    if (af < 0 || (nc && len != 2 * half) || inet_ntop(af, ip, a, sizeof(a)) == NULL) {
        snprintf(out, cap, "IP:(malformed)");
        return;
    }
    if (!nc) {
        snprintf(out, cap, "IP:%s", a);
        return;
    }
    int bits = prefix_len(ip + half, half);
    if (bits >= 0)
        snprintf(out, cap, "IP:%s/%d", a, bits);
    else if (inet_ntop(af, ip + half, m, sizeof(m)))
        snprintf(out, cap, "IP:%s/%s", a, m);
    else
        snprintf(out, cap, "IP:(malformed)");
}

static void print_sans(X509 *x)
{
    char buf[300];
    GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    printf("  %-12s ", "names");
    if (names == NULL || sk_GENERAL_NAME_num(names) == 0)
        printf("(no subjectAltName: no client will accept it)");
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names); i++) {
        general_name_str(sk_GENERAL_NAME_value(names, i), false, buf, sizeof(buf));
        printf("%s%s", i ? ", " : "", buf);
    }
    printf("\n");
    GENERAL_NAMES_free(names);
}

static void print_subtrees(const char *label, STACK_OF(GENERAL_SUBTREE) * trees)
{
    char buf[300];
    if (trees == NULL || sk_GENERAL_SUBTREE_num(trees) == 0)
        return;
    printf("  %-12s %s", "", label);
    for (int i = 0; i < sk_GENERAL_SUBTREE_num(trees); i++) {
        general_name_str(sk_GENERAL_SUBTREE_value(trees, i)->base, true, buf, sizeof(buf));
        printf("%s%s", i ? ", " : " ", buf);
    }
    printf("\n");
}

/* Returns false when the CA has no critical name constraints, or has IP-address ones. */
static bool print_constraints(X509 *ca)
{
    int crit = 0;
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, &crit, NULL);
    if (nc == NULL) {
        printf("  %-12s none: this CA can sign for any host\n", "constraints");
        return false;
    }
    printf("  %-12s %s\n", "constraints",
           crit ? "critical (clients that cannot enforce them reject the CA)"
                : "NOT critical: clients that ignore them trust the CA for any host");
    print_subtrees("permitted", nc->permittedSubtrees);
    print_subtrees("excluded", nc->excludedSubtrees);
    NAME_CONSTRAINTS_free(nc);
    if (mx_certs_ca_is_legacy(ca)) {
        printf("  %-12s %s\n", "", MX_CERTS_LEGACY_ADVICE);
        return false;
    }
    return crit != 0;
}

/* Prints validity; returns seconds left. */
static long print_validity(X509 *x)
{
    char from[64], to[64];
    long left;
    time_str(X509_get0_notBefore(x), from, sizeof(from));
    time_str(X509_get0_notAfter(x), to, sizeof(to));
    if (!mx_certs_secs_left(x, &left))
        left = 0;
    printf("  %-12s %s\n  %-12s %s", "not before", from, "not after", to);
    if (left > 0)
        printf(" (%ld day(s) left)\n", left / MX_CERTS_DAY_SEC);
    else
        printf(" (EXPIRED %ld day(s) ago)\n", -left / MX_CERTS_DAY_SEC);
    return left;
}

static void print_fingerprint(X509 *x)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    char hex[EVP_MAX_MD_SIZE * 3 + 1];
    if (X509_digest(x, EVP_sha256(), md, &n) != 1)
        return;
    hex[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(hex + i * 3, sizeof(hex) - i * 3, "%02X%s", md[i], i + 1 < n ? ":" : "");
    printf("  %-12s %s\n", "sha256", hex);
}

/* Loads |path|; prints it as missing or unreadable and returns NULL on failure. */
static X509 *show_cert(const char *label, const char *path)
{
    struct mx_diag d;
    char line[1024], name[512];
    X509 *x;

    memset(&d, 0, sizeof(d));
    printf("%-17s %s\n", label, path);
    int rc = mx_certs_read_cert(path, &x, NULL, &d);
    if (rc == MX_ENOTFOUND) {
        printf("  missing; run `mcplex certs init`\n");
        return NULL;
    }
    if (rc != 0) {
        printf("  unusable: %s\n", mx_diag_format(&d, line, sizeof(line)));
        return NULL;
    }
    name_str(X509_get_subject_name(x), name, sizeof(name));
    printf("  %-12s %s\n", "subject", name);
    return x;
}

/* Prints the key's path, mode and whether it matches |cert|; false when unusable. */
static bool show_key(const char *label, const char *path, X509 *cert)
{
    struct mx_diag d;
    struct stat st;
    char line[1024];
    EVP_PKEY *key;
    bool ok = true;

    memset(&d, 0, sizeof(d));
    printf("%-17s %s\n", label, path);
    int rc = mx_certs_read_key(path, &key, &st, &d);
    if (rc == MX_ENOTFOUND) {
        printf("  missing\n");
        return false;
    }
    if (rc != 0) {
        printf("  unusable: %s\n", mx_diag_format(&d, line, sizeof(line)));
        return false;
    }
    printf("  %-12s %04o%s\n", "mode", (unsigned)(st.st_mode & 07777),
           (st.st_mode & 077) ? " (open to group or others: chmod 600 it)" : "");
    if (st.st_mode & 077)
        ok = false;
    if (cert) {
        bool match = X509_check_private_key(cert, key) == 1;
        ERR_clear_error();
        printf("  %-12s %s\n", "matches", match ? "yes" : "NO: it does not match the certificate");
        ok = ok && match;
    }
    EVP_PKEY_free(key);
    return ok;
}

static int run_show(const struct where *w)
{
    struct mx_certs_paths p;
    struct mx_diag d;
    struct stat st;
    char issuer[512];
    bool ok = true;

    mx_certs_paths_init(&p, w->dir);
    if (stat(p.dir, &st) != 0) {
        printf("directory %s does not exist; run `mcplex certs init`\n", p.dir);
        mx_certs_paths_clear(&p);
        return 1;
    }
    printf("directory %s (mode %04o)\n\n", p.dir, (unsigned)(st.st_mode & 07777));

    X509 *ca = show_cert("CA certificate", p.ca_cert);
    if (ca) {
        ok = print_validity(ca) > 0 && ok;
        ok = print_constraints(ca) && ok;
        print_fingerprint(ca);
    } else {
        ok = false;
    }
    ok = show_key("CA key", p.ca_key, ca) && ok;
    printf("\n");

    X509 *leaf = show_cert("leaf certificate", p.leaf_cert);
    if (leaf) {
        name_str(X509_get_issuer_name(leaf), issuer, sizeof(issuer));
        printf("  %-12s %s\n", "issuer", issuer);
        print_sans(leaf);
        long left = print_validity(leaf);
        ok = left > 0 && ok;
        if (left > 0 && left < (long)MX_CERTS_RENEW_DAYS * MX_CERTS_DAY_SEC)
            printf("  %-12s due: serve re-issues it at its next start\n", "renewal");
        if (ca) {
            memset(&d, 0, sizeof(d));
            if (mx_certs_check_leaf(ca, leaf, &d) == 0) {
                printf("  %-12s verifies against the CA for localhost, 127.0.0.1 and ::1\n",
                       "chain");
            } else {
                printf("  %-12s %s\n", "chain", d.msg);
                ok = false;
            }
        }
    } else {
        ok = false;
    }
    ok = show_key("leaf key", p.leaf_key, leaf) && ok;

    if (ca)
        print_trust(&p, w);
    note_listen_cert(w);
    X509_free(ca);
    X509_free(leaf);
    mx_certs_paths_clear(&p);
    return ok ? 0 : 1;
}

int mx_cmd_certs(int argc, char **argv)
{
    const char *sub = NULL, *dir = NULL, *config = NULL;
    bool renew = false, dry_run = false;
    struct where w;

    const struct mx_cli_opt opts[] = {
        {"-c", "--config", &config, NULL},   {NULL, "--dir", &dir, NULL},
        {NULL, "--renew", NULL, &renew},     {NULL, "--force", NULL, &renew},
        {NULL, "--dry-run", NULL, &dry_run}, {NULL, NULL, NULL, NULL}};
    struct mx_cli cli = {"certs", usage, opts, &sub, 1, 0};
    int rc = mx_cli_parse(&cli, argc, argv);
    if (rc != MX_CLI_RUN)
        return rc;
    bool trust = sub && strcmp(sub, "trust") == 0, untrust = sub && strcmp(sub, "untrust") == 0;
    if (sub == NULL ||
        (strcmp(sub, "init") != 0 && strcmp(sub, "show") != 0 && !trust && !untrust)) {
        if (sub)
            fprintf(stderr, "mcplex certs: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    if (renew && strcmp(sub, "init") != 0) {
        fprintf(stderr, "mcplex certs: --renew is for init only\n");
        return 2;
    }
    if (dry_run && !trust && !untrust) {
        fprintf(stderr, "mcplex certs: --dry-run is for trust and untrust only\n");
        return 2;
    }
    memset(&w, 0, sizeof(w));
    if (find_dir(&w, dir, config) != 0)
        return 1;
    w.dir_arg = dir;
    if (trust || untrust)
        rc = run_trust(&w, untrust, dry_run);
    else
        rc = strcmp(sub, "init") == 0 ? run_init(&w, renew) : run_show(&w);
    fflush(stdout);
    where_clear(&w);
    return rc;
}
