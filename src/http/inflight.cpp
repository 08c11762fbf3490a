/*
 * inflight.cpp: a worker's part in the in-flight limits (see
 * inflight.hpp): the slot ids of its requests, a hold per request's
 * group of slots while the request runs, their renewal every hold/3
 * (the shortest hold of the configuration's rules), and at once on a
 * link's new connection, which puts back what Redis lost, and their
 * release when the request ends, in Redis (calls of the worker's own,
 * batched per link: owned_call.hpp) or in this instance's memory (an
 * embedded zone, a failure=local decision).
 *
 * A renewal puts its slot back (lua/concurrency.lua), so it must never
 * run after its slot's release: a hold that is leaving is off the live
 * list, never renewed; release() detaches a renewal still queued (it
 * does not leave) or out (its answer is dropped, so it is not sent
 * again), and the release follows it on its connection; a renewal sent
 * again (lost script: the same link; MOVED: the link the map now says,
 * which a release takes too; ASK: the importing node, which a release
 * reaches after it, by its own ASK) left before the release did; one
 * that waits to go again (TRYAGAIN: owned_call.hpp) is let go by the
 * release, which takes its place.
 */

#include "inflight.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "charges.hpp"
#include "clock.hpp"
#include "redis/owned_call.hpp"
#include "redis/link.hpp"
#include "shm/lease.hpp"

namespace rl {
namespace {

struct Worker {
    Owner                    owner;     /* its out: the releases out */
    uint64_t                 tag;       /* random: the ids' high half */
    uint32_t                 counter;
    ngx_queue_t              live;      /* holds of running requests */
    ngx_event_t              renew;
    int64_t                  tickUs;    /* the shortest hold / 3 */
};

/* A request's slots in one group: its rules that took one. Its group
 * (a call of the worker's own) renews and then releases them. */
struct Hold {
    OwnedCall                call;
    bool                     local;      /* in this instance's memory */
    bool                     counted;    /* in rl_inflight */
    bool                     leaving;    /* released: freed once answered */
};

void onRenew(ngx_event_t *ev) noexcept;
void holdDone(ngx_http_rl_group_t *g, int retry) noexcept;

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf) {
    return static_cast<Worker *>(rmcf->inflight_worker);
}

Hold *holdOf(ngx_http_rl_group_t *g) {
    return reinterpret_cast<Hold *>(ownedOf(g));
}

/* Where the group was decided: this instance's memory, or Redis. */
bool decidedHere(const ngx_http_rl_group_t *g) {
    return ngx_http_rl_embedded(g->zone) || g->local;
}

/* A hold of the group's rules whose bit is in `mask`. */
Hold *makeHold(Worker *w, ngx_http_rl_group_t *g, uint64_t mask) {
    ngx_uint_t rules[RL_MAX_RULES] = {0};
    ngx_uint_t n = 0;
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        if ((mask >> k) & 1) {
            rules[n++] = g->rules[k];
        }
    }
    auto *h = reinterpret_cast<Hold *>(
        makeOwned(sizeof(Hold), g, rules, n, holdDone, &w->owner));
    if (h == nullptr) {
        return nullptr;
    }
    for (ngx_uint_t k = 0; k < n; k++) {
        h->call.group.costs[k] = 1;
    }
    h->call.group.held = n < 64 ? (uint64_t(1) << n) - 1 : ~uint64_t(0);
    h->local = decidedHere(g);
    return h;
}

void count(Hold *h, ngx_atomic_int_t by) {
    for (ngx_uint_t k = 0; k < h->call.group.nrules; k++) {
        ngx_http_rl_rule_stats_t *s = h->call.rules[k]->stats;
        if (s != nullptr) {
            (void) ngx_atomic_fetch_add(&s->inflight, by);
        }
    }
}

void freeHold(Hold *h) {
    freeOwned(&h->call);
}

/* The hold's slots in this instance's memory: released, or renewed. */
void shmSlots(Hold *h, bool renew) {
    ngx_http_rl_group_t &g = h->call.group;
    size_t prefix = g.zone->prefix.len;
    for (ngx_uint_t k = 0; k < g.nrules; k++) {
        ngx_str_t key = {g.keys[k].len - prefix, g.keys[k].data + prefix};
        ngx_http_rl_shm_slot(g.zone, h->call.rules[k], &key, g.slot_id,
                             renew ? 1 : 0);
    }
}

/* The slots go: at once in this instance's memory; from Redis by a
 * release queued with the others of this turn (a renewal still out is
 * let go: the release follows it on its connection). A release that
 * cannot be sent waits for its link, within the hold (after it, the
 * slots have expired anyway). */
void release(Worker *w, Hold *h) {
    if (h->counted) {
        count(h, -1);
        h->counted = false;
    }
    ngx_queue_remove(&h->call.queue);
    ngx_queue_insert_tail(&w->owner.out, &h->call.queue);
    h->leaving = true;
    if (h->local) {
        shmSlots(h, false);
        freeHold(h);
        return;
    }
    ngx_http_rl_group_t &g = h->call.group;
    if (g.call != nullptr) {
        ngx_http_rl_call_detach(g.call);
        g.call = nullptr;
    }
    /* (a renewal waiting to go again does not: sendOwned); a link
     * between two connections (a reply lost with the last one) takes it
     * once it is made again: it waits, within the hold */
    if (!sendOwned(&h->call, CallKind::Refund) && !waitOwned(&h->call)) {
        freeHold(h);
    }
}

/* The group's slots of `mask` that a call may take, or its answer
 * took, go now (the request went before it was settled); inRedis: those
 * its call to Redis may have taken, wherever the group was decided. */
void releaseNow(Worker *w, ngx_http_rl_group_t *g, uint64_t mask,
                bool inRedis = false) {
    Hold *h = makeHold(w, g, mask);
    if (h != nullptr) {
        h->local = h->local && !inRedis;
        ngx_queue_insert_tail(&w->live, &h->call.queue);
        release(w, h);
    }
}

void armRenewal(Worker *w) {
    if (!w->renew.timer_set && !w->owner.exiting &&
        !ngx_queue_empty(&w->live)) {
        ngx_add_timer(&w->renew,
                      static_cast<ngx_msec_t>((w->tickUs + 999) / 1000));
    }
}

/* The running request's slots expire a hold from now, put back where
 * Redis lost them; not while its renewal is still out, nor once it is
 * leaving (one waiting to go again goes now instead). */
void renewHold(Worker *w, Hold *h) {
    if (h->leaving || h->call.group.call != nullptr) {
        return;
    }
    if (h->local) {
        shmSlots(h, true);
    } else {
        (void) sendOwned(&h->call, CallKind::Renew);
    }
}

Hold *holdAt(ngx_queue_t *q) {
    return reinterpret_cast<Hold *>(ngx_queue_data(q, OwnedCall, queue));
}

/* Every tick, every running request's slots, however young: each is
 * renewed within a tick (hold/3) of its decision or its last renewal,
 * which bounds how long a slot Redis lost stays out. */
void onRenew(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Worker *>(ev->data);
    for (ngx_queue_t *q = ngx_queue_head(&w->live);
         q != ngx_queue_sentinel(&w->live); q = ngx_queue_next(q)) {
        renewHold(w, holdAt(q));
    }
    armRenewal(w);
}

void holdDone(ngx_http_rl_group_t *g, int retry) noexcept {
    Hold *h = holdOf(g);
    g->call = nullptr;
    /* a renewal goes again only while its request runs (a release
     * detaches it: its answer does not come here) */
    bool again = !h->leaving || h->call.kind != CallKind::Renew;
    if (again && retryOwned(&h->call, retry)) {
        return;
    }
    /* a release that could not go again, or got no reply, waits to go
     * again within the hold (it removes its own ids only: twice is
     * harmless); an error reply is final */
    if (h->leaving && retry == NGX_HTTP_RL_REFUND_LOST &&
        h->call.kind == CallKind::Refund && waitOwned(&h->call)) {
        return;
    }
    if (h->leaving) {
        freeHold(h);
    }
}

/* 32 random bits for the worker's slot ids: workers of every instance
 * on one Redis must not meet on an id while their requests run. */
uint64_t randomTag() {
    uint32_t tag = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &tag, sizeof(tag)) != static_cast<ssize_t>(sizeof(tag))) {
            tag = 0;
        }
        close(fd);
    }
    if (tag == 0) {
        tag = static_cast<uint32_t>(ngx_random()) ^
              static_cast<uint32_t>(ngx_pid) ^
              static_cast<uint32_t>(realtimeUs());
    }
    return uint64_t(tag) << 32;
}

}  // namespace

uint64_t slotId(ngx_http_rl_main_conf_t *rmcf) {
    Worker *w = workerOf(rmcf);
    if (w == nullptr) {
        return 0;
    }
    if (++w->counter == 0) {
        ++w->counter;
    }
    return w->tag | w->counter;
}

void inflightHold(ngx_http_rl_ctx_t *ctx) {
    Worker *w = workerOf(confOf(ctx->r));
    if (w == nullptr) {
        return;
    }
    for (ngx_uint_t i = 0; i < ctx->ngroups; i++) {
        ngx_http_rl_group_t *g = &ctx->groups[i];
        if (g->held == 0 || g->error || g->skipped || !g->allowed ||
            g->hold != nullptr) {
            continue;
        }
        /* the rules that took a slot: not a dry run's rejection */
        uint64_t took = 0;
        for (ngx_uint_t k = 0; k < g->nrules; k++) {
            ngx_uint_t r = g->rules[k];
            if (((g->held >> k) & 1) && ctx->decided[r] &&
                ctx->outcomes[r].retry_ms == 0) {
                took |= uint64_t(1) << k;
            }
        }
        if (took == 0) {
            continue;
        }
        Hold *h = makeHold(w, g, took);
        if (h == nullptr) {
            continue;   /* no memory: the slots expire within the hold */
        }
        h->counted = true;
        count(h, 1);
        ngx_queue_insert_tail(&w->live, &h->call.queue);
        g->hold = h;
        armRenewal(w);
    }
}

void inflightAbandon(ngx_http_rl_group_t *g) {
    Worker *w = workerOf(confOf(g->ctx->r));
    if (w != nullptr && g->held != 0 && !decidedHere(g)) {
        releaseNow(w, g, g->held);
    }
}

void inflightEnd(ngx_http_rl_ctx_t *ctx) {
    Worker *w = workerOf(confOf(ctx->r));
    if (w == nullptr) {
        return;
    }
    for (ngx_uint_t i = 0; i < ctx->ngroups; i++) {
        ngx_http_rl_group_t *g = &ctx->groups[i];
        if (g->hold != nullptr) {
            release(w, static_cast<Hold *>(g->hold));
            g->hold = nullptr;
        } else if (!ctx->finished && g->held != 0) {
            /* gone before it was settled: what its call may take, or
             * what its answer took */
            if (g->call != nullptr ||
                (g->done && g->allowed && !g->error && !g->skipped)) {
                releaseNow(w, g, g->held);
            }
        }
        if (g->lost && g->held != 0) {
            /* its decision's reply was lost with its connection (the
             * request got the failure policy): the script may have run
             * and taken its slots, which it holds until now */
            g->lost = 0;
            releaseNow(w, g, g->held, true);
        }
    }
}

}  // namespace rl

extern "C" {

ngx_int_t ngx_http_rl_inflight_init(ngx_cycle_t *cycle,
                                    ngx_http_rl_main_conf_t *rmcf) noexcept {
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    int64_t shortest = 0;
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        auto hold = static_cast<int64_t>(rules[i]->window_us);
        if (rules[i]->algorithm == RL_ALGORITHM_CONCURRENCY &&
            (shortest == 0 || hold < shortest)) {
            shortest = hold;
        }
    }
    if (shortest == 0) {
        return NGX_OK;
    }
    /* a release or a renewal goes again within a hold (later, the slot
     * has expired anyway) */
    auto *w = rl::newWorker<rl::Worker>(cycle, rmcf, shortest);
    if (w == nullptr) {
        return NGX_ERROR;
    }
    w->tag = rl::randomTag();
    w->tickUs = shortest / 3;
    ngx_queue_init(&w->live);
    rl::initTimer(&w->renew, rl::onRenew, w, cycle->log);
    rmcf->inflight_worker = w;
    return NGX_OK;
}

void ngx_http_rl_inflight_exit(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::Worker *w = rl::workerOf(rmcf);
    if (w == nullptr) {
        return;
    }
    rl::stopTimer(&w->renew);
    /* what waits to go again goes now; what requests still hold (a fast
     * shutdown ends them without their log phase): released now, written
     * before the connections go */
    rl::ownerExit(&w->owner);
    while (!ngx_queue_empty(&w->live)) {
        ngx_queue_t *q = ngx_queue_head(&w->live);
        rl::release(w, rl::holdAt(q));
    }
    ngx_http_rl_stores_write(rmcf);
}

void ngx_http_rl_link_connected(ngx_http_rl_link_t *link) noexcept {
    ngx_http_rl_main_conf_t *rmcf = rl::cycleConf();
    rl::Worker *w = rmcf != nullptr ? rl::workerOf(rmcf) : nullptr;
    if (w == nullptr || w->owner.exiting) {
        return;
    }
    /* Redis may have lost them (a restart, a failover): put back now,
     * ahead of the decisions this connection takes */
    for (ngx_queue_t *q = ngx_queue_head(&w->live);
         q != ngx_queue_sentinel(&w->live); q = ngx_queue_next(q)) {
        rl::Hold *h = rl::holdAt(q);
        const ngx_http_rl_group_t &g = h->call.group;
        if (!h->local && rl::linkOf(rmcf, g.zone, g.slot) == link) {
            rl::renewHold(w, h);
        }
    }
}

void ngx_http_rl_inflight_free(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::Worker *w = rl::workerOf(rmcf);
    if (w == nullptr) {
        return;
    }
    while (!ngx_queue_empty(&w->owner.out)) {
        rl::freeHold(reinterpret_cast<rl::Hold *>(ngx_queue_data(
            ngx_queue_head(&w->owner.out), rl::OwnedCall, queue)));
    }
    rmcf->inflight_worker = nullptr;
}

ngx_uint_t ngx_http_rl_worker_busy(void) noexcept {
    ngx_http_rl_main_conf_t *rmcf = rl::cycleConf();
    if (rmcf == nullptr) {
        return 0;
    }
    rl::Worker *w = rl::workerOf(rmcf);
    bool holds = w != nullptr && (!ngx_queue_empty(&w->live) ||
                                  !ngx_queue_empty(&w->owner.out));
    return holds || rl::chargesOut(rmcf) || rl::leasesOut(rmcf) ? 1 : 0;
}

}  // extern "C"
