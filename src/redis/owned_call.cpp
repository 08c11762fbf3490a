/*
 * owned_call.cpp: a worker's own calls (see owned_call.hpp): made from a
 * request's group, sent with the others of their kind, sent again once
 * where the reply says, or after a back-off when the call did not run.
 */

#include "owned_call.hpp"

#include "clock.hpp"
#include "link.hpp"

namespace rl {
namespace {

/* between two tries of a call that did not run (TRYAGAIN) */
constexpr ngx_msec_t kBackoffMs = 100;

/* nginx stops the worker gracefully: it waits while calls are out,
 * a window from the last sent */
void keepIfExiting(Owner *o) {
    if ((ngx_exiting || ngx_quit) && !o->exiting &&
        !ngx_queue_empty(&o->out)) {
        ngx_add_timer(&o->keep,
                      static_cast<ngx_msec_t>((o->windowUs + 999) / 1000));
    }
}

/* Off the owner's waiting list, if on it. */
void unwait(OwnedCall *c) {
    if (c->waiting) {
        c->waiting = false;
        ngx_queue_remove(&c->later);
        if (ngx_queue_empty(&c->owner->later)) {
            stopTimer(&c->owner->retry);
        }
    }
}

/* Again, with the others of its kind of this turn, where the map says
 * now (a MOVED or an ASK on the way is followed once more). */
bool sendAgain(OwnedCall *c) {
    bool sent = sendOwned(c->owner->rmcf, &c->group, c->kind,
                          NGX_HTTP_RL_RETRY_NONE);
    if (sent) {
        keepIfExiting(c->owner);
    }
    return sent;
}

}  // namespace

/* In a back-off, while its window lasts. */
bool waitOwned(OwnedCall *c) {
    Owner *o = c->owner;
    if (o->exiting || monotonicUs() + static_cast<int64_t>(kBackoffMs) * 1000 >
                          c->untilUs) {
        return false;
    }
    c->waiting = true;
    c->dueMs = ngx_current_msec + kBackoffMs;
    ngx_queue_insert_tail(&o->later, &c->later);    /* due in order */
    if (!o->retry.timer_set) {
        ngx_add_timer(&o->retry, kBackoffMs);
    }
    keepIfExiting(o);
    return true;
}

namespace {

/* The calls due go again; one that cannot (Redis down) is done (its
 * owner may make it wait again: waitOwned()). */
void onRetry(ngx_event_t *ev) noexcept {
    auto *o = static_cast<Owner *>(ev->data);
    while (!ngx_queue_empty(&o->later)) {
        OwnedCall *c = ngx_queue_data(ngx_queue_head(&o->later), OwnedCall,
                                      later);
        auto wait = static_cast<ngx_msec_int_t>(c->dueMs - ngx_current_msec);
        if (wait > 0) {
            ngx_add_timer(&o->retry, static_cast<ngx_msec_t>(wait));
            return;
        }
        unwait(c);
        if (!sendAgain(c)) {
            c->group.owned_done(&c->group, NGX_HTTP_RL_REFUND_LOST);
        }
    }
}

/* Its window: a worker that exits has waited long enough. */
void onKeep(ngx_event_t *) noexcept {}

}  // namespace

void initOwner(Owner *o, ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log,
               int64_t windowUs) {
    o->rmcf = rmcf;
    o->log = log;
    o->windowUs = windowUs;
    ngx_queue_init(&o->out);
    ngx_queue_init(&o->later);
    initTimer(&o->retry, onRetry, o, log);
    initTimer(&o->keep, onKeep, o, log);
    o->retry.cancelable = 0;
    o->keep.cancelable = 0;
}

OwnedCall *makeOwned(size_t size, const ngx_http_rl_group_t *g,
                     const ngx_uint_t *rules, ngx_uint_t n,
                     void (*done)(ngx_http_rl_group_t *, int), Owner *owner) {
    ngx_http_rl_ctx_t *ctx = g->ctx;
    auto *all = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    const ngx_str_t &prefix = g->zone->prefix;
    size = ngx_align(size, sizeof(void *));
    size_t block = size +
                   n * (sizeof(ngx_str_t) + sizeof(ngx_str_t *) +
                        sizeof(uint64_t) + 3 * sizeof(int64_t) +
                        sizeof(ngx_http_rl_rule_t *) + prefix.len +
                        RL_STATE_KEY_MAX);
    auto *c = static_cast<OwnedCall *>(ngx_alloc(block, owner->log));
    if (c == nullptr) {
        return nullptr;
    }
    ngx_memzero(c, size);
    auto *keys = reinterpret_cast<ngx_str_t *>(
        reinterpret_cast<u_char *>(c) + size);
    auto **specs = reinterpret_cast<ngx_str_t **>(keys + n);
    auto *costs = reinterpret_cast<uint64_t *>(specs + n);
    auto *bounds = reinterpret_cast<int64_t *>(costs + n);
    c->rules = reinterpret_cast<ngx_http_rl_rule_t **>(bounds + 3 * n);
    auto *text = reinterpret_cast<char *>(c->rules + n);
    for (ngx_uint_t k = 0; k < n; k++) {
        ngx_http_rl_rule_t *rule = &all[rules[k]];
        const ngx_str_t &v = ctx->values[rules[k]];
        char *end = rl_state_key_write(
            text, reinterpret_cast<char *>(prefix.data), prefix.len,
            reinterpret_cast<char *>(v.data), v.len, rule->id);
        keys[k] = {static_cast<size_t>(end - text),
                   reinterpret_cast<u_char *>(text)};
        text = end;
        specs[k] = &rule->spec;
        costs[k] = 0;
        c->rules[k] = rule;
        /* a calendar rule: the request's period (a charge at its end
         * falls in it, or in the next one: the bounds hold both) */
        for (ngx_uint_t j = 0; j < g->nrules; j++) {
            if (g->rules[j] == rules[k] && ((g->calendar >> j) & 1)) {
                ngx_memcpy(&bounds[3 * k], &g->bounds[3 * j],
                           3 * sizeof(int64_t));
                c->group.calendar |= uint64_t(1) << k;
            }
        }
    }
    c->group.bounds = bounds;
    c->group.zone = g->zone;
    c->group.slot = g->slot;
    c->group.nrules = n;
    c->group.keys = keys;
    c->group.specs = specs;
    c->group.costs = costs;
    c->group.slot_id = g->slot_id;
    c->group.owned_done = done;
    c->owner = owner;
    return c;
}

ngx_http_rl_link_t *linkOf(ngx_http_rl_main_conf_t *rmcf,
                           const ngx_http_rl_zone_t *zone, ngx_uint_t slot) {
    ngx_http_rl_store_t *store = rmcf->stores != nullptr
                                     ? rmcf->stores[zone->index]
                                     : nullptr;
    return store != nullptr ? ngx_http_rl_store_route(store, slot) : nullptr;
}

bool sendOwned(ngx_http_rl_main_conf_t *rmcf, ngx_http_rl_group_t *g,
               CallKind kind, int retry) {
    if (retry == NGX_HTTP_RL_RETRY_NONE) {
        g->refund_retried = 0;
        auto *link = reinterpret_cast<Link *>(linkOf(rmcf, g->zone, g->slot));
        Call *queued = link != nullptr ? link->queue(g, kind) : nullptr;
        g->call = reinterpret_cast<ngx_http_rl_call_t *>(queued);
        return queued != nullptr;
    }
    bool asking = retry == NGX_HTTP_RL_RETRY_ASK;
    auto *link = reinterpret_cast<Link *>(
        asking ? g->ask : linkOf(rmcf, g->zone, g->slot));
    if (link == nullptr) {
        return false;
    }
    Call *sent = sendRefund(link, g, asking, retry == NGX_HTTP_RL_RETRY_EVAL,
                            g->now_us, g->costs, kind);
    g->call = reinterpret_cast<ngx_http_rl_call_t *>(sent);
    return sent != nullptr;
}

bool sendOwned(OwnedCall *c, CallKind kind) {
    c->kind = kind;
    /* a renewal's or a charge's time: when it first leaves (t = -its
     * wait), sent again or not */
    c->group.sent_us = monotonicUs();
    c->untilUs = c->group.sent_us + c->owner->windowUs;
    unwait(c);
    return sendAgain(c);
}

bool retryOwned(OwnedCall *c, int retry) {
    ngx_http_rl_group_t *g = &c->group;
    if (retry == NGX_HTTP_RL_RETRY_LATER) {
        return waitOwned(c);
    }
    if (retry == NGX_HTTP_RL_RETRY_NONE ||
        retry == NGX_HTTP_RL_REFUND_FAILED ||
        retry == NGX_HTTP_RL_REFUND_LOST || g->refund_retried) {
        return false;
    }
    g->refund_retried = 1;
    return sendOwned(c->owner->rmcf, g, c->kind, retry);
}

void freeOwned(OwnedCall *c) {
    Owner *o = c->owner;
    ngx_queue_remove(&c->queue);
    unwait(c);
    ngx_free(c);
    if (ngx_queue_empty(&o->out)) {
        stopTimer(&o->keep);    /* nothing out: the worker may exit */
    }
}

bool ownerExit(Owner *o) {
    o->exiting = true;
    stopTimer(&o->retry);
    stopTimer(&o->keep);
    bool any = !ngx_queue_empty(&o->later);
    while (!ngx_queue_empty(&o->later)) {
        OwnedCall *c = ngx_queue_data(ngx_queue_head(&o->later), OwnedCall,
                                      later);
        unwait(c);
        if (!sendAgain(c)) {
            c->group.owned_done(&c->group, NGX_HTTP_RL_REFUND_FAILED);
        }
    }
    return any;
}

}  // namespace rl
