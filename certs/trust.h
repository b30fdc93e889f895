/* SPDX-License-Identifier: MIT */
/*
 * Trusting the local CA outside mcplex: the system store (Debian/Ubuntu's
 * update-ca-certificates, Fedora's update-ca-trust, Arch's p11-kit `trust`)
 * and NSS databases (Chromium's ~/.pki/nssdb, Firefox profiles) through
 * certutil. This module knows where each store keeps its anchors, builds the
 * argv of every step, tells whether a store already holds the CA and runs a
 * step as a child process, never through a shell. `mcplex certs trust` and
 * `untrust` (cmd_trust.c) put the pieces together; `serve` asks whether the
 * system trusts its CA. Only ca.pem ever leaves the certs directory, never a
 * key.
 */
#ifndef MX_TRUST_H
#define MX_TRUST_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "diag.h"

/* Longest argv of a step, NULL excluded. */
#define MX_TRUST_ARGV_MAX 16
/* Output of a step kept to show when it fails. */
#define MX_TRUST_OUTPUT_MAX (16 * 1024)
/* Hex digits of the short fingerprint: the first 8 bytes of SHA-256 over the DER. */
#define MX_TRUST_FP_LEN 16
/* The certutil nickname prefix; the short fingerprint follows. */
#define MX_TRUST_NSS_PREFIX "mcplex local CA "

enum mx_trust_sys_kind {
    MX_TRUST_SYS_DEBIAN = 0, /* Debian, Ubuntu */
    MX_TRUST_SYS_FEDORA,     /* Fedora, RHEL and kin */
    MX_TRUST_SYS_ARCH,       /* Arch: p11-kit's trust anchor */
    MX_TRUST_SYS_CNT
};

/* A kind of system store. */
struct mx_trust_sys {
    enum mx_trust_sys_kind kind;
    const char *name;       /* "Debian/Ubuntu" */
    const char *tool;       /* the program whose presence tells the kind */
    const char *anchor_dir; /* where ca.pem is copied; NULL where `trust` stores it */
    const char *anchor_ext; /* ".crt" */
    const char *bundle;     /* the PEM bundle programs read, rebuilt by the tool */
};

/* The row of |kind| (a valid kind). */
const struct mx_trust_sys *mx_trust_sys_get(enum mx_trust_sys_kind kind);
/*
 * The kind of this machine, by the tools present (searched in PATH and the
 * sbin directories): update-ca-certificates, then update-ca-trust with
 * /etc/pki/ca-trust/source/anchors (Arch ships update-ca-trust too, without
 * that directory), then trust. NULL when none is there.
 */
const struct mx_trust_sys *mx_trust_sys_detect(void);

/* The CA being trusted: its file, certificate and names. */
struct mx_trust_ca {
    char *path;                   /* ca.pem */
    X509 *cert;                   /* parsed */
    char fp[MX_TRUST_FP_LEN + 1]; /* short fingerprint, lowercase hex */
    char nss_name[64];            /* "mcplex local CA <fp>": the certutil nickname */
};

/* Load |path|. Returns 0, or MX_ENOTFOUND, MX_EIO, MX_EINVAL with |diag| set. */
int mx_trust_ca_load(struct mx_trust_ca *ca, const char *path, struct mx_diag *diag);
void mx_trust_ca_clear(struct mx_trust_ca *ca);

/* One step: an argv whose strings it owns. */
struct mx_trust_cmd {
    char *argv[MX_TRUST_ARGV_MAX + 1];
};
void mx_trust_cmd_clear(struct mx_trust_cmd *c);
/* |c| as a shell would take it: arguments with characters other than
 * [A-Za-z0-9_@%+=:,./-] in single quotes. Truncated to |cap|. */
void mx_trust_cmd_format(const struct mx_trust_cmd *c, char *out, size_t cap);

/* Where trust copies |ca| for |sys|: "<anchor_dir>/mcplex-<fp><ext>"; NULL for Arch. Caller frees.
 */
char *mx_trust_anchor_path(const struct mx_trust_sys *sys, const struct mx_trust_ca *ca);

/*
 * The system steps into |out| (room for 2), returning how many. Trust:
 * install -m 644 the CA to its anchor path and rebuild the bundle (Debian:
 * update-ca-certificates; Fedora: update-ca-trust extract), or, on Arch,
 * trust anchor --store. Untrust: rm -f each of the |rm_cnt| files |rm| (the
 * anchor files that hold the CA, at most MX_TRUST_ARGV_MAX - 3) and rebuild,
 * or trust anchor --remove. With |sudo| every argv starts with "sudo". Tools
 * are named bare; mx_trust_cmd_resolve() finds them.
 */
size_t mx_trust_sys_steps(const struct mx_trust_sys *sys, const struct mx_trust_ca *ca,
                          bool untrust, const char *const *rm, size_t rm_cnt, bool sudo,
                          struct mx_trust_cmd *out);

enum mx_trust_nss_op { MX_TRUST_NSS_ADD, MX_TRUST_NSS_DEL, MX_TRUST_NSS_LIST };
/* certutil -A (trust as a CA for TLS servers: -t C,,), -D or -L, on sql:|db|, for |ca|'s nickname.
 */
void mx_trust_nss_step(const char *db, const struct mx_trust_ca *ca, enum mx_trust_nss_op op,
                       struct mx_trust_cmd *out);
/*
 * The NSS databases under |home|: .pki/nssdb, and each Firefox profile
 * (.mozilla/firefox/<x>/ and snap/firefox/common/.mozilla/firefox/<x>/)
 * that holds a cert9.db, in that order, each group sorted. Returns the count;
 * *|out| is a list the caller frees with mx_trust_list_free.
 */
size_t mx_trust_nss_dbs(const char *home, char ***out);
void mx_trust_list_free(char **list, size_t cnt);

/* Whether the PEM bundle at |bundle| holds |ca|. False when it cannot be read. */
bool mx_trust_bundle_has(const char *bundle, X509 *ca);
/* The regular files directly in |dir| whose PEM certificate is |ca|, sorted. Returns the count;
 * *|out| as for mx_trust_nss_dbs. */
size_t mx_trust_anchor_files(const char *dir, X509 *ca, char ***out);
/*
 * For `serve`, at every start: whether this machine's system bundle holds the
 * CA in |ca_path|. A text search for the CA's base64 lines, which is how
 * update-ca-certificates (the file as it is) and p11-kit (64-column PEM, as
 * OpenSSL writes ca.pem) put it there: well under a millisecond, where
 * parsing Debian's bundle takes about 20 ms. `certs trust` parses instead.
 */
bool mx_trust_system_has(const char *ca_path);

/*
 * Replace the program name of |c| (argv[0], or argv[1] after "sudo") by its
 * absolute path when PATH lacks it but an sbin directory has it, so that
 * what runs is what is printed. Returns false when neither has it.
 */
bool mx_trust_cmd_resolve(struct mx_trust_cmd *c);
/* Whether |name| is in PATH or an sbin directory. */
bool mx_trust_have(const char *name);

/*
 * Run |c| without a shell: stdin inherited (sudo may ask for a password on
 * the terminal), stdout and stderr collected into |out| (the first
 * MX_TRUST_OUTPUT_MAX - 1 bytes, NUL-terminated; cap at least 1). Returns its
 * exit status (0..255), or -1 when it could not start or was killed, with
 * |out| saying why.
 */
int mx_trust_run(const struct mx_trust_cmd *c, char *out, size_t cap);

#endif
