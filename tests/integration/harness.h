/* SPDX-License-Identifier: MIT */
/*
 * Integration test harness: starts real processes (mcplex, sandbox-sim, node
 * fixtures) on 127.0.0.1, waits for them with a bound on every wait, talks
 * HTTP with libcurl, scans files for canary secrets and cleans up. It owns a
 * per-test directory and a table of the processes it started; it never
 * signals a process it did not start.
 *
 * Use from a cmocka group: every test runs with mx_it_setup/mx_it_teardown
 * and calls mx_it_pass() as its last statement. A test that did not reach
 * mx_it_pass() failed: teardown then prints the log of every process of the
 * test and keeps its directory (set MX_IT_KEEP=1 to keep it on success too).
 *
 * Paths come from the environment ctest sets: MX_BUILD_DIR (binaries) and
 * MX_SOURCE_DIR (tests/js and its node_modules).
 *
 * Functions returning int return 0 (or a count/status, as documented) or a
 * negative enum mx_err. All strings returned as char * are the caller's, to
 * free with free(); paths returned as const char * are borrowed.
 */
#ifndef MX_IT_HARNESS_H
#define MX_IT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#define MX_IT_MAX_PROCS   128 /* per test, node client runs included */
#define MX_IT_CANARY_SIZE 40  /* "canary-" + 32 hex + NUL */

/* Bounds used by the helpers below when the caller gives none. */
#define MX_IT_START_TIMEOUT_MS 15000 /* a process to open its port */
#define MX_IT_KILL_GRACE_MS    3000  /* SIGTERM to SIGKILL */
#define MX_IT_HTTP_TIMEOUT_MS  30000 /* one mx_it_http() exchange */
#define MX_IT_NODE_TIMEOUT_MS  60000 /* one node script, start to exit */
#define MX_IT_WATCHDOG_S       270   /* whole test binary; ctest's TIMEOUT is 300 */

/* cmocka setup/teardown (state is unused). Setup makes the test directory,
 * teardown stops every process, reports and removes or keeps the directory. */
int mx_it_setup(void **state);
int mx_it_teardown(void **state);
/* Mark the running test as passed; the last statement of every test. */
void mx_it_pass(void);

/* The current test's directory, and a new path inside it (caller frees). */
const char *mx_it_dir(void);
char *mx_it_path(const char *name);
/* $MX_BUILD_DIR and $MX_SOURCE_DIR; the test fails when they are unset. */
const char *mx_it_build_dir(void);
const char *mx_it_source_dir(void);

/*
 * Start |argv| (argv[0] is searched in PATH when it has no '/') in its own
 * process group, stdin from /dev/null, stdout and stderr appended to
 * |log_path| (NULL: <test dir>/<name>.log). |env| is a NULL-terminated list
 * of "NAME=value" entries set on top of the harness's environment, or of
 * "NAME" entries removed from it; NULL changes nothing. Returns the pid, or
 * -1 after printing why (the process table is full, spawn failed).
 */
pid_t mx_it_spawn(const char *name, const char *const *argv, const char *const *env,
                  const char *log_path);
/*
 * Start |argv| as mx_it_spawn() does, but with its stdin and stdout on pipes
 * (a stdio client's side of it: *|in| is written to its stdin, *|out| reads
 * its stdout; the caller closes both) and its stderr appended to
 * |err_path|, the log printed on failure. Returns the pid, or -1 (nothing
 * to close then).
 */
pid_t mx_it_spawn_piped(const char *name, const char *const *argv, const char *const *env,
                        const char *err_path, int *in, int *out);

/* Newline-delimited JSON read from a descriptor (a stdio MCP stream). */
struct mx_it_lines {
    int fd;
    size_t len;
    char buf[1024 * 1024];
};
/* The next line of |l->fd| parsed (duplicate keys refused), or NULL at its
 * end, which must come after a whole line. Fails the test on a line that
 * is no JSON object and after |wait_ms| without a whole line. */
json_t *mx_it_lines_next(struct mx_it_lines *l, int wait_ms);

/* Start the processes of the helpers above and below in the directory |dir|
 * (which must exist) until the test ends (NULL: the harness's own); their
 * log paths are unaffected. Paths given to them relative are taken there. */
void mx_it_set_cwd(const char *dir);

/* Send |sig| to a process started by mx_it_spawn() that has not been reaped.
 * Returns 0, MX_ENOTFOUND (not ours or already reaped) or MX_EIO. */
int mx_it_signal(pid_t pid, int sig);
/* Whether |pid| has exited (true for a pid that is not ours); does not reap. */
bool mx_it_has_exited(pid_t pid);
/*
 * Wait up to |timeout_ms| for |pid| (one of ours) to exit, then kill what is
 * left of its process group and reap it. Returns the wait status (>= 0, use
 * WIFEXITED/WEXITSTATUS), MX_ETIMEDOUT (still running, not reaped) or
 * MX_ENOTFOUND. Once reaped, later calls return the same status.
 */
int mx_it_wait_exit(pid_t pid, int timeout_ms);
/*
 * Stop every process the harness started and has not reaped: SIGTERM to each
 * process group, SIGKILL after MX_IT_KILL_GRACE_MS, then reap. Also runs at
 * exit and from the watchdog. Only pids from the table are signalled.
 */
void mx_it_kill_all(void);

/*
 * A port that was free on 127.0.0.1 a moment ago: bind :0, read the port,
 * close. Another process may take it before the caller binds it (a small race,
 * harmless on a test machine); prefer a child that binds :0 itself and writes
 * a port file. Returns the port or MX_EIO.
 */
int mx_it_free_port(void);
/*
 * Wait up to |timeout_ms| for |path| to hold a port number (written by the
 * child |pid| with --port-file or MX_PORT_FILE). Returns the port,
 * MX_ECLOSED when |pid| exited first, or MX_ETIMEDOUT.
 */
int mx_it_port_file(pid_t pid, const char *path, int timeout_ms);
/* Poll GET |url| until any HTTP answer arrives. Returns its status or
 * MX_ETIMEDOUT. */
int mx_it_wait_http(const char *url, int timeout_ms);
/* Poll GET |url| until it answers |want_status|. Returns 0 or MX_ETIMEDOUT. */
int mx_it_wait_http_status(const char *url, long want_status, int timeout_ms);

/*
 * One HTTP/1.1 exchange. |headers| is NULL or a NULL-terminated list of
 * "Name: value"; |body| NULL sends none. On return *|status| is the status
 * (0 when no answer) and *|resp_body| (if not NULL) the NUL-terminated body,
 * which the caller frees. Returns 0, MX_ETIMEDOUT or MX_EIO.
 */
int mx_it_http(const char *method, const char *url, const char *const *headers, const char *body,
               long *status, char **resp_body);
/* Same, with a timeout and the response headers as one string (caller frees;
 * may be NULL). */
int mx_it_http_full(const char *method, const char *url, const char *const *headers,
                    const char *body, int timeout_ms, long *status, char **resp_headers,
                    char **resp_body);

/*
 * Run `node <source>/tests/js/<script> <args...>` with |env| (as for
 * mx_it_spawn), wait up to MX_IT_NODE_TIMEOUT_MS, and parse its stdout as one
 * JSON object into *|out| (caller json_decref()s; NULL when stdout was not
 * JSON). stdout and stderr are kept in the test directory. Returns the exit
 * status (0..255), or MX_ETIMEDOUT, MX_ENOTFOUND (not ours), MX_EIO (could
 * not start, killed by a signal).
 */
int mx_it_node(const char *script, const char *const *args, const char *const *env, json_t **out);
/* The two halves of mx_it_node(), for several scripts at once: start returns
 * the pid or -1; finish waits up to |timeout_ms| and returns as mx_it_node(). */
pid_t mx_it_node_start(const char *script, const char *const *args, const char *const *env);
int mx_it_node_finish(pid_t pid, int timeout_ms, json_t **out);
/*
 * tests/js/client.mjs against |url|: |scenario| with |args_json| (NULL: {}),
 * sending "Authorization: Bearer <bearer>" when |bearer| is not NULL (through
 * MX_CLIENT_HEADERS in its environment, never argv). Returns as mx_it_node().
 */
int mx_it_client(const char *url, const char *scenario, const char *args_json, const char *bearer,
                 json_t **out);
/* Start the same without waiting; finish with mx_it_node_finish(). */
pid_t mx_it_client_start(const char *url, const char *scenario, const char *args_json,
                         const char *bearer);

/*
 * server-everything under the bind-localhost and require-auth preloads,
 * requiring "Authorization: Bearer <bearer>". Waits until it answers HTTP and
 * stores its port. Returns the pid or -1.
 */
pid_t mx_it_start_everything(const char *bearer, int *port);
/* The same with its |transport| argument ("streamableHttp", "sse"), on the
 * port *|port| holds on entry (0: any, chosen by the kernel). */
pid_t mx_it_start_everything_as(const char *transport, const char *bearer, int *port);
/*
 * build/sandbox-sim on 127.0.0.1:0 with a port file, requiring the bearer
 * |bearer| (passed through the environment, never argv); |extra_args| NULL or
 * more flags. Waits until it answers HTTP. Returns the pid or -1.
 */
pid_t mx_it_start_sim(const char *name, const char *bearer, const char *const *extra_args,
                      int *port);
/* build/mcplex serve -c |config_path|, whose listener is 127.0.0.1:|port|
 * (plain HTTP); waits until GET /health answers 200. Returns the pid or -1. */
pid_t mx_it_start_mcplex(const char *config_path, int port);

/* A TCP connection to 127.0.0.1:|port|, from the loopback address |from|
 * (NULL: any); fails the test when it cannot connect. */
int mx_it_connect_from(const char *from, int port);
/* Poll until something accepts on 127.0.0.1:|port|; fails the test after
 * |timeout_ms|, or once |pid| (ours; 0: none) has exited. */
void mx_it_wait_listening(pid_t pid, int port, int timeout_ms);
/* Send |len| bytes of |req| on |fd|, read until the peer closes or nothing
 * came for |timeout_ms| (at most 16 KiB), close |fd|; the answer, "" when
 * none came (caller frees). */
char *mx_it_raw_exchange(int fd, const char *req, size_t len, int timeout_ms);

/*
 * mcplex in front of one sandbox-sim "sim" (a random bearer, read from a
 * file): |listen_extra| (lines or "") goes into [listen]; with |ca| not NULL
 * over TLS with the state dir's own CA, whose path goes to *|ca| (caller
 * frees). Fails the test when either does not start; returns mcplex's port.
 */
int mx_it_start_sim_behind_mcplex(const char *listen_extra, char **ca);

/*
 * Trust the PEM CA file |ca_file| for https:// URLs in mx_it_http*() and
 * the waits above, until the test ends (NULL: the system store again).
 */
void mx_it_set_ca_file(const char *ca_file);
/* build/mcplex serve -c |config_path| with a TLS listener on
 * 127.0.0.1:|port|; waits until GET https://.../health, trusting |ca_file|,
 * answers 200. Returns the pid or -1. */
pid_t mx_it_start_mcplex_tls(const char *config_path, int port, const char *ca_file);
/*
 * Run |argv| (as mx_it_spawn) to its end, waiting up to |timeout_ms|; its
 * stdout and stderr go to a log in the test directory, returned whole in
 * *|output| (caller frees; "" when unreadable) when |output| is not NULL.
 * Returns the exit status (0..255), MX_ETIMEDOUT (killed) or MX_EIO (could
 * not start, or killed by a signal).
 */
int mx_it_run(const char *name, const char *const *argv, const char *const *env, int timeout_ms,
              char **output);

/* mx_it_client() without a bearer that fails the test unless it ran; the
 * caller json_decref()s the output. */
json_t *mx_it_client_ok(const char *url, const char *scenario, const char *args_json);
/* Fail unless the client run |out| (scenario "sampling") was asked for
 * sampling exactly once and its answer |reply| is in the tool's result. */
void mx_it_assert_sampled_once(const json_t *out, const char *reply);
/* The text of the first content item of a client run's tool result, or NULL. */
const char *mx_it_result_text(const json_t *out);
/* Whether the JSON array |arr| holds the string |s|. */
bool mx_it_has_string(const json_t *arr, const char *s);

/* Write |value| to a new file |name| of the test directory (a secret
 * file for a config); returns its path (caller frees). */
char *mx_it_secret_file(const char *name, const char *value);
/*
 * What whoever holds a CA's key could do: a new P-256 key and a leaf for
 * subject CN |cn| and subjectAltName |san| (openssl's syntax, e.g.
 * "DNS:www.example.com"), signed with |certs_dir|/ca.key by the openssl
 * tool, as <name>.pem and <name>.key in the test directory; their paths go
 * to *|cert| and *|key| (caller frees). Fails the test when openssl fails.
 */
void mx_it_sign_leaf(const char *certs_dir, const char *name, const char *cn, const char *san,
                     char **cert, char **key);
/* How many lines of the JSONL trace |trace_path| are messages of direction
 * |dir| ("c2s", "s2c") for server |server| that hold |needle|. */
int mx_it_trace_count(const char *trace_path, const char *dir, const char *server,
                      const char *needle);
/* mx_it_trace_count() polled until it reaches |want| or |ms| pass: a trace
 * line may be written after the answer that caused it reached the client.
 * Returns the last count. */
int mx_it_trace_wait(const char *trace_path, const char *dir, const char *server,
                     const char *needle, int want, int ms);
/* GET /health of the mcplex on 127.0.0.1:|port| (plain HTTP), which must
 * answer 200 with JSON: the parsed object (caller json_decref()s), and its
 * text in *|body| when |body| is not NULL (caller frees). */
json_t *mx_it_health(int port, char **body);

/* How many of |files| (NULL-terminated) hold any of the |cnt| |canaries|,
 * each hit printed to stderr by canary index and path; 0 is the pass. */
int mx_it_canary_hits(const char *const *files, const char *const *canaries, size_t cnt);

/* "canary-<32 hex>" into |buf| (at least MX_IT_CANARY_SIZE bytes). */
void mx_it_canary(char *buf, size_t cap);
/*
 * Look for |needle| in every file under |paths| (a NULL-terminated list of
 * files or directories, searched recursively). Returns the number of files
 * that contain it; with |hits| not NULL, *|hits| is a NULL-terminated list of
 * their paths, freed with mx_it_strv_free(). Returns MX_EIO when a path
 * cannot be read.
 */
int mx_it_scan_for(const char *const *paths, const char *needle, char ***hits);
void mx_it_strv_free(char **v);

/* Wait up to |timeout_ms| for |path| to exist; fail the test after that. */
void mx_it_wait_file(const char *path, int timeout_ms);
/* Whether the JSON array |strings| holds the string |s|. */
bool mx_it_json_has(const json_t *strings, const char *s);
/* Fail unless the JSON array of strings |names| is in strictly ascending
 * byte order (sorted, no name twice). */
void mx_it_assert_sorted_unique(const json_t *names);

/* The value of header |name| (case-insensitive) in a block of response
 * headers |headers| (may be NULL) into |out|; "" when absent. */
void mx_it_header_value(const char *headers, const char *name, char *out, size_t cap);

/* tests/js/client26.mjs (the SDK v2 client pinned to 2026-07-28) at |url|
 * with |args_json|: fails the test unless it ran, agreed on 2026-07-28 with
 * mcplex and never sent initialize or a session id. The output; the caller
 * json_decref()s it. */
json_t *mx_it_client26_ok(const char *url, const char *args_json);

/* Write |len| bytes (0600, replacing the file). Returns 0 or MX_EIO. */
int mx_it_write_file(const char *path, const char *data, size_t len);
/* Read a whole file (at most 64 MiB) with a NUL after it; caller frees.
 * Returns NULL when it cannot be read. */
char *mx_it_read_file(const char *path, size_t *len);

/* GET /__stats of the sandbox-sim on 127.0.0.1:|port| with its bearer
 * |token|; the parsed object (caller json_decref()s), or NULL after printing
 * why. */
json_t *mx_it_sim_stats(int port, const char *token);
/* How many |method| requests that sandbox-sim has served (its __stats
 * "methods" counter); fails the test when the stats cannot be read. */
json_int_t mx_it_sim_method_count(int port, const char *token, const char *method);

/* POST initialize (2025-11-25, as client |client|) then
 * notifications/initialized to the /mcp URL |url|: a 2025 session of a
 * client in raw HTTP, its Mcp-Session-Id into |sid|. Fails the test on
 * any other answer. */
void mx_it_open_session(const char *url, const char *client, char *sid, size_t cap);

/* An answer to a POSTed JSON-RPC request. */
struct mx_it_answer {
    long status;
    char *headers; /* the response headers as one string */
    char *body;
    json_t *msg; /* the body, or its last SSE event, parsed; NULL when not JSON */
};
/* Fill |a->msg| from |a->body|. */
void mx_it_answer_parse(struct mx_it_answer *a);
/*
 * POST a 2026-07-28 request |method| to |base||path|: |params| is the inside
 * of the params object ("" for none), |caps| the clientCapabilities (NULL:
 * {}), |version| the revision (NULL: 2026-07-28), |hdr_method| the
 * Mcp-Method header (NULL: |method|), Mcp-Name |name| when not NULL, one
 * more header |extra| when not NULL. Fails the test unless the answer is
 * JSON; |a| holds it.
 */
void mx_it_post26(const char *base, const char *path, const char *method, const char *name,
                  const char *params, const char *caps, const char *hdr_method, const char *version,
                  const char *extra, struct mx_it_answer *a);
/* A 2026-07-28 request |method| (Mcp-Name |name| when not NULL) with body
 * |body| POSTed on a connection of its own to mcplex on 127.0.0.1:|port|,
 * for an answer that streams: the socket, to read with mx_it_raw_wait. */
int mx_it_raw_post26(int port, const char *method, const char *name, const char *body);
/* Read |fd| into |*acc| (|*len| bytes, NUL-terminated) until it holds
 * |needle| |times| times; false at |timeout_ms| or the end of the stream. */
bool mx_it_raw_wait(int fd, char **acc, size_t *len, const char *needle, int times, int timeout_ms);
/* Free what |a| holds and zero it. */
void mx_it_answer_clear(struct mx_it_answer *a);
/* The "result" object of |a->msg|; fails the test when there is none. */
json_t *mx_it_result(const struct mx_it_answer *a);
/* error.code of |a->msg|, 0 when none. */
json_int_t mx_it_error_code(const struct mx_it_answer *a);
/* The text of the first content item of a tool |result|, or NULL. */
const char *mx_it_first_text(const json_t *result);
/* Fail unless |result| is one of mcplex to a 2026-07-28 client: resultType
 * "complete", mcplex's serverInfo, and with |cacheable| ttlMs >= 0 and
 * cacheScope "private". */
void mx_it_assert_modern_result(const json_t *result, bool cacheable);

#endif
