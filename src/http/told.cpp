/*
 * told.cpp: what a decided request tells beyond its answer (told.hpp):
 * its log line, its counts in the metrics and the operator API (each
 * rule's and zone's outcomes, top keys, usage), its trials' and its
 * auto rules' figures.
 */

#include "told.hpp"

#include "adaptive.hpp"
#include "fleet/trials.hpp"

namespace rl {

/* One line per decision worth telling, in limit_req's manner: at
 * rl_log_level, a delay (what == NULL) one level less severe. */
void logDecision(ngx_http_rl_ctx_t *ctx, ngx_int_t index,
                 const char *what, ngx_uint_t level) {
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_http_rl_rule_t *rule = &rules[index];
    ngx_str_t *value = &ctx->values[index];
    rl_outcome_t *o = &ctx->outcomes[index];
    if (ctx->r->connection->log->log_level < level) {
        return;  /* no key to print for a line nobody reads */
    }
    char key[64 + 3];
    size_t len = rl_printable(key, 64, reinterpret_cast<char *>(value->data),
                              value->len);
    if (what == nullptr) {
        ngx_log_error(level, ctx->r->connection->log, 0,
                      "rl: request delayed by %L ms by rule \"%V\" of "
                      "zone \"%V\", key \"%*s\"",
                      o->delay_ms, &rule->name, &rule->zone->name, len, key);
        return;
    }
    ngx_log_error(level, ctx->r->connection->log, 0,
                  "rl: %s by rule \"%V\" of zone \"%V\", key \"%*s\", "
                  "retry in %L ms",
                  what, &rule->name, &rule->zone->name, len, key,
                  o->retry_ms);
}

/* rl_requests_total: each rule that applied, from its point of view
 * (with what the operator API shows of it: src/http/metrics.cpp), and each
 * zone, by the worst its rules had (an error, then a rejection, a dry
 * run's, a delay). */
void count(ngx_http_rl_ctx_t *ctx) {
    static const ngx_uint_t worse[NGX_HTTP_RL_OUTCOMES] = {
        0, 3, 2, 1, 4};  /* passed, rejected, dry run, delayed, error */
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    for (ngx_uint_t g = 0; g < ctx->ngroups; g++) {
        ngx_http_rl_group_t *group = &ctx->groups[g];
        ngx_uint_t zone = NGX_HTTP_RL_PASSED;
        for (ngx_uint_t k = 0; k < group->nrules; k++) {
            ngx_uint_t i = group->rules[k];
            ngx_http_rl_rule_t *rule = &rules[i];
            /* a rule not asked (the deny cache or an embedded zone
             * rejected the request for another) did not reject: passed,
             * as when it is asked and the other rule rejects, so the
             * counts do not depend on whether the cache answered */
            ngx_uint_t o = NGX_HTTP_RL_PASSED;
            if (group->error) {
                o = NGX_HTTP_RL_ERROR;
            } else if (!ctx->decided[i]) {
                o = NGX_HTTP_RL_PASSED;
            } else if (ctx->outcomes[i].retry_ms > 0) {
                o = ngx_http_rl_dry_run(ctx, rule)
                        ? NGX_HTTP_RL_REJECTED_DRY_RUN
                        : NGX_HTTP_RL_REJECTED;
            } else if (ctx->outcomes[i].delay_ms > 0 && ctx->delay > 0) {
                o = NGX_HTTP_RL_DELAYED;
            }
            zone = worse[o] > worse[zone] ? o : zone;
            ngx_http_rl_stats_rule(rule, o,
                                   ctx->decided[i] ? &ctx->outcomes[i]
                                                   : nullptr,
                                   &ctx->values[i]);
        }
        if (group->zone->stats != nullptr) {
            (void) ngx_atomic_fetch_add(&group->zone->stats->outcomes[zone],
                                        1);
        }
    }
    rl::trials::count(ctx);
    rl::adaptive::count(ctx);
}

}  // namespace rl
