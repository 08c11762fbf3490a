/*
 * lease_calls.cpp: a worker's part in the leases (see lease.hpp): the
 * calls it owns (grants and returns), their replies, the sweep that
 * gives back what leases hold when they end, and the return of its
 * generation's leases when it exits (a reload, a stop).
 */

#include "shm/lease.hpp"

#include "redis/batch.hpp"
#include "clock.hpp"
#include "core/reply.hpp"
#include "redis/owned_call.hpp"
#include "redis/link.hpp"

namespace rl {
namespace lease {
namespace {

void onSweep(ngx_event_t *ev) noexcept;
void onHold(ngx_event_t *ev) noexcept;

Call *callOf(ngx_http_rl_group_t *g) {
    return reinterpret_cast<Call *>(reinterpret_cast<u_char *>(g) -
                                    offsetof(Call, group));
}

/* Spare blocks kept beyond what an outbox takes: calls come back as
 * their replies arrive. */
constexpr ngx_uint_t kMaxSpare = 4 * Outbox::kSize;
/* a first block size: a group of 4 rules with long keys and specs */
constexpr size_t kFirstBlockRules = 4;
constexpr size_t kFirstBlockText = 256;

size_t callBytes(size_t n, size_t bytes) {
    return sizeof(Call) +
           n * (2 * sizeof(ngx_str_t) + sizeof(ngx_str_t *) +
                sizeof(uint64_t) + sizeof(int64_t)) +
           bytes;
}

/* A block of `size` bytes for a call, from the spare ones (under a
 * stripe's lock: no allocation); only a call larger than any block
 * reserved so far (a group of more rules, or longer keys and specs,
 * than the first guess) is allocated here, and the blocks reserved
 * from then on are as large. */
Call *takeBlock(Worker *w, size_t size) {
    for (ngx_queue_t *q = ngx_queue_head(&w->spare);
         q != ngx_queue_sentinel(&w->spare); q = ngx_queue_next(q)) {
        Call *c = ngx_queue_data(q, Call, queue);
        if (c->bytes >= size) {
            ngx_queue_remove(q);
            w->nspare--;
            return c;
        }
    }
    if (size > w->blockBytes) {
        w->blockBytes = size;
        w->grew = true;
    }
    auto *c = static_cast<Call *>(ngx_alloc(w->blockBytes, w->log));
    if (c != nullptr) {
        c->bytes = w->blockBytes;
    }
    return c;
}

/* A call of n rules whose keys, specs and entry key take `bytes`: its
 * arrays and bytes in the same block (made under a stripe's lock: no
 * allocation, no timer). */
Call *makeCall(Worker *w, Kind kind, ngx_http_rl_zone_t *zone, size_t n,
               size_t bytes) {
    Call *c = takeBlock(w, callBytes(n, bytes));
    if (c == nullptr) {
        return nullptr;
    }
    size_t block = c->bytes;
    ngx_memzero(c, sizeof(Call));
    c->bytes = block;
    auto *keys = reinterpret_cast<ngx_str_t *>(c + 1);
    auto *specs = keys + n;
    auto **specRefs = reinterpret_cast<ngx_str_t **>(specs + n);
    auto *costs = reinterpret_cast<uint64_t *>(specRefs + n);
    c->windowUs = reinterpret_cast<int64_t *>(costs + n);
    for (size_t k = 0; k < n; k++) {
        specRefs[k] = &specs[k];
        costs[k] = 0;
    }
    c->kind = kind;
    c->zone = zone;
    c->group.zone = zone;
    c->group.nrules = n;
    c->group.keys = keys;
    c->group.specs = specRefs;
    c->group.costs = costs;
    c->group.sent_us = monotonicUs();
    ngx_queue_insert_tail(&w->calls, &c->queue);
    return c;
}

u_char *bytesOf(Call *c) {
    return reinterpret_cast<u_char *>(c->windowUs + c->group.nrules);
}

/* The lease's keys and specs, copied into the call's block from p. */
u_char *copyText(Call *c, const Lease *l, u_char *p) {
    const u_char *t = textOf(l);
    for (ngx_uint_t k = 0; k < l->nrules; k++) {
        c->group.keys[k] = {l->rules[k].keyLen, p};
        p = ngx_cpymem(p, t, l->rules[k].keyLen);
        t += l->rules[k].keyLen;
        c->windowUs[k] = l->rules[k].windowUs;
    }
    for (ngx_uint_t k = 0; k < l->nrules; k++) {
        *c->group.specs[k] = {l->rules[k].specLen, p};
        p = ngx_cpymem(p, t, l->rules[k].specLen);
        t += l->rules[k].specLen;
    }
    return p;
}

size_t textBytes(const Lease *l) {
    size_t n = 0;
    for (ngx_uint_t k = 0; k < l->nrules; k++) {
        n += l->rules[k].keyLen + l->rules[k].specLen;
    }
    return n;
}

/* A return: for the first time, with the other returns of this turn to
 * its link; or again (its retry), on its own (at the grant's time, its
 * group's now_us). */
bool sendReturn(Worker *w, Call *c, int retry) {
    return sendOwned(w->rmcf, &c->group, CallKind::Refund, retry);
}

void onHold(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Worker *>(ev->data);
    /* calls still out past their timeout: held on while serving, let
     * go when exiting */
    if (!ngx_queue_empty(&w->calls) && !ngx_exiting && !ngx_quit) {
        ngx_add_timer(&w->hold, w->holdMs);
    }
}

void onSweep(ngx_event_t *ev) noexcept {
    auto *w = static_cast<Worker *>(ev->data);
    w->sweepAt = 0;
    int64_t next = sweep(w, monotonicUs());
    if (next > 0) {
        sweepBy(w, next);
    }
}

}  // namespace

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf) {
    return static_cast<Worker *>(rmcf->lease_worker);
}

ngx_http_rl_zone_t *zoneOf(Worker *w, uint32_t crc) {
    auto **zones = static_cast<ngx_http_rl_zone_t **>(w->rmcf->zones.elts);
    for (ngx_uint_t i = 0; i < w->rmcf->zones.nelts; i++) {
        if (zones[i]->lease > 0 && zones[i]->lease_crc == crc) {
            return zones[i];
        }
    }
    return nullptr;
}

Call *returnOf(Worker *w, const Lease *l, const int64_t *costs,
               int64_t thenUs) {
    bool any = false;
    for (ngx_uint_t k = 0; k < l->nrules && !any; k++) {
        any = (costs != nullptr ? costs[k] : l->rules[k].units) > 0;
    }
    ngx_http_rl_zone_t *zone = zoneOf(w, l->zoneCrc);
    if (!any || zone == nullptr) {
        return nullptr;     /* nothing held; or a zone no longer here */
    }
    Call *c = makeCall(w, Kind::Return, zone, l->nrules, textBytes(l));
    if (c == nullptr) {
        return nullptr;
    }
    copyText(c, l, bytesOf(c));
    for (ngx_uint_t k = 0; k < l->nrules; k++) {
        int64_t units = costs != nullptr ? costs[k] : l->rules[k].units;
        c->group.costs[k] = units > 0 ? static_cast<uint64_t>(units) : 0;
    }
    c->group.slot = l->slot;
    c->group.now_us = thenUs;   /* what its refund's record says */
    return c;
}

Call *grantOf(Worker *w, const Lease *l, const ngx_str_t &id, uint32_t hash,
              uint64_t ask) {
    ngx_http_rl_zone_t *zone = zoneOf(w, l->zoneCrc);
    if (zone == nullptr) {
        return nullptr;
    }
    Call *c = makeCall(w, Kind::Grant, zone, l->nrules,
                       textBytes(l) + id.len);
    if (c == nullptr) {
        return nullptr;
    }
    u_char *p = copyText(c, l, bytesOf(c));
    c->id = {id.len, p};
    ngx_memcpy(p, id.data, id.len);
    c->hash = hash;
    c->group.slot = l->slot;
    c->group.lease_ask = ask;
    return c;
}

void reserve(Worker *w) {
    if (w->grew) {
        /* blocks of before a larger call was seen: let go */
        w->grew = false;
        ngx_queue_t *q = ngx_queue_head(&w->spare);
        while (q != ngx_queue_sentinel(&w->spare)) {
            ngx_queue_t *next = ngx_queue_next(q);
            Call *c = ngx_queue_data(q, Call, queue);
            if (c->bytes < w->blockBytes) {
                ngx_queue_remove(q);
                w->nspare--;
                ngx_free(c);
            }
            q = next;
        }
    }
    while (w->nspare < Outbox::kSize) {
        auto *c = static_cast<Call *>(ngx_alloc(w->blockBytes, w->log));
        if (c == nullptr) {
            return;     /* a call that finds no block is not made */
        }
        c->bytes = w->blockBytes;
        ngx_queue_insert_tail(&w->spare, &c->queue);
        w->nspare++;
    }
}

void freeCall(Worker *w, Call *c) {
    ngx_queue_remove(&c->queue);
    if (c->bytes >= w->blockBytes && w->nspare < kMaxSpare) {
        ngx_queue_insert_head(&w->spare, &c->queue);
        w->nspare++;
    } else {
        ngx_free(c);
    }
    if (ngx_queue_empty(&w->calls)) {
        stopTimer(&w->hold);
    }
}

void send(Worker *w, Outbox *out) {
    for (ngx_uint_t i = 0; i < out->n; i++) {
        Call *c = out->calls[i];
        bool sent;
        if (c->kind == Kind::Grant) {
            ngx_http_rl_link_t *link = linkOf(w->rmcf, c->zone,
                                              c->group.slot);
            c->group.call = link != nullptr
                                ? ngx_http_rl_link_send(link, &c->group)
                                : nullptr;
            sent = c->group.call != nullptr;
        } else {
            sent = sendReturn(w, c, NGX_HTTP_RL_RETRY_NONE);
            if (sent && w->exiting) {
                /* its reply will not be read: counted as written */
                c->counted = true;
                (void) ngx_atomic_fetch_add(&c->zone->stats->lease_returned,
                                            c->group.costs[0]);
            }
        }
        if (!sent) {
            /* Redis cannot be asked now: a grant is asked again later,
             * what a return held stays counted until its keys end */
            freeCall(w, c);
        }
    }
    out->n = 0;
    /* a worker that exits waits for the replies of the calls out */
    if (!ngx_queue_empty(&w->calls) && !w->hold.timer_set && !w->exiting) {
        ngx_add_timer(&w->hold, w->holdMs);
    }
}

void sweepBy(Worker *w, int64_t at) {
    if (w->sweep.timer_set && w->sweepAt <= at) {
        return;
    }
    int64_t us = at - monotonicUs();
    auto ms = static_cast<ngx_msec_t>(us > 0 ? (us + 999) / 1000 : 0) + 1;
    stopTimer(&w->sweep);
    ngx_add_timer(&w->sweep, ms);
    w->sweepAt = at;
}

}  // namespace lease

void leaseCallDone(ngx_http_rl_group_t *g, const void *reply,
                   int64_t clockUs, const int64_t *limits,
                   int64_t grant) {
    lease::Call *c = lease::callOf(g);
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_rl_module));
    lease::Worker *w = lease::workerOf(rmcf);
    rl_outcome_t out[RL_MAX_RULES];
    unsigned char dry[RL_MAX_RULES] = {0};
    /* no delay= rule is leased (SPEC 6): a delay is no reply of the
     * script's (a grant record's retry goes nowhere: unbounded) */
    rl_reply_bounds_t bounds[RL_MAX_RULES];
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        bounds[k] = {0, INT64_MAX};
    }
    int allowed = 0;
    bool decoded = reply != nullptr && clockUs > 0 &&
                   rl_decode_reply(reply, g->nrules, g->costs, dry, bounds,
                                   &allowed, out) == RL_REPLY_OK;
    if (decoded) {
        for (ngx_uint_t k = 0; k < g->nrules; k++) {
            out[k].limit = limits != nullptr ? limits[k] : 0;
        }
    }
    if (!lease::install(w, c, decoded ? out : nullptr,
                        decoded && allowed ? grant : 0,
                        clockUs - g->age_us)) {
        lease::freeCall(w, c);
    }
}

void leaseRefundDone(ngx_http_rl_group_t *g, int retry) {
    lease::Call *c = lease::callOf(g);
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_rl_module));
    lease::Worker *w = lease::workerOf(rmcf);
    if (retry != NGX_HTTP_RL_RETRY_NONE &&
        retry != NGX_HTTP_RL_REFUND_FAILED && !g->refund_retried) {
        g->refund_retried = 1;
        if (lease::sendReturn(w, c, retry)) {
            return;
        }
    }
    if (retry == NGX_HTTP_RL_RETRY_NONE && !c->counted &&
        c->zone->stats != nullptr) {
        (void) ngx_atomic_fetch_add(&c->zone->stats->lease_returned,
                                    g->costs[0]);
    }
    lease::freeCall(w, c);
}

bool leasesOut(ngx_http_rl_main_conf_t *rmcf) {
    lease::Worker *w = lease::workerOf(rmcf);
    return w != nullptr && !ngx_queue_empty(&w->calls);
}

}  // namespace rl

extern "C" {

ngx_int_t ngx_http_rl_leases_init(ngx_cycle_t *cycle,
                                  ngx_http_rl_main_conf_t *rmcf) noexcept {
    if (rmcf->leases == nullptr) {
        return NGX_OK;
    }
    auto *w = static_cast<rl::lease::Worker *>(
        ngx_pcalloc(cycle->pool, sizeof(rl::lease::Worker)));
    if (w == nullptr) {
        return NGX_ERROR;
    }
    w->rmcf = rmcf;
    w->pool = reinterpret_cast<ngx_slab_pool_t *>(rmcf->leases->shm.addr);
    w->sh = static_cast<rl::lease::Shared *>(w->pool->data);
    w->generation = w->sh->generation;
    w->log = cycle->log;
    ngx_queue_init(&w->calls);
    ngx_queue_init(&w->spare);
    rl::initTimer(&w->sweep, rl::lease::onSweep, w, cycle->log);
    rl::initTimer(&w->hold, rl::lease::onHold, w, cycle->log);
    w->hold.cancelable = 0;
    auto **zones = static_cast<ngx_http_rl_zone_t **>(rmcf->zones.elts);
    size_t prefix = 0;
    for (ngx_uint_t i = 0; i < rmcf->zones.nelts; i++) {
        if (zones[i]->lease > 0 && zones[i]->timeout > w->holdMs) {
            w->holdMs = zones[i]->timeout;
        }
        if (zones[i]->lease > 0 && zones[i]->prefix.len > prefix) {
            prefix = zones[i]->prefix.len;
        }
    }
    w->blockBytes = rl::lease::callBytes(
        rl::lease::kFirstBlockRules,
        rl::lease::kFirstBlockRules *
            (prefix + RL_STATE_KEY_MAX + rl::lease::kFirstBlockText));
    rmcf->lease_worker = w;
    /* what an exited worker of this generation left (a crash): at its
     * end, like any other */
    rl::lease::sweepBy(w, rl::monotonicUs());
    return NGX_OK;
}

void ngx_http_rl_leases_exit(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::lease::Worker *w = rl::lease::workerOf(rmcf);
    if (w == nullptr) {
        return;
    }
    rl::stopTimer(&w->sweep);
    rl::stopTimer(&w->hold);
    w->exiting = true;
    ngx_log_error(NGX_LOG_INFO, w->log, 0,
                  "rl: lease table: this worker took a stripe's lock %uL "
                  "times, %uL of them after another worker let go",
                  w->locks, w->waits);
    rl::lease::returnGeneration(w);
    /* no turn of the event loop is left: what the returns wrote goes
     * now (Redis runs what it read before the connection closed) */
    ngx_http_rl_stores_write(rmcf);
}

void ngx_http_rl_leases_free(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::lease::Worker *w = rl::lease::workerOf(rmcf);
    if (w == nullptr) {
        return;
    }
    while (!ngx_queue_empty(&w->calls)) {
        ngx_queue_t *q = ngx_queue_head(&w->calls);
        rl::lease::freeCall(w, ngx_queue_data(q, rl::lease::Call, queue));
    }
    while (!ngx_queue_empty(&w->spare)) {
        ngx_queue_t *q = ngx_queue_head(&w->spare);
        ngx_queue_remove(q);
        ngx_free(ngx_queue_data(q, rl::lease::Call, queue));
    }
    rmcf->lease_worker = nullptr;
}

}  // extern "C"
