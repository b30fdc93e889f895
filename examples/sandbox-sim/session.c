/* SPDX-License-Identifier: MIT */
/*
 * The sim's MCP sessions: a list kept in order of use, capped at
 * MX_SIM_MAX_SESSIONS by evicting the least recently used one, as a server
 * with a session limit would. Ids are 128 random bits in hex.
 */
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "log.h"
#include "rand.h"
#include "sim.h"

static void unlink_session(struct mx_sim *sim, struct mx_sim_session *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        sim->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    sim->session_cnt--;
}

static void push_front(struct mx_sim *sim, struct mx_sim_session *s)
{
    s->prev = NULL;
    s->next = sim->sessions;
    if (sim->sessions)
        sim->sessions->prev = s;
    sim->sessions = s;
    sim->session_cnt++;
}

struct mx_sim_session *mx_sim_session_new(struct mx_sim *sim, const char *revision)
{
    if (sim->session_cnt >= MX_SIM_MAX_SESSIONS) {
        struct mx_sim_session *last = sim->sessions;
        while (last->next)
            last = last->next;
        mx_log_info("sim", "session limit (%d) reached; evicting the least recently used",
                    MX_SIM_MAX_SESSIONS);
        unlink_session(sim, last);
        free(last);
        sim->stats.sessions_expired++;
    }
    struct mx_sim_session *s = mx_xcalloc(1, sizeof(*s));
    /* MCP 2025-06-18, Transports: a globally unique, cryptographically secure id. */
    mx_rand_hex(s->id, sizeof(s->id));
    snprintf(s->revision, sizeof(s->revision), "%s", revision);
    push_front(sim, s);
    sim->stats.sessions_created++;
    return s;
}

struct mx_sim_session *mx_sim_session_find(struct mx_sim *sim, struct mx_str id)
{
    for (struct mx_sim_session *s = sim->sessions; s; s = s->next) {
        if (mx_str_eq(id, mx_str_cstr(s->id))) {
            if (s != sim->sessions) {
                unlink_session(sim, s);
                push_front(sim, s);
            }
            return s;
        }
    }
    return NULL;
}

void mx_sim_session_delete(struct mx_sim *sim, struct mx_sim_session *s)
{
    unlink_session(sim, s);
    free(s);
    sim->stats.sessions_deleted++;
}

size_t mx_sim_session_expire_all(struct mx_sim *sim)
{
    size_t n = 0;
    while (sim->sessions) {
        struct mx_sim_session *s = sim->sessions;
        unlink_session(sim, s);
        free(s);
        n++;
    }
    sim->stats.sessions_expired += n;
    return n;
}
