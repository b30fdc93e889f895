/* SPDX-License-Identifier: MIT */
/* The config-side subcommands: `mcplex check`, `mcplex vault` and `mcplex init`. */
#ifndef MX_CMD_CONFIG_H
#define MX_CMD_CONFIG_H

int mx_cmd_check(int argc, char **argv);
int mx_cmd_vault(int argc, char **argv);
int mx_cmd_init(int argc, char **argv);

#endif
