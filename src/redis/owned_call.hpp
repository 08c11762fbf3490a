/* Calls a worker owns, no request waiting for them: the release and
 * renewal of a request's slots (src/http/inflight.cpp, SPEC section 9) and
 * its charges (src/http/charges.cpp, SPEC section 10). Each is a group of its
 * own (group.ctx NULL), whose keys, specs, costs and rules are in the
 * same block of the worker's memory: it outlives the request. It leaves
 * with the others of its kind of this turn of the event loop, as one
 * script call per Redis server (per slot in a cluster), as a lease's
 * returns do; its answer comes to group.owned_done.
 *
 * A call that did not run (TRYAGAIN: its Cluster slot is migrating, and
 * its keys are on two nodes) goes again after a short back-off, within
 * its owner's window (a hold: later, the slot has expired anyway). A
 * worker that nginx stops gracefully (a reload) waits for its calls
 * out, as long: its requests' releases and charges reach Redis after
 * the last of them ends. */
#pragma once

#include "batch.hpp"
#include "ngx.hpp"

namespace rl {

/* What an owner of calls (inflight.cpp's holds, charges.cpp's charges)
 * keeps per worker: its calls out, those of them waiting to go again,
 * and what a worker that exits gracefully waits for (timers nginx waits
 * for: not cancelable). */
struct Owner {
    ngx_http_rl_main_conf_t *rmcf;
    ngx_log_t               *log;
    ngx_queue_t              out;       /* its calls sent, until freed */
    ngx_queue_t              later;     /* of them, waiting to go again */
    ngx_event_t              retry;     /* later's first is due */
    ngx_event_t              keep;      /* nginx stops the worker: out */
    int64_t                  windowUs;  /* a call goes again within it */
    bool                     exiting;   /* exit_process: no turn is left */
};

struct OwnedCall {
    ngx_http_rl_group_t     group;
    ngx_queue_t             queue;      /* on its owner's list */
    ngx_http_rl_rule_t    **rules;      /* per rule of the group */
    Owner                  *owner;
    CallKind                kind;       /* of the call out, if any */
    bool                    waiting;    /* on owner->later */
    ngx_queue_t             later;
    ngx_msec_t              dueMs;      /* waiting: sent again then */
    int64_t                 untilUs;    /* sent again until then */
};

/* The call of a group of the worker's (what owned_done gets). */
inline OwnedCall *ownedOf(ngx_http_rl_group_t *g) {
    return reinterpret_cast<OwnedCall *>(reinterpret_cast<u_char *>(g) -
                                         offsetof(OwnedCall, group));
}

/* The main configuration of the worker's cycle (of an answer's), or of
 * a request. */
inline ngx_http_rl_main_conf_t *cycleConf() {
    return static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_rl_module));
}
inline ngx_http_rl_main_conf_t *confOf(ngx_http_request_t *r) {
    return static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
}

void initOwner(Owner *o, ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log,
               int64_t windowUs);

/* A worker's part (a struct whose `owner` is its calls'), in the
 * cycle's pool. */
template <typename Worker>
Worker *newWorker(ngx_cycle_t *cycle, ngx_http_rl_main_conf_t *rmcf,
                  int64_t windowUs) {
    auto *w = static_cast<Worker *>(ngx_pcalloc(cycle->pool, sizeof(Worker)));
    if (w != nullptr) {
        initOwner(&w->owner, rmcf, cycle->log, windowUs);
    }
    return w;
}

/* The rules [0, n) of a request's group (indexes into its location's
 * rules), with their state keys for the request's key values and their
 * enforced specs, as a call of `size` bytes (the owner's struct, which
 * starts with an OwnedCall) followed by its arrays; costs zeroed, slot
 * and cluster slot as the group's. NULL when out of memory. */
OwnedCall *makeOwned(size_t size, const ngx_http_rl_group_t *g,
                     const ngx_uint_t *rules, ngx_uint_t n,
                     void (*done)(ngx_http_rl_group_t *, int), Owner *owner);

/* Sends a worker's own group (an OwnedCall's, a lease's return): the
 * first time (retry NGX_HTTP_RL_RETRY_NONE) queued with the others of
 * its kind of this turn; again, after Redis lost the script (RETRY_EVAL,
 * with its text) or the slot moved (RETRY_MOVED: where the map says;
 * RETRY_ASK: to group->ask), on its own. A refund gives back at
 * group->now_us; a renewal or a charge counts at group->sent_us. False
 * when it cannot go (no server known, Redis down). */
bool sendOwned(ngx_http_rl_main_conf_t *rmcf, ngx_http_rl_group_t *g,
               CallKind kind, int retry);

/* An OwnedCall's first send, of this kind (now, and again within its
 * owner's window); a call of it still waiting to go again does not go
 * (a release takes the place of its renewal's). */
bool sendOwned(OwnedCall *c, CallKind kind);

/* The call answered (or lost) asks to go again: sent again, or waiting
 * to (a back-off), and true; else false (done with it). */
bool retryOwned(OwnedCall *c, int retry);

/* The call goes again after a back-off (its link between connections),
 * if its window lasts that long: true; else false (done with it). */
bool waitOwned(OwnedCall *c);

/* Off its owner's list, and freed. */
void freeOwned(OwnedCall *c);

/* The worker exits (exit_process, no turn of the event loop left): the
 * calls waiting go now, once (true: there were some), and none waits
 * any more. */
bool ownerExit(Owner *o);

/* The connection serving the zone's slot in this worker, or NULL. */
ngx_http_rl_link_t *linkOf(ngx_http_rl_main_conf_t *rmcf,
                           const ngx_http_rl_zone_t *zone, ngx_uint_t slot);

}  // namespace rl
