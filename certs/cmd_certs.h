/* SPDX-License-Identifier: MIT */
/* `mcplex certs init` and `mcplex certs show`. */
#ifndef MX_CMD_CERTS_H
#define MX_CMD_CERTS_H

/* argv[0] is "certs"; returns the exit status: 0 done, 1 failed, 2 usage error. */
int mx_cmd_certs(int argc, char **argv);

#endif
