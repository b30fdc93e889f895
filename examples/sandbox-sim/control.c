/* SPDX-License-Identifier: MIT */
/*
 * The test harness's side of the sim: one settings table shared by the
 * command line and POST /__control, the counters at GET /__stats, and
 * POST /__wake. These endpoints need the same credential as /mcp but are not
 * part of the simulated sandbox: they answer while paused and do not count
 * as activity.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "alloc.h"
#include "err.h"
#include "httpd.h"
#include "log.h"
#include "num.h"
#include "sim.h"

enum setting_type {
    SET_INT = 0,
    SET_RATE = 1,
    SET_MODE = 2,
    SET_BOOL = 3, /* true or false (1 or 0 on the command line) */
};

struct setting {
    const char *name;
    enum setting_type type;
    size_t off;
    int64_t min;
    int64_t max;
};

#define OFF(f) offsetof(struct mx_sim_settings, f)

static const struct setting settings[] = {
    {"pause_after_ms", SET_INT, OFF(pause_after_ms), 0, 86400000},
    {"pause_mode", SET_MODE, OFF(pause_mode), 0, 1},
    {"hold_ms", SET_INT, OFF(hold_ms), 0, 600000},
    {"refuse_status", SET_INT, OFF(refuse_status), 400, 599},
    {"wake_ms", SET_INT, OFF(wake_ms), 0, 600000},
    {"error_rate", SET_RATE, OFF(error_rate), 0, 1},
    {"seed", SET_INT, OFF(seed), 0, INT64_MAX},
    {"retry_after", SET_INT, OFF(retry_after), -1, 86400},
    {"gone", SET_BOOL, OFF(gone), 0, 1},
    {"unauthorized_delay_ms", SET_INT, OFF(unauthorized_delay_ms), 0, 600000},
};

#define SETTING_CNT (sizeof(settings) / sizeof(settings[0]))

static const char *const mode_names[] = {"hold", "refuse"};

void mx_sim_settings_default(struct mx_sim_settings *set)
{
    memset(set, 0, sizeof(*set));
    set->pause_after_ms = 0;
    set->pause_mode = MX_SIM_PAUSE_HOLD;
    set->hold_ms = 1000;
    set->refuse_status = 503;
    set->wake_ms = 500;
    set->error_rate = 0.0;
    set->seed = 1;
    set->retry_after = -1;
    set->gone = 0;
}

static const struct setting *find_setting(const char *name)
{
    for (size_t i = 0; i < SETTING_CNT; i++) {
        if (strcmp(settings[i].name, name) == 0)
            return &settings[i];
    }
    return NULL;
}

static int64_t *int_field(struct mx_sim_settings *set, const struct setting *s)
{
    return (int64_t *)(void *)((char *)set + s->off);
}

static double *rate_field(struct mx_sim_settings *set, const struct setting *s)
{
    return (double *)(void *)((char *)set + s->off);
}

static int set_rate(struct mx_sim_settings *set, const struct setting *s, double v, char *err,
                    size_t errcap)
{
    if (!isfinite(v) || v < 0.0 || v > 1.0) {
        snprintf(err, errcap, "%s must be a number from 0 to 1", s->name);
        return MX_EINVAL;
    }
    *rate_field(set, s) = v;
    return 0;
}

static int range_error(const struct setting *s, char *err, size_t errcap)
{
    snprintf(err, errcap, "%s must be an integer from %lld to %lld", s->name, (long long)s->min,
             (long long)s->max);
    return MX_EINVAL;
}

static int set_int(struct mx_sim_settings *set, const struct setting *s, int64_t v, char *err,
                   size_t errcap)
{
    if (v < s->min || v > s->max)
        return range_error(s, err, errcap);
    *int_field(set, s) = v;
    return 0;
}

static int set_mode(struct mx_sim_settings *set, const struct setting *s, const char *v, char *err,
                    size_t errcap)
{
    for (size_t i = 0; v && i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
        if (strcmp(v, mode_names[i]) == 0) {
            *int_field(set, s) = (int64_t)i;
            return 0;
        }
    }
    snprintf(err, errcap, "%s must be \"hold\" or \"refuse\"", s->name);
    return MX_EINVAL;
}

int mx_sim_setting_parse(struct mx_sim_settings *set, const char *name, const char *value,
                         char *err, size_t errcap)
{
    const struct setting *s = find_setting(name);
    int64_t v;
    if (s == NULL) {
        snprintf(err, errcap, "unknown setting '%s'", name);
        return MX_ENOTFOUND;
    }
    switch (s->type) {
    case SET_INT:
        if (mx_num_parse(value, strlen(value), s->min, s->max, &v))
            return range_error(s, err, errcap);
        return set_int(set, s, v, err, errcap);
    case SET_RATE: {
        char *end = NULL;
        double d = strtod(value, &end);
        if (end == value || *end != '\0')
            d = NAN;
        return set_rate(set, s, d, err, errcap);
    }
    case SET_MODE:
        return set_mode(set, s, value, err, errcap);
    case SET_BOOL:
        if (strcmp(value, "1") != 0 && strcmp(value, "0") != 0 && strcmp(value, "true") != 0 &&
            strcmp(value, "false") != 0) {
            snprintf(err, errcap, "%s must be true or false (1 or 0)", s->name);
            return MX_EINVAL;
        }
        *int_field(set, s) = value[0] == '1' || value[0] == 't';
        return 0;
    }
    return MX_EINVAL;
}

static int setting_from_json(struct mx_sim_settings *set, const struct setting *s, json_t *v,
                             char *err, size_t errcap)
{
    switch (s->type) {
    case SET_INT:
        if (!json_is_integer(v))
            return range_error(s, err, errcap);
        return set_int(set, s, json_integer_value(v), err, errcap);
    case SET_RATE:
        return set_rate(set, s, json_is_number(v) ? json_number_value(v) : NAN, err, errcap);
    case SET_MODE:
        return set_mode(set, s, json_string_value(v), err, errcap);
    case SET_BOOL:
        if (!json_is_boolean(v)) {
            snprintf(err, errcap, "%s must be true or false", s->name);
            return MX_EINVAL;
        }
        *int_field(set, s) = json_is_true(v);
        return 0;
    }
    return MX_EINVAL;
}

json_t *mx_sim_settings_json(const struct mx_sim *sim)
{
    json_t *o = json_object();
    struct mx_sim_settings copy = sim->set;
    for (size_t i = 0; i < SETTING_CNT; i++) {
        const struct setting *s = &settings[i];
        json_t *v;
        if (s->type == SET_RATE)
            v = json_real(*rate_field(&copy, s));
        else if (s->type == SET_MODE)
            v = json_string(mode_names[*int_field(&copy, s)]);
        else if (s->type == SET_BOOL)
            v = json_boolean(*int_field(&copy, s));
        else
            v = json_integer(*int_field(&copy, s));
        json_object_set_new(o, s->name, v);
    }
    json_object_set_new(o, "drop_next_events", json_integer(sim->drop_after_events));
    json_object_set_new(o, "drop_next_before_response", json_boolean(sim->drop_before_response));
    return o;
}

/* ---- /__stats ---- */

static json_t *stats_json(const struct mx_sim *sim)
{
    const struct mx_sim_stats *st = &sim->stats;
    json_t *status = json_object(), *methods = json_object(), *tools = json_object();
    char key[16];

    for (int i = 0; i < 600; i++) {
        if (st->status[i] == 0)
            continue;
        snprintf(key, sizeof(key), "%d", i);
        json_object_set_new(status, key, json_integer((json_int_t)st->status[i]));
    }
    for (int m = 0; m < MX_SIM_M_CNT; m++)
        json_object_set_new(methods, mx_sim_method_name((enum mx_sim_method)m),
                            json_integer((json_int_t)st->methods[m]));
    for (int t = 0; t < MX_SIM_T_CNT; t++)
        json_object_set_new(tools, mx_sim_tool_name((enum mx_sim_tool)t),
                            json_integer((json_int_t)st->tools[t]));
    json_t *j = json_pack(
        "{s:s,s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
        "s:{s:I,s:I,s:I,s:I},s:I,s:I}",
        "name", sim->name, "state", mx_sim_state_name(sim->state), "paused",
        sim->state == MX_SIM_PAUSED, "requests", (json_int_t)st->requests, "control_requests",
        (json_int_t)st->control_requests, "status", status, "methods", methods, "tools", tools,
        "wakes", (json_int_t)st->wakes, "wake_requests", (json_int_t)st->wake_requests, "held",
        (json_int_t)st->held, "refused", (json_int_t)st->refused, "injected_errors",
        (json_int_t)st->injected, "dropped", (json_int_t)st->dropped, "cancelled",
        (json_int_t)st->cancelled, "unauthorized", (json_int_t)st->unauthorized, "sessions",
        "alive", (json_int_t)sim->session_cnt, "created", (json_int_t)st->sessions_created,
        "expired", (json_int_t)st->sessions_expired, "deleted", (json_int_t)st->sessions_deleted,
        "streams", (json_int_t)sim->busy, "held_now", (json_int_t)sim->held_cnt);
    /* TCP (or TLS) connections accepted since start: shows connection reuse */
    json_object_set_new(j, "connections",
                        json_integer((json_int_t)mx_httpd_accepted_cnt(sim->httpd)));
    /* what clients hold open now: what keeps a real sandbox from pausing
     * (open_connections counts the one asking for these stats) */
    json_object_set_new(j, "open_connections",
                        json_integer((json_int_t)mx_httpd_conn_cnt(sim->httpd)));
    json_object_set_new(j, "get_streams", json_integer((json_int_t)sim->get_streams));
    json_object_set_new(j, "get_opened", json_integer((json_int_t)st->get_opened));
    json_object_set_new(j, "gone", json_integer((json_int_t)st->gone));
    json_object_set_new(j, "tasks_get", json_integer((json_int_t)st->tasks_get));
    json_object_set_new(j, "tasks_result", json_integer((json_int_t)st->tasks_result));
    return j;
}

/* ---- /__control ---- */

static json_t *error_body(const char *msg)
{
    return json_pack("{s:s,s:s}", "error", "bad_request", "message", msg);
}

static json_t *state_body(const struct mx_sim *sim)
{
    return json_pack("{s:s,s:b,s:I}", "state", mx_sim_state_name(sim->state), "paused",
                     sim->state == MX_SIM_PAUSED, "wakes", (json_int_t)sim->stats.wakes);
}

/* Validate one action name (and "events" for drop_next) without running it. */
static bool action_known(const char *a)
{
    static const char *const actions[] = {
        "pause",
        "wake",
        "expire_sessions",
        "drop_next",
        "drop_next_before_response",
        "reset_stats",
        "add_tool",
        NULL,
    };
    for (size_t i = 0; a && actions[i]; i++) {
        if (strcmp(a, actions[i]) == 0)
            return true;
    }
    return false;
}

static void run_action(struct mx_sim *sim, const char *a, int64_t events)
{
    if (strcmp(a, "pause") == 0) {
        mx_sim_fault_pause(sim);
    } else if (strcmp(a, "wake") == 0) {
        sim->stats.wake_requests++;
        mx_sim_fault_wake(sim, sim->set.wake_ms);
    } else if (strcmp(a, "expire_sessions") == 0) {
        size_t n = mx_sim_session_expire_all(sim);
        mx_log_info("sim", "control: expired %zu sessions", n);
    } else if (strcmp(a, "drop_next") == 0) {
        sim->drop_after_events = events;
    } else if (strcmp(a, "drop_next_before_response") == 0) {
        sim->drop_before_response = true;
    } else if (strcmp(a, "reset_stats") == 0) {
        memset(&sim->stats, 0, sizeof(sim->stats));
    } else if (strcmp(a, "add_tool") == 0 && sim->extra_tools < MX_SIM_EXTRA_TOOLS_MAX) {
        sim->extra_tools++;
        mx_log_info("sim", "control: tool gen-%lld added", (long long)sim->extra_tools);
        mx_sim_stream_list_changed(sim, MX_SIM_CHANGED_TOOLS);
    }
}

static void control(struct mx_sim *sim, struct mx_req *req)
{
    struct mx_str body = mx_req_body(req);
    json_error_t jerr;
    json_t *in = json_loadb(body.p, body.len, JSON_REJECT_DUPLICATES, &jerr);
    struct mx_sim_settings next = sim->set;
    json_t *actions = NULL, *v;
    int64_t events = 1;
    char err[160] = "";
    const char *key;
    bool reseed = false;
    json_t *credential = NULL;

    if (!json_is_object(in)) {
        mx_sim_respond(sim, req, 400, NULL, 0, error_body("body must be a JSON object"), "control");
        json_decref(in);
        return;
    }
    /* Check everything first so that a bad body changes nothing. */
    json_object_foreach(in, key, v)
    {
        const struct setting *s = find_setting(key);
        if (s) {
            if (setting_from_json(&next, s, v, err, sizeof(err)))
                break;
            reseed = reseed || s->off == OFF(seed);
        } else if (strcmp(key, "action") == 0) {
            actions = json_is_string(v) ? json_pack("[O]", v) : json_incref(v);
        } else if (strcmp(key, "events") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) > 1000000) {
                snprintf(err, sizeof(err), "events must be an integer from 0 to 1000000");
                break;
            }
            events = json_integer_value(v);
        } else if (strcmp(key, "credential") == 0) {
            /* a credential that expires: the sandbox accepts only the new one */
            size_t n = json_string_length(v);
            const char *p = json_string_value(v);
            if (sim->auth_mode == MX_SIM_AUTH_NONE) {
                snprintf(err, sizeof(err),
                         "credential: the sim takes none (start it with "
                         "--bearer-env or --cookie)");
                break;
            }
            if (p == NULL || n == 0 || n > 4096 || memchr(p, '\r', n) || memchr(p, '\n', n) ||
                memchr(p, '\0', n)) {
                snprintf(err, sizeof(err),
                         "credential must be a string of 1 to 4096 bytes "
                         "without CR, LF or NUL");
                break;
            }
            credential = v;
        } else {
            snprintf(err, sizeof(err), "unknown key '%.60s'", key);
            break;
        }
    }
    if (err[0] == '\0' && actions && !json_is_array(actions))
        snprintf(err, sizeof(err), "action must be a string or an array of strings");
    for (size_t i = 0; err[0] == '\0' && i < json_array_size(actions); i++) {
        if (!action_known(json_string_value(json_array_get(actions, i))))
            snprintf(err, sizeof(err), "unknown action");
    }
    if (err[0]) {
        mx_sim_respond(sim, req, 400, NULL, 0, error_body(err), "control");
        json_decref(actions);
        json_decref(in);
        return;
    }
    sim->set = next;
    mx_sim_fault_reconfigure(sim, reseed);
    if (credential) {
        OPENSSL_cleanse(sim->secret, sim->secret_len);
        free(sim->secret);
        sim->secret_len = json_string_length(credential);
        sim->secret = mx_xmalloc(sim->secret_len);
        memcpy(sim->secret, json_string_value(credential), sim->secret_len);
        mx_log_info("sim", "control: credential replaced");
    }
    for (size_t i = 0; i < json_array_size(actions); i++) {
        const char *a = json_string_value(json_array_get(actions, i));
        mx_log_info("sim", "control: %s", a);
        run_action(sim, a, events);
    }
    json_decref(actions);
    json_decref(in);
    json_t *out = state_body(sim);
    json_object_set_new(out, "settings", mx_sim_settings_json(sim));
    mx_sim_respond(sim, req, 200, NULL, 0, out, "control");
}

/* ---- routing ---- */

void mx_sim_control_route(struct mx_sim *sim, struct mx_req *req)
{
    static const struct mx_hdr_out allow_get[] = {{"Allow", "GET"}};
    static const struct mx_hdr_out allow_post[] = {{"Allow", "POST"}};
    struct mx_str path = mx_req_path(req);
    struct mx_str method = mx_req_method(req);
    bool get = mx_str_eq(method, MX_STR_LIT("GET"));
    bool post = mx_str_eq(method, MX_STR_LIT("POST"));

    sim->stats.control_requests++;
    if (mx_str_eq(path, MX_STR_LIT("/__stats"))) {
        if (!get)
            mx_sim_respond(sim, req, 405, allow_get, 1, NULL, "stats");
        else
            mx_sim_respond(sim, req, 200, NULL, 0, stats_json(sim), "stats");
    } else if (mx_str_eq(path, MX_STR_LIT("/__control"))) {
        if (!post)
            mx_sim_respond(sim, req, 405, allow_post, 1, NULL, "control");
        else
            control(sim, req);
    } else if (mx_str_eq(path, MX_STR_LIT("/__wake"))) {
        if (!post) {
            mx_sim_respond(sim, req, 405, allow_post, 1, NULL, "wake");
            return;
        }
        sim->stats.wake_requests++;
        bool started = mx_sim_fault_wake(sim, sim->set.wake_ms);
        mx_sim_respond(sim, req, 200, NULL, 0, state_body(sim),
                       started ? "wake (started)" : "wake (not paused)");
    } else {
        mx_sim_respond(sim, req, 404, NULL, 0,
                       json_pack("{s:s,s:s}", "error", "not_found", "message", "no such path"),
                       NULL);
    }
}
