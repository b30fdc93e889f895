/* SPDX-License-Identifier: MIT */
/*
 * keyring:SERVICE/ACCOUNT secrets from the desktop Secret Service (GNOME
 * Keyring, KeePassXC, KWallet's bridge) through libsecret, loaded when the
 * first such reference is resolved, so mcplex costs nothing more for anyone
 * who does not use it. The item is the one `secret-tool store --label L
 * service SERVICE account ACCOUNT` makes. Resolution happens at start and
 * reload only, like cmd:, and may block until the Secret Service answers.
 */
#ifndef MX_KEYRING_H
#define MX_KEYRING_H

#include <stddef.h>

/*
 * Look up the password of (|service|, |account|). Returns 0 with |*out|
 * (|*len| bytes, NUL-terminated; caller wipes and frees), MX_ENOTFOUND (no
 * such item), or MX_EIO (libsecret missing, no Secret Service, a locked
 * collection): |why| then says which and what to do, never a value.
 */
int mx_keyring_lookup(const char *service, const char *account, char **out, size_t *len, char *why,
                      size_t why_cap);

#endif
