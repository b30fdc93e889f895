/* SPDX-License-Identifier: MIT */
/* `mcplex certs init`, `show`, `trust` and `untrust`. */
#ifndef MX_CMD_CERTS_H
#define MX_CMD_CERTS_H

#include <stdbool.h>

/* argv[0] is "certs"; returns the exit status: 0 done, 1 failed, 2 usage error. */
int mx_cmd_certs(int argc, char **argv);

/*
 * `certs trust` (or with |untrust|, `certs untrust`) of the CA in |ca_path|:
 * the system store, then every NSS database under $HOME; with |dry_run| the
 * steps are printed, not run. Returns the exit status: 0 done (or nothing to
 * do), 1 a step failed or a store could not be reached.
 */
int mx_cmd_certs_trust(const char *ca_path, bool untrust, bool dry_run);

#endif
