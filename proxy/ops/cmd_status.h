/* SPDX-License-Identifier: MIT */
/*
 * `mcplex status`: ask a running gateway for GET /health and print it as a
 * table (or as the raw JSON). A command-line tool, so it blocks: one libcurl
 * easy transfer, bounded by a timeout. It reads the config only for the
 * listen address and TLS setting; it resolves no secret.
 */
#ifndef MX_CMD_STATUS_H
#define MX_CMD_STATUS_H

#include <stdio.h>
#include <time.h>

#include <jansson.h>

struct mx_config;

int mx_cmd_status(int argc, char **argv);

/*
 * Print the /health object |health| fetched from |url| as the status
 * table, ages relative to |now|. Missing members print as "-"; a /health
 * from an older or newer gateway still prints what it has.
 */
void mx_status_render(FILE *out, const json_t *health, const char *url, time_t now);

/*
 * GET /health of the gateway at |url_arg| (with |ca_arg|) or else at the
 * [listen] address of the config |cfg_arg| names (mx_config_find). The
 * caller has initialised libcurl. Returns the object, or NULL after
 * printing why on stderr.
 */
json_t *mx_status_fetch(const char *cfg_arg, const char *url_arg, const char *ca_arg);

int mx_cmd_reload(int argc, char **argv);

/*
 * The base URL ("https://127.0.0.1:8443", no path) of the gateway that
 * [listen] of |cfg| describes (a wildcard bind is asked on loopback), and in
 * |*ca_file| the local CA to verify it with when it serves the default
 * certificate (NULL: the system store). Both are the caller's to free.
 * Returns 0, or MX_EINVAL after printing why (no port, or port 0, which
 * cannot be known from outside).
 */
int mx_status_gateway_base(const struct mx_config *cfg, char **base, char **ca_file);

#endif
