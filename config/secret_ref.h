/* SPDX-License-Identifier: MIT */
/*
 * Secret references: "env:NAME", "file:PATH", "vault:NAME", "cmd:PROGRAM
 * ARGS", "keyring:SERVICE/ACCOUNT" (the desktop Secret Service) and
 * "cred:NAME" (a systemd credential in $CREDENTIALS_DIRECTORY), checked,
 * shown without what they may hide, and resolved.
 */
#ifndef MX_SECRET_REF_H
#define MX_SECRET_REF_H

#include <stddef.h>

#include "diag.h"
#include "secret.h"

/* NULL when |ref| is a well-formed reference, else a sentence saying why not. */
const char *mx_secret_ref_check(const char *ref);

/*
 * Resolve |ref|. |vault_path| is the vault file for "vault:" references
 * (NULL: mx_vault_default_path()). A relative "file:" path is taken in the
 * directory |dir| (NULL: the working directory); its messages name the
 * absolute path tried. "file:" and vault files must be owned by the user
 * and not readable by group or others. "cmd:" runs the command without a shell (split on spaces)
 * and takes its stdout, trailing newline removed. The value must be non-empty and free of CR, LF
 * and NUL (it goes into a header). Returns 0 and sets |*out| (caller frees with mx_secret_free), or
 * MX_EINVAL (bad reference), MX_ENOTFOUND, MX_EPERM (file mode/owner),
 * MX_EIO; |diag| then says what is wrong, naming the reference, never a value.
 */
int mx_secret_resolve(const char *ref, const char *vault_path, const char *dir,
                      struct mx_secret **out, struct mx_diag *diag);

/*
 * The value |len| bytes of |buf| hold, as a "cmd:" or "file:" printed it:
 * one trailing line break (LF or CRLF) is not part of it; what is left
 * must pass the rules above. Returns NULL and |*out| (caller frees with
 * mx_secret_free), or a fixed sentence saying why not ("the value is
 * empty"), which quotes no byte of it. |buf| is the caller's to wipe.
 */
const char *mx_secret_from_output(const char *buf, size_t len, struct mx_secret **out);

/*
 * |ref| as mcplex shows it wherever it names a reference (errors to
 * clients, /health, `mcplex check`, logs): its kind and name
 * ("vault:files", "env:TOKEN", "file:/path"), and for "cmd:" the program
 * alone ("cmd:pass"), never the arguments, which may hold a key. Anything
 * that is not a well-formed reference may be a literal secret and shows as
 * "(not a secret reference)". Writes at most |cap| bytes (NUL included)
 * to |out| and returns |out|.
 */
const char *mx_secret_ref_show(const char *ref, char *out, size_t cap);

#endif
