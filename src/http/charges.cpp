/*
 * charges.cpp: a worker's part in the charges (see charges.hpp): each
 * value read when its request ends, and sent, batched, as a call of the
 * worker's own (owned_call.hpp), counted in rl_charges_total when Redis
 * took it (sent) or could not (lost).
 */

#include "charges.hpp"

#include "redis/owned_call.hpp"

namespace rl {
namespace {

/* The largest charge: a whole number of units below this fits a
 * bucket's arithmetic (doubles exact below 2^53) for any rate nginx -t
 * lets through. */
constexpr ngx_int_t kMaxCharge = 1000000000;

/* A charge not sent within it (a Cluster slot migrating that long) is
 * lost: a minute, the default hold */
constexpr int64_t kChargeWindowUs = 60 * 1000000LL;

struct Worker {
    Owner                    owner;     /* its out: the charges out */
};

void chargeDone(ngx_http_rl_group_t *g, int retry) noexcept;

Worker *workerOf(ngx_http_rl_main_conf_t *rmcf) {
    return static_cast<Worker *>(rmcf->charge_worker);
}

void tally(const ngx_http_rl_rule_t *rule, int result) {
    if (rule->stats != nullptr) {
        (void) ngx_atomic_fetch_add(&rule->stats->charges[result], 1);
    }
}

/* The rule's charge for the request: C, or -1 when VALUE is no whole
 * number from 0 to kMaxCharge (counted; logged at warn, a minute apart
 * at most for the rule, over every worker). */
int64_t chargeOf(ngx_http_request_t *r, const ngx_http_rl_rule_t *rule) {
    ngx_str_t v = ngx_null_string;
    ngx_int_t n = NGX_ERROR;
    if (ngx_http_complex_value(r, rule->charge_cv, &v) == NGX_OK &&
        v.len > 0) {
        n = ngx_atoi(v.data, v.len);
    }
    if (n != NGX_ERROR && n <= kMaxCharge) {
        return n;
    }
    tally(rule, NGX_HTTP_RL_CHARGE_INVALID);
    ngx_http_rl_rule_stats_t *s = rule->stats;
    auto minute = static_cast<ngx_atomic_uint_t>(ngx_time() / 60);
    ngx_atomic_uint_t last = s != nullptr ? s->charge_warned : 0;
    if (s == nullptr ||
        (last != minute && ngx_atomic_cmp_set(&s->charge_warned, last,
                                              minute))) {
        char text[64 + 3];
        size_t len = rl_printable(text, 64, reinterpret_cast<char *>(v.data),
                                  v.len);
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "rl: charge \"%*s\" of rule \"%V\" of zone \"%V\" is "
                      "no whole number from 0 to %i: nothing more charged "
                      "(the next such line in a minute at the earliest)",
                      len, text, &rule->name, &rule->zone->name, kMaxCharge);
    }
    return -1;
}

void chargeDone(ngx_http_rl_group_t *g, int retry) noexcept {
    OwnedCall *c = ownedOf(g);
    g->call = nullptr;
    if (retryOwned(c, retry)) {
        return;
    }
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        tally(c->rules[k], retry == NGX_HTTP_RL_RETRY_NONE
                               ? NGX_HTTP_RL_CHARGE_SENT
                               : NGX_HTTP_RL_CHARGE_LOST);
    }
    freeOwned(c);
}

/* The group's charged rules (indexes into the location's rules) and
 * their units: in this instance's memory at once, or to Redis. */
void send(Worker *w, ngx_http_rl_group_t *g, const ngx_uint_t *rules,
          const int64_t *units, ngx_uint_t n) {
    ngx_http_rl_ctx_t *ctx = g->ctx;
    auto *all = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    if (ngx_http_rl_embedded(g->zone) || g->local) {
        for (ngx_uint_t k = 0; k < n; k++) {
            ngx_http_rl_rule_t *rule = &all[rules[k]];
            const int64_t *bounds = nullptr;    /* a calendar rule's */
            for (ngx_uint_t j = 0; j < g->nrules; j++) {
                if (g->rules[j] == rules[k] && ((g->calendar >> j) & 1)) {
                    bounds = &g->bounds[3 * j];
                }
            }
            tally(rule, ngx_http_rl_shm_charge(g->zone, rule,
                                               &ctx->values[rules[k]],
                                               bounds, units[k]) == NGX_OK
                            ? NGX_HTTP_RL_CHARGE_SENT
                            : NGX_HTTP_RL_CHARGE_LOST);
        }
        return;
    }
    OwnedCall *c = makeOwned(sizeof(OwnedCall), g, rules, n, chargeDone,
                             &w->owner);
    if (c != nullptr) {
        ngx_queue_insert_tail(&w->owner.out, &c->queue);
        for (ngx_uint_t k = 0; k < n; k++) {
            c->group.costs[k] = static_cast<uint64_t>(units[k]);
        }
        if (sendOwned(c, CallKind::Charge)) {
            return;
        }
        freeOwned(c);
    }
    for (ngx_uint_t k = 0; k < n; k++) {
        tally(&all[rules[k]], NGX_HTTP_RL_CHARGE_LOST);
    }
}

}  // namespace

void chargeRequest(ngx_http_rl_ctx_t *ctx) {
    Worker *w = workerOf(confOf(ctx->r));
    if (w == nullptr || ctx->charged || !ctx->finished ||
        ctx->rc != NGX_DECLINED) {
        return;
    }
    ctx->charged = 1;
    auto *all = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    for (ngx_uint_t i = 0; i < ctx->ngroups; i++) {
        ngx_http_rl_group_t *g = &ctx->groups[i];
        ngx_uint_t rules[RL_MAX_RULES] = {0};
        int64_t units[RL_MAX_RULES] = {0};
        ngx_uint_t n = 0;
        for (ngx_uint_t k = 0; k < g->nrules; k++) {
            ngx_uint_t r = g->rules[k];
            const ngx_http_rl_rule_t *rule = &all[r];
            if (rule->charge_cv == nullptr) {
                continue;
            }
            if (g->error) {
                /* the request got the failure policy: not counted, and
                 * its charge cannot be either */
                tally(rule, NGX_HTTP_RL_CHARGE_LOST);
                continue;
            }
            if (!ctx->decided[r] || ctx->outcomes[r].retry_ms > 0) {
                continue;   /* the rule took nothing (a dry run's no) */
            }
            int64_t c = chargeOf(ctx->r, rule);
            if (c < 0) {
                continue;
            }
            int64_t more = c - static_cast<int64_t>(ctx->costs[r]);
            if (more == 0) {
                tally(rule, NGX_HTTP_RL_CHARGE_SENT); /* counted already */
                continue;
            }
            rules[n] = r;
            units[n++] = more;
        }
        if (n > 0) {
            send(w, g, rules, units, n);
        }
    }
}

bool chargesOut(ngx_http_rl_main_conf_t *rmcf) {
    Worker *w = workerOf(rmcf);
    return w != nullptr && !ngx_queue_empty(&w->owner.out);
}

}  // namespace rl

extern "C" {

ngx_int_t ngx_http_rl_charges_init(ngx_cycle_t *cycle,
                                   ngx_http_rl_main_conf_t *rmcf) noexcept {
    if ((ngx_http_rl_after_rules(rmcf) & 2) == 0) {
        return NGX_OK;
    }
    auto *w = rl::newWorker<rl::Worker>(cycle, rmcf, rl::kChargeWindowUs);
    if (w == nullptr) {
        return NGX_ERROR;
    }
    rmcf->charge_worker = w;
    return NGX_OK;
}

void ngx_http_rl_charges_exit(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::Worker *w = rl::workerOf(rmcf);
    /* what waits to go again goes now, written before the connections
     * go */
    if (w != nullptr && rl::ownerExit(&w->owner)) {
        ngx_http_rl_stores_write(rmcf);
    }
}

void ngx_http_rl_charges_free(ngx_http_rl_main_conf_t *rmcf) noexcept {
    rl::Worker *w = rl::workerOf(rmcf);
    if (w == nullptr) {
        return;
    }
    while (!ngx_queue_empty(&w->owner.out)) {
        rl::freeOwned(ngx_queue_data(ngx_queue_head(&w->owner.out),
                                    rl::OwnedCall, queue));
    }
    rmcf->charge_worker = nullptr;
}

ngx_uint_t ngx_http_rl_after_rules(ngx_http_rl_main_conf_t *rmcf) noexcept {
    auto **rules = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    ngx_uint_t found = 0;
    for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
        if (rules[i]->algorithm == RL_ALGORITHM_CONCURRENCY) {
            found |= 1;
        }
        if (rules[i]->charge_cv != nullptr) {
            found |= 2;
        }
    }
    return found;
}

}  // extern "C"
