/* SPDX-License-Identifier: MIT */
/*
 * it-hostile MODE: a stdio MCP server that attacks mcplex's log and trace,
 * for it_log_mask.
 *
 *   echo   answers initialize, lists a tool "whoami" (and one whose name
 *          carries a forged log line), and answers every tools/call with
 *          "got <$HOSTILE_TOKEN>" (its credential, JSON-escaped on the
 *          wire); writes the credential to stderr as it got it.
 *   forge NONCE  answers initialize with an error whose message holds a
 *          line break and a forged log line naming NONCE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static void send_msg(json_t *m)
{
    char *text = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    if (text == NULL)
        exit(1);
    printf("%s\n", text);
    fflush(stdout);
    free(text);
}

static const char *nonce;

static char *forged_line(void)
{
    size_t n = strlen(nonce ? nonce : "") + 128;
    char *s = malloc(n);
    if (s == NULL)
        exit(1);
    snprintf(s, n, "2026-01-01T00:00:00.000Z error    forged   level=error forged-%s",
             nonce ? nonce : "");
    return s;
}

static json_t *answer(const char *mode, const char *method, json_t *id)
{
    const char *token = getenv("HOSTILE_TOKEN");
    char *forged = forged_line();
    char *text = NULL;
    json_t *r = NULL;
    if (strcmp(method, "initialize") == 0 && strcmp(mode, "forge") == 0) {
        size_t n = strlen(forged) + 32;
        text = malloc(n);
        snprintf(text, n, "refused\n%s", forged);
        r = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code",
                      -32603, "message", text);
    } else if (strcmp(method, "initialize") == 0) {
        r = json_pack("{s:s, s:O, s:{s:s, s:{s:{}}, s:{s:s, s:s}}}", "jsonrpc", "2.0", "id", id,
                      "result", "protocolVersion", "2025-06-18", "capabilities", "tools",
                      "serverInfo", "name", "hostile", "version", "1");
    } else if (strcmp(method, "tools/list") == 0) {
        size_t n = strlen(forged) + 32;
        text = malloc(n);
        snprintf(text, n, "x\n%s", forged);
        r = json_pack("{s:s, s:O, s:{s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}]}}", "jsonrpc", "2.0", "id",
                      id, "result", "tools", "name", "whoami", "inputSchema", "type", "object",
                      "name", text, "inputSchema", "type", "object");
    } else if (strcmp(method, "tools/call") == 0) {
        size_t n = strlen(token ? token : "") + 8;
        text = malloc(n);
        snprintf(text, n, "got %s", token ? token : "");
        r = json_pack("{s:s, s:O, s:{s:[{s:s, s:s}]}}", "jsonrpc", "2.0", "id", id, "result",
                      "content", "type", "text", "text", text);
    } else {
        r = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
    }
    free(text);
    free(forged);
    return r;
}

int main(int argc, char **argv)
{
    char *line = NULL;
    size_t cap = 0;
    const char *mode = argc > 1 ? argv[1] : "echo";
    nonce = argc > 2 ? argv[2] : "";
    const char *token = getenv("HOSTILE_TOKEN");
    if (strcmp(mode, "echo") == 0 && token) {
        fprintf(stderr, "my credential is %s as I got it\n", token);
        fflush(stderr);
    }
    while (getline(&line, &cap, stdin) > 0) {
        json_t *m = json_loads(line, 0, NULL);
        json_t *id = json_object_get(m, "id");
        const char *method = json_string_value(json_object_get(m, "method"));
        if (id && method)
            send_msg(answer(mode, method, id));
        json_decref(m);
    }
    free(line);
    return 0;
}
