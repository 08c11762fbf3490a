/*
 * adaptive.cpp: concurrency=auto on the request path (see
 * adaptive.hpp): a request's priority level, the spec it is decided
 * with, and what it tells the law when it is decided and when it ends.
 */

#include "adaptive.hpp"

#include "clock.hpp"
#include "shm/live.hpp"

namespace rl::adaptive {
namespace {

ngx_http_rl_main_conf_t *confOf(ngx_http_request_t *r) {
    return static_cast<ngx_http_rl_main_conf_t *>(
        ngx_http_get_module_main_conf(r, ngx_http_rl_module));
}

/* The upstream's answer said it is overloaded: its last try's status
 * (a timeout is nginx's 504). */
bool overloaded(ngx_http_request_t *r) {
    ngx_array_t *states = r->upstream_states;
    if (states == nullptr || states->nelts == 0) {
        return false;
    }
    auto *s = static_cast<ngx_http_upstream_state_t *>(states->elts);
    ngx_uint_t status = s[states->nelts - 1].status;
    return status == NGX_HTTP_TOO_MANY_REQUESTS ||
           status == NGX_HTTP_BAD_GATEWAY ||
           status == NGX_HTTP_SERVICE_UNAVAILABLE ||
           status == NGX_HTTP_GATEWAY_TIME_OUT;
}

/* Whether the rule admitted the request, which holds its slot. */
bool admitted(const ngx_http_rl_ctx_t *ctx, ngx_uint_t i) {
    return ctx->rc == NGX_DECLINED && ctx->decided[i] &&
           ctx->outcomes[i].retry_ms == 0;
}

}  // namespace

bool leveled(ngx_http_rl_ctx_t *ctx, ngx_uint_t i) {
    ngx_http_request_t *r = ctx->r;
    if (ctx->levels == nullptr) {
        ctx->levels = static_cast<u_char *>(
            ngx_pcalloc(r->pool, ctx->lcf->rules->nelts));
        if (ctx->levels == nullptr) {
            return false;
        }
    }
    auto *rule = &static_cast<ngx_http_rl_rule_t *>(
        ctx->lcf->rules->elts)[i];
    Rule *a = ruleOf(rule);
    ngx_str_t v;
    if (a->priority == nullptr) {
        ctx->levels[i] = 0;
        return true;
    }
    if (ngx_http_complex_value(r, a->priority, &v) != NGX_OK) {
        return false;
    }
    int l = levelOf(reinterpret_cast<const char *>(v.data), v.len);
    if (l == 3 && (v.len != 1 || v.data[0] != '3')) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "rl: priority \"%V\" of rule \"%V\" is not a level "
                      "from 0 to 3: counted as 3", &v, &rule->name);
    }
    ctx->levels[i] = static_cast<u_char>(l);
    return true;
}

const ngx_str_t *specOf(const ngx_http_rl_ctx_t *ctx, ngx_uint_t i,
                        const ngx_http_rl_rule_t *rule, bool dry) {
    const ngx_str_t *own = live::specOf(rule, dry);
    Rule *a = ruleOf(rule);
    if (a == nullptr) {
        return own;
    }
    int level = ctx->levels != nullptr ? ctx->levels[i] : 0;
    int d = dry ? 1 : 0;
    if (own == &rule->spec || own == &rule->dry_spec) {
        return &a->specs[d][level];
    }
    /* a live limit pins N (SPEC 13): the specs at it, made again when
     * it changes */
    uint64_t n = live::limitOf(rule);
    if (n != a->pinnedN) {
        for (int x = 0; x < 2; x++) {
            for (int l = 0; l < 4; l++) {
                (void) rl_spec_write(
                    a->pinned[x][l].data, RL_ALGORITHM_CONCURRENCY,
                    reinterpret_cast<char *>(rule->name.data),
                    rule->name.len, n, rule->window_us, a->params.max,
                    static_cast<uint64_t>(l), x, 0, 0);
            }
        }
        a->pinnedN = n;
    }
    return &a->pinned[d][level];
}

ngx_uint_t status(const ngx_http_rl_ctx_t *ctx, bool rejected) {
    if (ctx->lcf->status_code != 0) {
        return ctx->lcf->status_code;
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    return rejected && ctx->binding >= 0 &&
                   rules[ctx->binding].adaptive != nullptr
               ? NGX_HTTP_SERVICE_UNAVAILABLE
               : NGX_HTTP_TOO_MANY_REQUESTS;
}

void count(ngx_http_rl_ctx_t *ctx) {
    if (ctx->levels == nullptr) {
        return;     /* no auto rule */
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    for (ngx_uint_t i = 0; i < ctx->lcf->rules->nelts; i++) {
        const ngx_http_rl_rule_t *rule = &rules[i];
        if (rule->adaptive == nullptr || !ctx->decided[i]) {
            continue;
        }
        const rl_outcome_t &o = ctx->outcomes[i];
        bool dry = ngx_http_rl_dry_run(ctx, rule);
        if (rule->stats != nullptr && !(dry && o.retry_ms > 0)) {
            (void) ngx_atomic_fetch_add(
                &rule->stats->priority[ctx->levels[i]][o.retry_ms > 0], 1);
        }
        if (admitted(ctx, i) && ctx->admitted_us == 0) {
            ctx->admitted_us = monotonicUs();
        }
    }
}

void end(ngx_http_rl_ctx_t *ctx, bool logged) {
    if (ctx->levels == nullptr || ctx->sampled || !ctx->finished) {
        return;
    }
    ctx->sampled = 1;
    ngx_http_request_t *r = ctx->r;
    Told told{};
    if (ctx->admitted_us > 0) {
        int64_t endUs = ctx->responded_us > 0 ? ctx->responded_us
                                              : monotonicUs();
        told.latencyUs = endUs - ctx->admitted_us;
        told.overloaded = logged && overloaded(r);
    }
    auto *rules = static_cast<ngx_http_rl_rule_t *>(ctx->lcf->rules->elts);
    ngx_http_rl_main_conf_t *rmcf = confOf(r);
    for (ngx_uint_t i = 0; i < ctx->lcf->rules->nelts; i++) {
        if (rules[i].adaptive == nullptr || !ctx->decided[i]) {
            continue;
        }
        const rl_outcome_t &o = ctx->outcomes[i];
        bool ok = admitted(ctx, i);
        told.limit = o.limit > 0 ? static_cast<uint64_t>(o.limit)
                                 : live::limitOf(&rules[i]);
        /* the limit reached: refused, or the last slot taken */
        told.reached = o.retry_ms > 0 || (ok && o.remaining <= 0);
        told.sampled = ok && logged;
        tell(rmcf, &rules[i], &ctx->values[i], told);
    }
}

}  // namespace rl::adaptive

extern "C" {

void ngx_http_rl_adaptive_responded(ngx_http_request_t *r,
                                    ngx_http_rl_ctx_t *ctx) noexcept {
    if (ctx->admitted_us > 0 && ctx->responded_us == 0 &&
        r->upstream != nullptr) {
        ctx->responded_us = rl::monotonicUs();
    }
}

}  // extern "C"
