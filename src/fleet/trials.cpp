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
        g->trials[g->ntrials++].shadow = shadow;
        g->trials[g->ntrials - 1].of = g->rules[k];
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
