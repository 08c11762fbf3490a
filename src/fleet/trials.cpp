/*
 * trials.cpp: trials on the request path (see trials.hpp).
 */

#include "trials.hpp"

#include "core/script.hpp"
#include "shm/live.hpp"

namespace rl::trials {

bool add(ngx_http_request_t *r, ngx_http_rl_group_t *g) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(g->ctx->lcf->rules->elts);
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_http_rl_rule_t *shadow = live::trialOf(&rules[g->rules[k]]);
        if (shadow == nullptr || ngx_http_rl_records(g) >= kMaxRulesPerCall) {
            continue;
        }
        if (g->trials == nullptr) {
            g->trials = static_cast<ngx_http_rl_trial_t *>(ngx_pcalloc(
                r->pool, g->nrules * sizeof(ngx_http_rl_trial_t)));
            if (g->trials == nullptr) {
                return false;
            }
        }
        ngx_http_rl_trial_t &t = g->trials[g->ntrials++];
        t.shadow = shadow;
        t.of = g->rules[k];
        t.place = k;
    }
    return true;
}

bool build(ngx_http_request_t *r, ngx_http_rl_group_t *g, size_t at) {
    const ngx_str_t &prefix = g->zone->prefix;
    for (ngx_uint_t t = 0; t < g->ntrials; t++, at++) {
        ngx_http_rl_trial_t &trial = g->trials[t];
        const ngx_str_t &v = g->ctx->values[trial.of];
        auto *key = static_cast<char *>(
            ngx_pnalloc(r->pool, prefix.len + RL_STATE_KEY_MAX));
        if (key == nullptr) {
            return false;
        }
        char *end = rl_state_key_write(
            key, reinterpret_cast<char *>(prefix.data), prefix.len,
            reinterpret_cast<char *>(v.data), v.len, trial.shadow->id);
        g->keys[at] = {static_cast<size_t>(end - key),
                       reinterpret_cast<u_char *>(key)};
        g->specs[at] = &trial.shadow->dry_spec;
        g->costs[at] = g->ctx->costs[trial.of];
    }
    return true;
}

namespace {

/* Whether rule i (of the request's location) is enforced and rejected
 * the request. */
bool rejects(const ngx_http_rl_ctx_t *ctx, ngx_uint_t i) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    return ctx->decided[i] && ctx->outcomes[i].retry_ms > 0 &&
           !ngx_http_rl_dry_run(ctx, &rules[i]);
}

/* Whether a rule of the request other than rule `of` rejected it, or a
 * zone's failure=closed did (the world of a trial of `of` rejects it);
 * in `only`'s group alone, if given. */
bool othersReject(const ngx_http_rl_ctx_t *ctx, ngx_uint_t of,
                  const ngx_http_rl_group_t *only) {
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        const ngx_http_rl_group_t *group = &ctx->groups[g];
        if (only != nullptr && group != only) {
            continue;
        }
        if (group->error) {
            if (group->zone->failure == NGX_HTTP_RL_FAILURE_CLOSED) {
                return true;
            }
            continue;
        }
        for (ngx_uint_t k = 0; k < group->nrules; k++) {
            if (group->rules[k] != of && rejects(ctx, group->rules[k])) {
                return true;
            }
        }
    }
    return false;
}

/* Whether trial t counted the request in its group's decision: it
 * admitted it, and so did every rule of the group but its own. */
bool took(const ngx_http_rl_ctx_t *ctx, const ngx_http_rl_group_t *g,
          const ngx_http_rl_trial_t &t) {
    return !g->error && t.decided && t.outcome.retry_ms == 0 &&
           (g->allowed || !othersReject(ctx, t.of, g));
}

}  // namespace

bool owed(const ngx_http_rl_ctx_t *ctx, const ngx_http_rl_group_t *g,
          uint64_t *costs) {
    bool any = false;
    for (ngx_uint_t k = 0; k < g->nrules; k++) {
        ngx_uint_t i = g->rules[k];
        costs[k] = g->allowed && ctx->outcomes[i].retry_ms == 0
                       ? ctx->costs[i] : 0;
        any = any || costs[k] > 0;
    }
    for (ngx_uint_t t = 0; t < g->ntrials; t++) {
        const ngx_http_rl_trial_t &trial = g->trials[t];
        costs[g->nrules + t] = took(ctx, g, trial) &&
                                       othersReject(ctx, trial.of, nullptr)
                                   ? ctx->costs[trial.of] : 0;
        any = any || costs[g->nrules + t] > 0;
    }
    return any;
}

void count(ngx_http_rl_ctx_t *ctx) {
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        if (group->error) {
            continue;
        }
        for (ngx_uint_t t = 0; t < group->ntrials; t++) {
            const ngx_http_rl_trial_t &trial = group->trials[t];
            live::trialCount(trial.shadow,
                             trial.decided && trial.outcome.retry_ms > 0,
                             &ctx->values[trial.of]);
        }
    }
}

}  // namespace rl::trials
