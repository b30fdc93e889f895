/* SPDX-License-Identifier: MIT */
/*
 * Subcommands. Each takes argv with argv[0] the command name and returns the
 * process exit status.
 */
#ifndef MX_CMD_H
#define MX_CMD_H

struct mx_cmd {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
};

#include "cmd_certs.h"
#include "cmd_config.h"
#include "cmd_status.h"

int mx_cmd_serve(int argc, char **argv);
int mx_cmd_stdio(int argc, char **argv);
int mx_cmd_bench(int argc, char **argv);
int mx_cmd_doctor(int argc, char **argv);
int mx_cmd_add(int argc, char **argv);
int mx_cmd_rm(int argc, char **argv);
int mx_cmd_import(int argc, char **argv);
int mx_cmd_connect(int argc, char **argv);

#endif
