/*
 * request.cpp: deciding one request. Its rules are grouped by zone (in a
 * cluster, by slot), and a decision takes this order:
 *   1. what this instance answers alone: the deny cache (denied()), the
 *      embedded zones, failure=local zones whose Redis is known down,
 *      then leases (decideHere());
 *   2. Redis: each group left is one script call (askRedis()); the
 *      request is parked (NGX_AGAIN) until every group has answered or
 *      its zone's timeout passed (wake(), expire());
 *   3. settling: the groups' answers make the decision, what a rejected
 *      request counted is given back (finish()), the request waits for
 *      those refunds and for a delay= (settle()), then its phases run
 *      again and the handler returns the decision;
 *   4. the end (its log phase, ngx_http_rl_request_end()): its charges
 *      (charges.hpp), and the slots of its concurrency= rules released
 *      (inflight.hpp), which its pool's cleanup does too if the log
 *      phase never came.
 * Everything lives in the request's pool; a pool cleanup detaches calls
 * still in flight.
 */

#include "ngx.hpp"

#include <type_traits>

#include "redis/batch.hpp"
#include "charges.hpp"
#include "clock.hpp"
#include "core/cluster.hpp"
#include "core/script.hpp"
#include "adaptive.hpp"
#include "told.hpp"
#include "inflight.hpp"
#include "shm/lease.hpp"
#include "shm/live.hpp"
#include "fleet/trials.hpp"

static_assert(std::is_trivially_destructible<ngx_http_rl_ctx_t>::value,
              "the request context lives in r->pool");

namespace {

void cleanupCtx(void *data) noexcept;
void wake(ngx_event_t *ev) noexcept;

/* The connection that serves the group's zone (its slot, in a
 * cluster), or NULL. */
ngx_http_rl_link_t *linkFor(ngx_http_request_t *r,
                            const ngx_http_rl_group_t *g) {
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
    return rmcf->stores != nullptr && rmcf->stores[g->zone->index] != nullptr
               ? ngx_http_rl_store_route(rmcf->stores[g->zone->index],
                                         g->slot)
               : nullptr;
}

/* The context and its per-rule arrays are one block of the request's
 * pool, zeroed once: a request pays one allocation, not six. */
ngx_http_rl_ctx_t *createCtx(ngx_http_request_t *r,
                             ngx_http_rl_loc_conf_t *lcf) {
    static_assert(sizeof(ngx_http_rl_ctx_t) % alignof(rl_outcome_t) == 0 &&
                      sizeof(rl_outcome_t) % alignof(ngx_http_rl_group_t) ==
                          0 &&
                      sizeof(ngx_http_rl_group_t) % alignof(ngx_str_t) == 0 &&
                      sizeof(ngx_str_t) % alignof(uint64_t) == 0,
                  "each array of the block starts aligned");
    ngx_uint_t n = lcf->rules->nelts;
    size_t size = sizeof(ngx_http_rl_ctx_t) +
                  n * (sizeof(rl_outcome_t) + sizeof(ngx_http_rl_group_t) +
                       sizeof(ngx_str_t) + sizeof(uint64_t) + 1);
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(r->pool, size);
    if (cln == nullptr) {
        return nullptr;
    }
    ngx_memzero(cln->data, size);
    cln->handler = cleanupCtx;

    auto *ctx = static_cast<ngx_http_rl_ctx_t *>(cln->data);
    ctx->outcomes = reinterpret_cast<rl_outcome_t *>(ctx + 1);
    ctx->groups = reinterpret_cast<ngx_http_rl_group_t *>(ctx->outcomes + n);
    ctx->values = reinterpret_cast<ngx_str_t *>(ctx->groups + n);
    ctx->costs = reinterpret_cast<uint64_t *>(ctx->values + n);
    ctx->decided = reinterpret_cast<u_char *>(ctx->costs + n);
    ctx->r = r;
    ctx->lcf = lcf;
    ctx->binding = -1;
    ctx->rc = NGX_DECLINED;
    ctx->wake.handler = wake;
    ctx->wake.data = ctx;
    ctx->wake.log = r->connection->log;
    ngx_http_set_ctx(r, ctx, ngx_http_rl_module);
    return ctx;
}

/* What one group's script call needs per rule: its state key, spec and
 * cost (src/redis/batch.cpp writes the call). */
ngx_int_t buildCall(ngx_http_request_t *r, ngx_http_rl_group_t *g,
                    const ngx_str_t *values) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(
        g->ctx->lcf->rules->elts);
    ngx_uint_t n = g->nrules;
    ngx_uint_t records = ngx_http_rl_records(g);
    ngx_pool_t *p = r->pool;

    g->keys = static_cast<ngx_str_t *>(
        ngx_palloc(p, records * sizeof(ngx_str_t)));
    g->specs = static_cast<ngx_str_t **>(
        ngx_palloc(p, records * sizeof(ngx_str_t *)));
    g->costs = static_cast<uint64_t *>(
        ngx_palloc(p, records * sizeof(uint64_t)));
    if (g->keys == nullptr || g->specs == nullptr || g->costs == nullptr) {
        return NGX_ERROR;
    }

    ngx_str_t *prefix = &g->zone->prefix;
    for (ngx_uint_t k = 0; k < n; k++) {
        ngx_http_rl_rule_t *rule = &rules[g->rules[k]];
        const ngx_str_t *v = &values[g->rules[k]];
        auto *value = reinterpret_cast<const char *>(v->data);
        /* room for the longest: one pass over the value, not two */
        auto *key = static_cast<char *>(
            ngx_pnalloc(p, prefix->len + RL_STATE_KEY_MAX));
        if (key == nullptr) {
            return NGX_ERROR;
        }
        char *end = rl_state_key_write(key,
                                       reinterpret_cast<char *>(prefix->data),
                                       prefix->len, value, v->len, rule->id);
        g->keys[k].data = reinterpret_cast<u_char *>(key);
        g->keys[k].len = static_cast<size_t>(end - key);
        /* its own spec, or its live limit's (SPEC section 11), or an
         * auto rule's at its request's level (SPEC 13) */
        g->specs[k] = const_cast<ngx_str_t *>(rl::adaptive::specOf(
            g->ctx, g->rules[k], rule, ngx_http_rl_dry_run(g->ctx, rule)));
        g->costs[k] = g->ctx->costs[g->rules[k]];
    }
    return rl::trials::build(r, g, n) ? NGX_OK : NGX_ERROR;
}

/* A rule's cost for this request: cost=$variable gives a whole number
 * of at least 1; anything else counts as 1. */
uint64_t costOf(ngx_http_request_t *r, ngx_http_rl_rule_t *rule) {
    if (rule->cost_cv == nullptr) {
        return rule->cost;
    }
    ngx_str_t v;
    if (ngx_http_complex_value(r, rule->cost_cv, &v) != NGX_OK) {
        return 1;
    }
    ngx_int_t n = ngx_atoi(v.data, v.len);
    if (n < 1 || n > NGX_HTTP_RL_MAX_COST) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "rl: cost \"%V\" of rule \"%V\" counts as 1", &v,
                      &rule->name);
        return 1;
    }
    return static_cast<uint64_t>(n);
}

/* A calendar rule's bounds for the request (SPEC section 12): the period
 * its zone's clock (nginx's, the embedded store's) is in, the next's
 * end; the script picks among them on Redis' clock. False when out of
 * memory. */
bool calendarBounds(ngx_http_request_t *r, ngx_http_rl_group_t *g,
                    ngx_http_rl_rule_t *rule, ngx_uint_t k, ngx_uint_t n) {
    if (g->bounds == nullptr) {
        g->bounds = static_cast<int64_t *>(
            ngx_palloc(r->pool, 3 * n * sizeof(int64_t)));
        if (g->bounds == nullptr) {
            return false;
        }
    }
    ngx_http_rl_calendar_bounds(r, rule, ngx_http_rl_calendar_now(g->zone),
                                &g->bounds[3 * k]);
    g->calendar |= uint64_t(1) << k;
    return true;
}

/* Groups the rules with a non-empty key by zone, and in a cluster by
 * the slot of their key value (a script call's keys share a slot); a
 * concurrency rule's slot is named by the request's slot id, a calendar
 * rule's period by its bounds. */
ngx_int_t groupRules(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx,
                     ngx_str_t *values) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_uint_t n = ctx->lcf->rules->nelts;
    uint64_t slot_id = 0;

    for (ngx_uint_t i = 0; i < n; i++) {
        if (ngx_http_complex_value(r, &rules[i].key, &values[i]) != NGX_OK) {
            return NGX_ERROR;
        }
        if (values[i].len == 0) {
            continue; /* an empty key exempts the request from the rule */
        }
        ctx->costs[i] = costOf(r, &rules[i]);
        if (rules[i].adaptive != nullptr && !rl::adaptive::leveled(ctx, i)) {
            return NGX_ERROR;   /* (its priority's level, SPEC 13) */
        }
        ngx_http_rl_zone_t *zone = rules[i].zone;
        ngx_uint_t slot = 0;
        if (zone->nseeds > 0) {
            slot = rl::valueSlot(
                {reinterpret_cast<char *>(values[i].data), values[i].len});
        }
        ngx_uint_t g = 0;
        while (g < ctx->ngroups && (ctx->groups[g].zone != zone ||
                                    ctx->groups[g].slot != slot)) {
            g++;
        }
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (g == ctx->ngroups) {
            ctx->ngroups++;
            group->zone = zone;
            group->slot = slot;
            group->ctx = ctx;
            group->rules = static_cast<ngx_uint_t *>(
                ngx_palloc(r->pool, n * sizeof(ngx_uint_t)));
            if (group->rules == nullptr) {
                return NGX_ERROR;
            }
        }
        if (rules[i].algorithm == RL_ALGORITHM_CONCURRENCY) {
            if (slot_id == 0) {
                slot_id = rl::slotId(static_cast<ngx_http_rl_main_conf_t *>(
                    ngx_http_get_module_main_conf(r, ngx_http_rl_module)));
            }
            group->held |= uint64_t(1) << group->nrules;
            group->slot_id = slot_id;
        }
        if (rules[i].calendar != nullptr &&
            !calendarBounds(r, group, &rules[i], group->nrules, n)) {
            return NGX_ERROR;
        }
        group->rules[group->nrules++] = i;
    }
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        if (!rl::trials::add(r, &ctx->groups[g])) {
            return NGX_ERROR;
        }
    }
    return NGX_OK;
}

/* The request was rejected: give back what this group counted (all of
 * it if another zone rejected it; a trial's count whose world rejected
 * it: trials.hpp), so a rejected request consumes nothing in any rule.
 * The embedded store gives it back at once; the answer to a Redis
 * refund is awaited (settle()), so the client's next request finds
 * nothing counted, on whichever worker and connection it lands: g->call
 * is the refund in flight, which the caller counts in ctx->pending. */
void refund(ngx_http_rl_ctx_t *ctx, ngx_http_rl_group_t *g,
            int retry = NGX_HTTP_RL_RETRY_NONE) {
    /* at the decision's time; a dry-run rule (a trial) that did not
     * count it: nothing to give */
    uint64_t costs[RL_MAX_RULES];
    if (!rl::trials::owed(ctx, g, costs)) {
        return;
    }
    if (ngx_http_rl_embedded(g->zone) || g->local) {
        ngx_http_rl_shm_refund(g, costs);
        return;
    }
    if (g->leased) {
        rl::leaseUnspend(g);
        return;
    }
    bool asking = retry == NGX_HTTP_RL_RETRY_ASK;
    ngx_http_rl_link_t *link = asking ? g->ask : linkFor(ctx->r, g);
    if (link == nullptr) {
        return;
    }
    g->call = reinterpret_cast<ngx_http_rl_call_t *>(rl::sendRefund(
        reinterpret_cast<rl::Link *>(link), g, asking,
        retry == NGX_HTTP_RL_RETRY_EVAL, g->now_us, costs));
}

/* Rules the deny cache can answer for: Redis zones, enforced, of a
 * constant cost, rate rules running no trial (which decides each
 * request). Not an in-flight rule: a slot freed anywhere must be open
 * to the next request at once (SPEC 9). */
bool cacheable(ngx_http_rl_ctx_t *ctx, const ngx_http_rl_group_t *g,
               const ngx_http_rl_rule_t *rule) {
    return !ngx_http_rl_embedded(g->zone) && rule->cost_cv == nullptr &&
           rule->algorithm != RL_ALGORITHM_CONCURRENCY &&
           !ngx_http_rl_dry_run(ctx, rule) && !rl::live::trialOf(rule);
}

ngx_shm_zone_t *denyZone(ngx_http_request_t *r) {
    auto *rmcf = static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
    return rmcf->deny;
}

/* The zone's store could not answer for the group (Redis down, timed
 * out, a bad reply; the embedded store out of room): failure=local
 * decides it in this instance's memory (the request gets that decision,
 * its figures and headers, as from the embedded store); else, or when
 * that store has no room either, the group is an error and gets the
 * failure policy. (An embedded zone is never failure=local.) */
void failed(ngx_http_rl_group_t *group) {
    group->done = 1;
    if (group->zone->failure == NGX_HTTP_RL_FAILURE_LOCAL &&
        ngx_http_rl_shm_decide(group) == NGX_OK) {
        group->local = 1;
        if (group->zone->stats != nullptr) {
            (void) ngx_atomic_fetch_add(&group->zone->stats->local, 1);
        }
        return;
    }
    group->error = 1;
}

/* Another group rejected the request before this one was asked (the
 * deny cache, an embedded zone): nothing to decide, nothing to refund. */
void skip(ngx_http_rl_group_t *group) {
    group->done = 1;
    group->skipped = 1;
    group->allowed = 1;
}

/* A rule Redis rejected this key for lately: the request is rejected at
 * once, and no store is asked (a rejected request consumes nothing). */
bool denied(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx) {
    ngx_shm_zone_t *deny = denyZone(r);
    if (deny == nullptr) {
        return false;
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    bool hit = false;
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->done) {
            continue;   /* a lease answered for it */
        }
        for (ngx_uint_t k = 0; k < group->nrules; k++) {
            ngx_uint_t i = group->rules[k];
            if (cacheable(ctx, group, &rules[i]) &&
                ngx_http_rl_deny_lookup(deny, &rules[i], &ctx->values[i],
                                        &ctx->outcomes[i])) {
                ctx->decided[i] = 1;
                group->done = 1;
                group->allowed = 0;
                hit = true;
            }
        }
        if (group->done && group->zone->stats != nullptr) {
            (void) ngx_atomic_fetch_add(
                &group->zone->stats->deny_cache_hits, 1);
        }
    }
    if (hit) {
        for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
            ngx_http_rl_group_t *group = &ctx->groups[g];
            if (!group->done) {
                skip(group);
            }
        }
    }
    return hit;
}

/* Redis rejected the request: remember until when, for every worker. */
void rememberRejection(ngx_http_rl_ctx_t *ctx, ngx_http_rl_group_t *g) {
    ngx_shm_zone_t *deny = denyZone(ctx->r);
    if (deny == nullptr) {
        return;
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        if (ctx->outcomes[i].retry_ms > 0 && cacheable(ctx, g, &rules[i])) {
            ngx_http_rl_deny_insert(deny, &rules[i], &ctx->values[i],
                                    &ctx->outcomes[i], g->sent_us);
        }
    }
}

/* The binding rule: on a rejection, of the enforced rules that rejected;
 * else of all that decided. -1 if none decided. */
ngx_int_t binding(ngx_http_rl_ctx_t *ctx, bool rejected) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_uint_t n = ctx->lcf->rules->nelts;
    rl_outcome_t decided[RL_MAX_RULES];
    ngx_uint_t index[RL_MAX_RULES];
    size_t m = 0;
    for (ngx_uint_t i = 0; i < n; i++) {
        if (ctx->decided[i] &&
            (!rejected ||
             (ctx->outcomes[i].retry_ms > 0 &&
              !ngx_http_rl_dry_run(ctx, &rules[i])))) {
            decided[m] = ctx->outcomes[i];
            index[m++] = i;
        }
    }
    if (m == 0) {
        return -1;
    }
    return static_cast<ngx_int_t>(
        index[rl_binding_rule(decided, m, rejected ? 0 : 1)]);
}

/* The dry-run rule that would have rejected the request and freed
 * capacity last, or -1. */
ngx_int_t dryRejection(ngx_http_rl_ctx_t *ctx) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_int_t found = -1;
    for (ngx_uint_t i = 0; i < ctx->lcf->rules->nelts; i++) {
        if (ctx->decided[i] && ctx->outcomes[i].retry_ms > 0 &&
            ngx_http_rl_dry_run(ctx, &rules[i]) &&
            (found < 0 ||
             ctx->outcomes[i].retry_ms > ctx->outcomes[found].retry_ms)) {
            found = static_cast<ngx_int_t>(i);
        }
    }
    return found;
}

/* rl_lease_units_total{use="spent"}: what an admitted request took
 * from leases (in their first rule's units, as they are counted). */
void leaseSpent(ngx_http_rl_ctx_t *ctx) {
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->leased && group->zone->stats != nullptr) {
            (void) ngx_atomic_fetch_add(&group->zone->stats->lease_spent,
                                        ctx->costs[group->rules[0]]);
        }
    }
}

/* Combines the groups' answers into the request's decision. */
void finish(ngx_http_rl_ctx_t *ctx) {
    bool rejected = false, error = false, closed = false;
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->error) {
            error = true;
            closed = closed ||
                     group->zone->failure == NGX_HTTP_RL_FAILURE_CLOSED;
        } else if (!group->allowed) {
            rejected = true;
        }
    }

    ctx->finished = 1;
    ctx->binding = binding(ctx, rejected);
    ngx_uint_t level = ctx->lcf->log_level;

    if (rejected || closed) {
        for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
            ngx_http_rl_group_t *group = &ctx->groups[g];
            if (!group->error && !group->skipped) {
                refund(ctx, group);
                if (group->call != nullptr) {
                    ctx->pending++;
                }
            }
        }
    } else {
        leaseSpent(ctx);
    }

    ngx_int_t dry = dryRejection(ctx);
    if (rejected) {
        ctx->status = NGX_HTTP_RL_STATUS_REJECTED;
        ctx->rc = rl::adaptive::status(ctx, true);
        rl::logDecision(ctx, ctx->binding, "request rejected", level);
    } else if (error) {
        /* what the other zones said is not the request's decision: no
         * headers, no variables (and their counts are given back) */
        ctx->status = NGX_HTTP_RL_STATUS_ERROR;
        ctx->rc = closed ? rl::adaptive::status(ctx, false) : NGX_DECLINED;
        ctx->binding = -1;
    } else {
        ctx->status = ctx->ngroups ? NGX_HTTP_RL_STATUS_PASSED
                                   : NGX_HTTP_RL_STATUS_NONE;
        ctx->rc = NGX_DECLINED;
        ngx_int_t slowest = -1;
        for (ngx_uint_t i = 0; i < ctx->lcf->rules->nelts; i++) {
            auto ms = static_cast<ngx_msec_t>(ctx->outcomes[i].delay_ms);
            if (ctx->decided[i] && ms > ctx->delay) {
                ctx->delay = ms;
                slowest = static_cast<ngx_int_t>(i);
            }
        }
        if (dry >= 0) {
            ctx->status = NGX_HTTP_RL_STATUS_DRY_RUN;
        } else if (ctx->delay > 0) {
            ctx->status = NGX_HTTP_RL_STATUS_DELAYED;
        }
        if (dry >= 0) {
            rl::logDecision(ctx, dry, "dry run: request would be rejected",
                        level);
        }
        if (slowest >= 0) {
            /* as limit_req: one level less severe, info stays info */
            rl::logDecision(ctx, slowest, nullptr,
                        level == NGX_LOG_INFO ? level : level + 1);
        }
    }
    rl::count(ctx);
    if (ctx->rc == NGX_DECLINED) {
        rl::inflightHold(ctx);  /* its slots, until it ends */
    }
}

/* delay= shapes an admitted request: it waits on a timer, the worker
 * serves others meanwhile. A timer counts from the time nginx cached
 * when this turn of its loop began: a turn that took long (a busy host)
 * would wake a delayed request early by as much, so a delay counts from
 * the time read now. */
ngx_int_t park(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx,
               ngx_msec_t timeout) {
    ctx->waiting = 1;
    if (ctx->delaying) {
        ngx_time_update();
    }
    ngx_add_timer(&ctx->wake, timeout);
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;
    return NGX_AGAIN;
}

/* After finish(): waits for the refunds it sent, then for a delay=. */
ngx_int_t settle(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx) {
    if (ctx->pending > 0) {
        ngx_msec_t timeout = 0;
        for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
            const ngx_http_rl_group_t *group = &ctx->groups[g];
            if (group->call != nullptr && group->zone->timeout > timeout) {
                timeout = group->zone->timeout;
            }
        }
        ctx->refunding = 1;
        return park(r, ctx, timeout);
    }
    if (ctx->delay > 0 && ctx->rc == NGX_DECLINED) {
        ctx->delaying = 1;
        return park(r, ctx, ctx->delay);
    }
    return ctx->rc;
}

/* A call of the request was answered: the last one wakes it. */
void answered(ngx_http_rl_ctx_t *ctx) {
    if (--ctx->pending == 0 && ctx->waiting) {
        if (ctx->wake.timer_set) {
            ngx_del_timer(&ctx->wake);
        }
        ngx_post_event(&ctx->wake, &ngx_posted_events);
    }
}

/* Stops waiting for the calls still out. */
void letGo(ngx_http_rl_ctx_t *ctx) {
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->call != nullptr) {
            ngx_http_rl_call_detach(group->call);
            group->call = nullptr;
        }
    }
    ctx->pending = 0;
}

/* Each zone's timeout=, from when its call left: the decisions still
 * out whose zone's has passed get the failure policy (counted, their
 * links told); returns the ms until the next one's, 0 if none is out. */
ngx_msec_t expire(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx) {
    int64_t now = rl::monotonicUs();
    ngx_msec_t next = 0;
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->call == nullptr) {
            continue;
        }
        int64_t left = group->sent_us
                       + static_cast<int64_t>(group->zone->timeout) * 1000
                       - now;
        if (left >= 1000) {     /* nginx's timers count whole ms */
            auto ms = static_cast<ngx_msec_t>((left + 999) / 1000);
            next = next == 0 || ms < next ? ms : next;
            continue;
        }
        /* its link is told: the one it went on; slots it may take late
         * are released after it */
        if (group->held != 0) {
            rl::inflightAbandon(group);
        }
        ngx_http_rl_call_timed_out(group->call);
        group->call = nullptr;
        failed(group);
        ctx->pending--;
        if (group->zone->stats != nullptr) {
            (void) ngx_atomic_fetch_add(&group->zone->stats->timeouts, 1);
        }
    }
    return next;
}

void resume(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx) {
    /* the phases may finish the request, and free it with its pool
     * (as nginx's own event handlers, keep the connection first) */
    ngx_connection_t *c = r->connection;
    ctx->waiting = 0;
    ctx->resumed = 1;
    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
    ngx_http_run_posted_requests(c);
}

void wake(ngx_event_t *ev) noexcept {
    auto *ctx = static_cast<ngx_http_rl_ctx_t *>(ev->data);
    ngx_http_request_t *r = ctx->r;

    if (ctx->delaying) {
        ev->timedout = 0;
        ctx->delaying = 0;
        ctx->delay = 0;
        resume(r, ctx);
        return;
    }

    if (ctx->refunding) {
        /* the refunds were answered, or the zone's timeout passed (the
         * response goes; a late refund still counts when it lands) */
        ev->timedout = 0;
        ctx->refunding = 0;
        letGo(ctx);
        resume(r, ctx);
        return;
    }

    if (ev->timedout) {
        ev->timedout = 0;
        ngx_msec_t next = expire(r, ctx);
        if (next > 0) {
            ngx_add_timer(&ctx->wake, next);    /* another zone's */
            return;
        }
    }

    finish(ctx);
    ctx->waiting = 0;
    if (settle(r, ctx) == NGX_AGAIN) {
        return;
    }
    resume(r, ctx);
}

/* What this instance decides alone: first what its leases hold (the
 * capacity Redis counted for it: spent even where Redis rejected the key
 * lately); then the deny cache; then the embedded zones, and the
 * failure=local zones whose Redis is known down. A request they reject
 * costs the zones that are up neither a decision nor a refund, whatever
 * the order of the rules (what a lease gave, it takes back). Returns
 * whether one rejected it. */
bool decideHere(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx) {
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (rl::leasable(group)) {
            (void) rl::leaseSpend(group);
        }
    }
    if (denied(r, ctx)) {
        return true;
    }
    bool rejected = false;
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->done) {
            continue;
        }
        if (ngx_http_rl_embedded(group->zone)) {
            if (ngx_http_rl_shm_decide(group) != NGX_OK) {
                failed(group);
            }
        } else if (group->zone->failure == NGX_HTTP_RL_FAILURE_LOCAL) {
            ngx_http_rl_link_t *link = linkFor(r, group);
            if (link != nullptr && ngx_http_rl_link_usable(link)) {
                continue;
            }
            failed(group);
        } else {
            continue;
        }
        if (!group->error && !group->allowed) {
            rejected = true;
        }
    }
    return rejected;
}

/* The groups left go to Redis (after a rejection, nowhere): *timeout
 * is the first of their zones' timeouts to pass, 0 if no call is out;
 * false when out of memory. */
bool askRedis(ngx_http_request_t *r, ngx_http_rl_ctx_t *ctx, bool rejected,
              ngx_msec_t *timeout) {
    *timeout = 0;
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->done) {
            continue;
        }
        if (rejected) {
            skip(group);
            continue;
        }
        ngx_http_rl_link_t *link = linkFor(r, group);
        if (link != nullptr && ngx_http_rl_link_usable(link)) {
            if (buildCall(r, group, ctx->values) != NGX_OK) {
                return false;
            }
            group->sent_us = rl::monotonicUs();
            group->call = ngx_http_rl_link_send(link, group);
        }
        if (group->call == nullptr) {
            failed(group); /* known down: the failure policy, at once */
            if (!group->error && !group->allowed) {
                rejected = true;    /* the groups after it need not ask */
            }
            continue;
        }
        if (group->lease_want > 0) {
            rl::leaseAsk(group, link);  /* behind it, in its batch */
        }
        ctx->pending++;
        if (*timeout == 0 || group->zone->timeout < *timeout) {
            *timeout = group->zone->timeout;    /* the first to pass */
        }
    }
    return true;
}

/* What a reply may ask of a request of this cost under the rule, at
 * the larger of its N and its live limit (which may move between a call
 * and its reply): a longer delay or retry is not the script's. Charges
 * (charge=) may leave a key in debt, freed as slowly as the rule
 * refills. */
void replyBounds(const ngx_http_rl_rule_t *rule, uint64_t cost,
                 rl_reply_bounds_t *out) {
    uint64_t n = rl::live::limitOf(rule);
    n = n > rule->limit ? n : rule->limit;
    rl_reply_bounds(static_cast<int>(rule->algorithm), n, rule->window_us,
                    rule->burst_follows ? n : rule->burst, rule->delay, cost,
                    out);
    if (rule->charge_cv != nullptr) {
        out->max_retry_us = INT64_MAX;
    }
}

void cleanupCtx(void *data) noexcept {
    auto *ctx = static_cast<ngx_http_rl_ctx_t *>(data);
    if (ctx->wake.timer_set) {
        ngx_del_timer(&ctx->wake);
    }
    if (ctx->wake.posted) {
        ngx_delete_posted_event(&ctx->wake);
    }
    rl::adaptive::end(ctx, false);
    rl::inflightEnd(ctx);   /* the log phase did not come */
    letGo(ctx);
}

}  // namespace

extern "C" {

ngx_http_rl_ctx_t *ngx_http_rl_get_ctx(ngx_http_request_t *r) noexcept {
    auto *ctx = static_cast<ngx_http_rl_ctx_t *>(
        ngx_http_get_module_ctx(r, ngx_http_rl_module));
    if (ctx != nullptr) {
        return ctx;
    }
    /* An internal redirect zeroes module contexts; the pool keeps it. */
    for (ngx_pool_cleanup_t *cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == cleanupCtx) {
            ctx = static_cast<ngx_http_rl_ctx_t *>(cln->data);
            ngx_http_set_ctx(r, ctx, ngx_http_rl_module);
            return ctx;
        }
    }
    return nullptr;
}

ngx_int_t ngx_http_rl_decide(ngx_http_request_t *r,
                             ngx_http_rl_loc_conf_t *lcf) noexcept {
    ngx_http_rl_ctx_t *ctx = ngx_http_rl_get_ctx(r);
    if (ctx != nullptr) {
        if (ctx->waiting) {
            return NGX_AGAIN;
        }
        if (ctx->resumed) {
            ctx->resumed = 0;
            return ctx->rc;
        }
        return NGX_DECLINED; /* decided before an internal redirect */
    }

    ctx = createCtx(r, lcf);
    if (ctx == nullptr || groupRules(r, ctx, ctx->values) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    /* what this instance answers alone, then Redis, then settling */
    ngx_msec_t timeout;
    if (!askRedis(r, ctx, decideHere(r, ctx), &timeout)) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (ctx->pending > 0) {
        return park(r, ctx, timeout);
    }
    finish(ctx);
    return settle(r, ctx);
}

void ngx_http_rl_request_end(ngx_http_request_t *r) noexcept {
    ngx_http_rl_ctx_t *ctx = ngx_http_rl_get_ctx(r);
    if (ctx != nullptr) {
        rl::chargeRequest(ctx);
        rl::adaptive::end(ctx, true);
        rl::inflightEnd(ctx);
    }
}

void ngx_http_rl_group_done(ngx_http_rl_group_t *group, const void *reply,
                            int64_t clock_us, const int64_t *limits,
                            int64_t grant) noexcept {
    ngx_http_rl_ctx_t *ctx = group->ctx;
    if (ctx == nullptr) {
        rl::leaseCallDone(group, reply, clock_us, limits, grant);
        return;
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_uint_t records = ngx_http_rl_records(group);
    rl_outcome_t out[RL_MAX_RULES];
    unsigned char dry[RL_MAX_RULES];
    rl_reply_bounds_t bounds[RL_MAX_RULES];
    int allowed = 0;

    group->call = nullptr;
    group->done = 1;
    if (reply != nullptr && group->zone->stats != nullptr) {
        ngx_http_rl_stats_latency(group->zone,
                                  static_cast<ngx_msec_t>(
                                      rl::monotonicUs() - group->sent_us));
    }
    for (ngx_uint_t k = 0; k < records; k++) {
        /* the rules' records, then their trials' (dry runs) */
        bool trial = k >= group->nrules;
        ngx_http_rl_rule_t *rule = trial
            ? group->trials[k - group->nrules].shadow
            : &rules[group->rules[k]];
        dry[k] = trial ? 1 : ngx_http_rl_dry_run(ctx, rule);
        replyBounds(rule, group->costs[k], &bounds[k]);
    }
    /* every call of the module's asks for Redis' clock */
    if (reply != nullptr && clock_us > 0 &&
        rl_decode_reply(reply, records, group->costs, dry, bounds,
                        &allowed, out) == RL_REPLY_OK) {
        group->allowed = allowed ? 1 : 0;
        if (!ngx_http_rl_nginx_clock) {
            /* (RL_TEST_CLOCK=nginx: the time the call sent) */
            group->now_us = clock_us - group->age_us;
        }
        for (ngx_uint_t k = 0; k < records; k++) {
            if (limits != nullptr) {
                out[k].limit = limits[k];
            }
        }
        for (ngx_uint_t k = 0; k < group->nrules; k++) {
            ngx_http_rl_rule_t *rule = &rules[group->rules[k]];
            uint64_t n = rl::live::limitOf(rule);
            if (out[k].limit == 0 && n != rule->limit) {
                /* decided at its live limit (its headers say which) */
                out[k].limit = static_cast<int64_t>(n);
            }
            ctx->outcomes[group->rules[k]] = out[k];
            ctx->decided[group->rules[k]] = 1;
        }
        for (ngx_uint_t t = 0; t < group->ntrials; t++) {
            group->trials[t].outcome = out[group->nrules + t];
            group->trials[t].decided = 1;
        }
        if (!allowed) {
            rememberRejection(ctx, group);
        }
    } else {
        failed(group);
    }

    answered(ctx);
}

void ngx_http_rl_refund_done(ngx_http_rl_group_t *group,
                             int retry) noexcept {
    ngx_http_rl_ctx_t *ctx = group->ctx;
    if (ctx == nullptr) {
        if (group->owned_done != nullptr) {
            group->owned_done(group, retry); /* a release, renewal, charge */
        } else {
            rl::leaseRefundDone(group, retry);
        }
        return;
    }
    if (retry != NGX_HTTP_RL_RETRY_NONE &&
        retry != NGX_HTTP_RL_REFUND_FAILED && !group->refund_retried) {
        /* Redis lost the script (SCRIPT FLUSH, a restart, a failover)
         * between the decision and its refund: once more, with its
         * text; or the slot moved: once more, where the reply said. The
         * request still waits for it */
        group->refund_retried = 1;
        refund(ctx, group, retry);
        if (group->call != nullptr) {
            return;
        }
    }
    answered(ctx);
}

}  // extern "C"
