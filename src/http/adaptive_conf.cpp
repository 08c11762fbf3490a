/*
 * adaptive_conf.cpp: concurrency=auto's parameters (SPEC section 13),
 * read when the configuration is loaded, and its specs: one per
 * priority level, enforced and dry run (src/core/script.hpp: flag 16,
 * limit min, burst max, delay the level), and room for the same at a
 * live limit that pins N (adaptive.cpp writes them).
 */

#include "adaptive.hpp"

#include <algorithm>
#include <new>

namespace {

using rl::adaptive::Rule;

/* "NAME=N", N a number of requests from 1 to kMaxMax; -1 after an
 * error (logged), 0 when not given. */
int64_t requests(ngx_conf_t *cf, const ngx_str_t &text, size_t skip) {
    if (text.len == 0) {
        return 0;
    }
    ngx_int_t n = ngx_atoi(text.data + skip, text.len - skip);
    if (n < 1 || static_cast<uint64_t>(n) > rl::adaptive::kMaxMax) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": a number of requests "
                           "from 1 to %uL", &text,
                           static_cast<uint64_t>(rl::adaptive::kMaxMax));
        return -1;
    }
    return n;
}

bool bounds(ngx_conf_t *cf, Rule *a, ngx_str_t *text) {
    int64_t min = requests(cf, text[0], 4);
    int64_t max = requests(cf, text[1], 4);
    if (min < 0 || max < 0) {
        return false;
    }
    a->params.max = max > 0 ? static_cast<uint64_t>(max)
                            : rl::adaptive::kDefaultMax;
    a->params.min = min > 0 ? static_cast<uint64_t>(min)
                            : std::min(rl::adaptive::kDefaultMin,
                                       a->params.max);
    if (a->params.min > a->params.max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": above \"max=%uL\"",
                           &text[0], a->params.max);
        return false;
    }
    return true;
}

bool target(ngx_conf_t *cf, Rule *a, ngx_str_t *text) {
    if (text->len == 0) {
        return true;
    }
    ngx_str_t s = {text->len - 7, text->data + 7};
    ngx_msec_t ms = ngx_parse_time(&s, 0);
    if (ms == static_cast<ngx_msec_t>(NGX_ERROR) || ms < 1 ||
        ms > 3600000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": a time from 1ms to "
                           "1h (the p90 objective)", text);
        return false;
    }
    a->params.targetUs = static_cast<int64_t>(ms) * 1000;
    return true;
}

bool priority(ngx_conf_t *cf, Rule *a, ngx_str_t *text) {
    if (text->len == 0) {
        return true;
    }
    ngx_str_t s = {text->len - 9, text->data + 9};
    if (s.len == 0 || (ngx_http_script_variables_count(&s) == 0 &&
                       (s.len != 1 || s.data[0] < '0' || s.data[0] > '3'))) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid parameter \"%V\": a level from 0 (shed "
                           "last) to 3 (shed first), or a variable", text);
        return false;
    }
    return ngx_http_rl_compile(cf, &s, &a->priority) == NGX_OK;
}

}  // namespace

extern "C" {

char *ngx_http_rl_adaptive_conf(ngx_conf_t *cf, ngx_http_rl_rule_t *rule,
                                ngx_str_t *text) noexcept {
    auto *a = static_cast<Rule *>(ngx_pcalloc(cf->pool, sizeof(Rule)));
    if (a == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    new (a) Rule{};
    for (int i = 0; i < 4; i++) {
        a->text[i] = text[i];
    }
    if (!bounds(cf, a, text) || !target(cf, a, &text[2]) ||
        !priority(cf, a, &text[3])) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    rule->adaptive = a;
    rule->limit = a->params.min;
    rule->burst = a->params.max;
    return NGX_CONF_OK;
}

char *ngx_http_rl_adaptive_specs(ngx_conf_t *cf,
                                 ngx_http_rl_rule_t *rule) noexcept {
    Rule *a = rl::adaptive::ruleOf(rule);
    size_t len = rule->spec.len;
    auto *p = static_cast<u_char *>(ngx_pnalloc(cf->pool, 16 * len));
    if (p == nullptr) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    for (int dry = 0; dry < 2; dry++) {
        for (int level = 0; level < 4; level++) {
            a->specs[dry][level] = {len, p};
            (void) rl_spec_write(p, RL_ALGORITHM_CONCURRENCY,
                                 reinterpret_cast<char *>(rule->name.data),
                                 rule->name.len, a->params.min,
                                 rule->window_us, a->params.max,
                                 static_cast<uint64_t>(level), dry, 0,
                                 RL_SPEC_ADAPTIVE);
            p += len;
            a->pinned[dry][level] = {len, p};
            p += len;
        }
    }
    a->pinnedN = ~uint64_t(0);    /* none made yet */
    return NGX_CONF_OK;
}

}  // extern "C"
