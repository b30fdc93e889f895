/* SPDX-License-Identifier: MIT */
/*
 * "Run this callback as soon as the current one returns" without a timer
 * of 0 s: a 0 s timer makes the loop poll the kernel once more (with no
 * wait) before it runs, one system call per use. An event fed to the
 * watcher while the loop is running callbacks is run in the same pass
 * (libev runs pending watchers until none is left), after the callback
 * now running. Outside the loop's callbacks (before ev_run) the timer is
 * started as before.
 */
#ifndef MX_EVSOON_H
#define MX_EVSOON_H

#include <ev.h>

/* |w| (an initialised ev_timer, started or not) runs soon; once, however
 * often this is called before it runs. ev_timer_stop takes it back. */
static inline void mx_ev_soon(struct ev_loop *loop, ev_timer *w)
{
    if (ev_is_pending(w) || ev_is_active(w))
        return;
    if (ev_depth(loop) > 0) {
        ev_feed_event(loop, w, EV_TIMER);
    } else {
        ev_timer_set(w, 0.0, 0.0);
        ev_timer_start(loop, w);
    }
}

#endif
