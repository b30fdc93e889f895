/* SPDX-License-Identifier: MIT */
/*
 * The pause/wake state machine and the error-rate draw. AWAKE turns PAUSED
 * after pause_after_ms without /mcp requests (and no stream in flight). A
 * request to a paused sim either starts a wake and is held hold_ms (hold
 * mode) or is refused until POST /__wake starts a wake of wake_ms (refuse
 * mode). Requests arriving while WAKING share that one wake. All waiting is
 * on ev_timers; nothing here blocks.
 */
#include <stdlib.h>

#include "alloc.h"
#include "log.h"
#include "sim.h"

struct mx_sim_held {
    struct mx_sim_held *next;
    struct mx_sim *sim;
    struct mx_req *req;
};

const char *mx_sim_state_name(enum mx_sim_state s)
{
    switch (s) {
    case MX_SIM_AWAKE:
        return "awake";
    case MX_SIM_PAUSED:
        return "paused";
    case MX_SIM_WAKING:
        return "waking";
    }
    return "?";
}

uint64_t mx_sim_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void set_state(struct mx_sim *sim, enum mx_sim_state to)
{
    if (sim->state == to)
        return;
    mx_log_info("sim", "state %s -> %s", mx_sim_state_name(sim->state), mx_sim_state_name(to));
    sim->state = to;
}

/* Restart the idle countdown; only an awake sim with pause_after_ms counts down. */
static void touch(struct mx_sim *sim)
{
    if (sim->state != MX_SIM_AWAKE || sim->set.pause_after_ms <= 0) {
        ev_timer_stop(sim->loop, &sim->idle_timer);
        return;
    }
    sim->idle_timer.repeat = (double)sim->set.pause_after_ms / 1000.0;
    ev_timer_again(sim->loop, &sim->idle_timer);
}

static void idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim *sim = mx_container_of(w, struct mx_sim, idle_timer);
    (void)loop;
    (void)revents;
    /* A sandbox with an open response is not idle; the repeat re-arms us. */
    if (sim->busy > 0)
        return;
    mx_sim_fault_pause(sim);
}

static void wake_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct mx_sim *sim = mx_container_of(w, struct mx_sim, wake_timer);
    (void)loop;
    (void)revents;
    set_state(sim, MX_SIM_AWAKE);
    touch(sim);
    /* Pop one at a time: serving a request may dispatch the next pipelined one. */
    while (sim->held_head) {
        struct mx_sim_held *h = sim->held_head;
        struct mx_req *req = h->req;
        sim->held_head = h->next;
        if (sim->held_head == NULL)
            sim->held_tail = NULL;
        sim->held_cnt--;
        free(h);
        mx_req_set_handler(req, NULL, NULL, NULL);
        sim->releasing = req;
        mx_sim_serve_mcp(sim, req);
        sim->releasing = NULL;
    }
}

static void held_abort(struct mx_req *req, void *data)
{
    struct mx_sim_held *h = data, **pp;
    struct mx_sim *sim = h->sim;
    struct mx_sim_held *prev = NULL;
    (void)req;
    for (pp = &sim->held_head; *pp; prev = *pp, pp = &(*pp)->next) {
        if (*pp == h) {
            *pp = h->next;
            if (sim->held_tail == h)
                sim->held_tail = prev;
            sim->held_cnt--;
            break;
        }
    }
    mx_log_info("sim", "req#%lu: client left while held", mx_req_id(req));
    free(h);
}

void mx_sim_fault_init(struct mx_sim *sim)
{
    sim->state = MX_SIM_AWAKE;
    ev_init(&sim->idle_timer, idle_cb);
    ev_init(&sim->wake_timer, wake_cb);
    mx_sim_fault_reconfigure(sim, true);
}

void mx_sim_fault_clear(struct mx_sim *sim)
{
    ev_timer_stop(sim->loop, &sim->idle_timer);
    ev_timer_stop(sim->loop, &sim->wake_timer);
    while (sim->held_head) {
        struct mx_sim_held *h = sim->held_head;
        sim->held_head = h->next;
        mx_req_set_handler(h->req, NULL, NULL, NULL);
        mx_req_reset(h->req);
        free(h);
    }
    sim->held_tail = NULL;
    sim->held_cnt = 0;
}

void mx_sim_fault_reconfigure(struct mx_sim *sim, bool reseed)
{
    if (reseed)
        sim->rng = (uint64_t)sim->set.seed;
    touch(sim);
}

bool mx_sim_fault_wake(struct mx_sim *sim, int64_t ms)
{
    if (sim->state != MX_SIM_PAUSED)
        return false;
    sim->stats.wakes++;
    set_state(sim, MX_SIM_WAKING);
    ev_timer_set(&sim->wake_timer, (double)ms / 1000.0, 0.0);
    ev_timer_start(sim->loop, &sim->wake_timer);
    return true;
}

void mx_sim_fault_pause(struct mx_sim *sim)
{
    if (sim->state != MX_SIM_AWAKE)
        return;
    ev_timer_stop(sim->loop, &sim->idle_timer);
    set_state(sim, MX_SIM_PAUSED);
}

enum mx_sim_gate mx_sim_fault_gate(struct mx_sim *sim)
{
    bool refuse = sim->set.pause_mode == MX_SIM_PAUSE_REFUSE;
    switch (sim->state) {
    case MX_SIM_AWAKE:
        touch(sim);
        return MX_SIM_GO;
    case MX_SIM_PAUSED:
        if (refuse)
            return MX_SIM_REFUSE;
        /* Sandboxer style: the request itself wakes the sandbox and waits. */
        mx_sim_fault_wake(sim, sim->set.hold_ms);
        return MX_SIM_HOLD;
    case MX_SIM_WAKING:
        return refuse ? MX_SIM_REFUSE : MX_SIM_HOLD;
    }
    return MX_SIM_GO;
}

void mx_sim_fault_hold(struct mx_sim *sim, struct mx_req *req)
{
    struct mx_sim_held *h = mx_xcalloc(1, sizeof(*h));
    h->sim = sim;
    h->req = req;
    if (sim->held_tail)
        sim->held_tail->next = h;
    else
        sim->held_head = h;
    sim->held_tail = h;
    sim->held_cnt++;
    sim->stats.held++;
    mx_req_set_handler(req, NULL, held_abort, h);
}

void mx_sim_fault_busy(struct mx_sim *sim, int delta)
{
    if (delta > 0) {
        sim->busy++;
        return;
    }
    MX_ASSERT(sim->busy > 0);
    if (--sim->busy == 0)
        touch(sim);
}

bool mx_sim_fault_inject(struct mx_sim *sim)
{
    if (sim->set.error_rate <= 0.0)
        return false;
    /* 53 random bits give a uniform double in [0, 1). */
    double u = (double)(mx_sim_rng_next(&sim->rng) >> 11) * 0x1.0p-53;
    return u < sim->set.error_rate;
}
