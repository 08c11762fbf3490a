/*
 * rule_names.cpp: the configuration's rules by zone and name, made once
 * when the configuration is loaded. A (zone, name) is what an operator
 * names: one series of the metrics, one entry of the operator API, one
 * list of top keys. Its rules may be written in many places, with other
 * rates or keys (each a state of its own: rule->id), however many.
 * Looking a name up, listing names and their states then costs a pass
 * over the names, never one over the rules for each rule.
 */

#include "ngx.hpp"

#include <algorithm>

namespace {

int compareBytes(const ngx_str_t &a, const ngx_str_t &b) {
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n > 0 ? ngx_memcmp(a.data, b.data, n) : 0;
    if (c != 0) {
        return c;
    }
    return a.len < b.len ? -1 : a.len > b.len ? 1 : 0;
}

/* The rules in an order that puts each (zone, name) together, each
 * state of it together, in the order written. */
struct ByName {
    ngx_http_rl_rule_t **all;

    bool operator()(ngx_uint_t a, ngx_uint_t b) const {
        const ngx_http_rl_rule_t *x = all[a], *y = all[b];
        if (x->zone->index != y->zone->index) {
            return x->zone->index < y->zone->index;
        }
        int c = compareBytes(x->name, y->name);
        if (c != 0) {
            return c < 0;
        }
        c = ngx_memcmp(x->id, y->id, RL_RULE_ID_LEN);
        return c != 0 ? c < 0 : a < b;
    }
};

bool sameState(const ngx_http_rl_rule_t *a, const ngx_http_rl_rule_t *b) {
    return ngx_memcmp(a->id, b->id, RL_RULE_ID_LEN) == 0;
}

/* One name's entry, from its rules [from, to) of `order`. */
ngx_int_t fill(ngx_pool_t *pool, ngx_http_rl_rule_t **all,
               const ngx_uint_t *order, ngx_uint_t from, ngx_uint_t to,
               ngx_http_rl_name_t *n) {
    ngx_uint_t count = to - from;
    n->rules = static_cast<ngx_http_rl_rule_t **>(
        ngx_palloc(pool, 2 * count * sizeof(ngx_http_rl_rule_t *)));
    if (n->rules == nullptr) {
        return NGX_ERROR;
    }
    n->states = n->rules + count;
    n->nrules = 0;
    n->nstates = 0;
    n->top = nullptr;
    n->live = nullptr;
    for (ngx_uint_t i = from; i < to; i++) {
        ngx_http_rl_rule_t *rule = all[order[i]];
        /* a state's first rule is the first written of it */
        if (i == from || !sameState(all[order[i - 1]], rule)) {
            n->states[n->nstates++] = rule;
        }
        n->rules[n->nrules++] = rule;
    }
    /* both lists in the order written */
    auto written = [](const ngx_http_rl_rule_t *a,
                      const ngx_http_rl_rule_t *b) {
        return a->order < b->order;
    };
    std::sort(n->rules, n->rules + n->nrules, written);
    std::sort(n->states, n->states + n->nstates, written);
    n->first = n->rules[0];
    return NGX_OK;
}

ngx_int_t build(ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf) {
    auto **all = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    ngx_uint_t n = rmcf->rules.nelts;
    auto *order = static_cast<ngx_uint_t *>(
        ngx_palloc(cf->temp_pool, (n + 1) * sizeof(ngx_uint_t)));
    if (order == nullptr) {
        return NGX_ERROR;
    }
    for (ngx_uint_t i = 0; i < n; i++) {
        order[i] = i;
        all[i]->order = i;
    }
    std::sort(order, order + n, ByName{all});

    /* the names' first rules, to list them in the order written */
    auto *starts = static_cast<ngx_uint_t *>(
        ngx_palloc(cf->temp_pool, (n + 1) * sizeof(ngx_uint_t)));
    if (starts == nullptr) {
        return NGX_ERROR;
    }
    ngx_uint_t names = 0;
    for (ngx_uint_t i = 0; i < n; i++) {
        if (i == 0 || !ngx_http_rl_same_name(all[order[i - 1]],
                                             all[order[i]])) {
            starts[names++] = i;
        }
    }
    starts[names] = n;
    if (ngx_array_init(&rmcf->names, cf->pool, names + 1,
                       sizeof(ngx_http_rl_name_t)) != NGX_OK) {
        return NGX_ERROR;
    }
    auto *entries = static_cast<ngx_http_rl_name_t *>(
        ngx_array_push_n(&rmcf->names, names));
    if (entries == nullptr && names > 0) {
        return NGX_ERROR;
    }
    for (ngx_uint_t k = 0; k < names; k++) {
        if (fill(cf->pool, all, order, starts[k], starts[k + 1],
                 &entries[k]) != NGX_OK) {
            return NGX_ERROR;
        }
    }
    std::sort(entries, entries + names,
              [](const ngx_http_rl_name_t &a, const ngx_http_rl_name_t &b) {
                  return a.first->order < b.first->order;
              });
    /* (the entries moved: each rule finds its own again) */
    for (ngx_uint_t k = 0; k < names; k++) {
        for (ngx_uint_t i = 0; i < entries[k].nrules; i++) {
            entries[k].rules[i]->named = &entries[k];
        }
    }
    return NGX_OK;
}

}  // namespace

extern "C" ngx_int_t ngx_http_rl_names_init(
    ngx_conf_t *cf, ngx_http_rl_main_conf_t *rmcf) noexcept {
    try {
        return build(cf, rmcf);
    } catch (...) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "rl: unexpected exception listing rule names");
        return NGX_ERROR;
    }
}
