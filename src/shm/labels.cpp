/*
 * shm/labels.cpp: entries of shared memory tables found again by their
 * zone and rule name (shm/labels.hpp).
 */

#include "labels.hpp"

#include <algorithm>

namespace rl::labels {
namespace {

bool labelled(const Labels &l, const ngx_http_rl_rule_t *rule) {
    return l.zoneLen == rule->zone->name.len &&
           l.ruleLen == rule->name.len &&
           ngx_memcmp(l.zone, rule->zone->name.data, l.zoneLen) == 0 &&
           ngx_memcmp(l.rule, rule->name.data, l.ruleLen) == 0;
}

/* Orders labels by the zone's name, then the rule's. */
int compare(const u_char *az, size_t azl, const u_char *ar, size_t arl,
            const ngx_http_rl_rule_t *b) {
    auto cmp = [](const u_char *x, size_t xl, const ngx_str_t &y) {
        size_t n = xl < y.len ? xl : y.len;
        int c = n > 0 ? ngx_memcmp(x, y.data, n) : 0;
        return c != 0 ? c : xl < y.len ? -1 : xl > y.len ? 1 : 0;
    };
    int c = cmp(az, azl, b->zone->name);
    return c != 0 ? c : cmp(ar, arl, b->name);
}

Labels *at(u_char *base, size_t stride, ngx_uint_t k) {
    return reinterpret_cast<Labels *>(base + k * stride);
}

}  // namespace

bool claim(u_char *base, size_t stride, ngx_uint_t capacity, ngx_uint_t gen,
           ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log,
           void (*bind)(ngx_http_rl_name_t *, Labels *, bool, void *),
           void *data) {
    auto *names = static_cast<ngx_http_rl_name_t *>(rmcf->names.elts);
    ngx_uint_t n = rmcf->names.nelts;
    auto **sorted = static_cast<ngx_http_rl_name_t **>(
        ngx_alloc((n + 1) * sizeof(ngx_http_rl_name_t *), log));
    auto *got = static_cast<u_char *>(ngx_calloc(n + 1, log));
    if (sorted == nullptr || got == nullptr) {
        ngx_free(sorted);
        ngx_free(got);
        return false;
    }
    for (ngx_uint_t i = 0; i < n; i++) {
        sorted[i] = &names[i];
    }
    std::sort(sorted, sorted + n,
              [](const ngx_http_rl_name_t *a, const ngx_http_rl_name_t *b) {
                  const ngx_http_rl_rule_t *r = a->first;
                  return compare(r->zone->name.data, r->zone->name.len,
                                 r->name.data, r->name.len, b->first) < 0;
              });
    /* the entries kept: each looked up among the names */
    for (ngx_uint_t k = 0; k < capacity; k++) {
        Labels *l = at(base, stride, k);
        if (l->generation == 0) {
            continue;
        }
        auto **it = std::lower_bound(
            sorted, sorted + n, l,
            [](const ngx_http_rl_name_t *a, const Labels *b) {
                return compare(b->zone, b->zoneLen, b->rule, b->ruleLen,
                               a->first) > 0;
            });
        if (it != sorted + n && labelled(*l, (*it)->first) &&
            !got[*it - names]) {
            l->generation = gen;
            got[*it - names] = 1;
            bind(*it, l, false, data);
        }
    }
    ngx_free(sorted);
    /* new names: entries no name of this configuration has */
    ngx_uint_t next = 0;
    for (ngx_uint_t i = 0; i < n; i++) {
        ngx_http_rl_rule_t *rule = names[i].first;
        while (!got[i] && next < capacity) {
            Labels *l = at(base, stride, next++);
            if (l->generation < gen) {
                l->generation = gen;
                l->zoneLen = static_cast<uint8_t>(rule->zone->name.len);
                l->ruleLen = static_cast<uint8_t>(rule->name.len);
                ngx_memcpy(l->zone, rule->zone->name.data, l->zoneLen);
                ngx_memcpy(l->rule, rule->name.data, l->ruleLen);
                got[i] = 1;
                bind(&names[i], l, true, data);
            }
        }
    }
    ngx_free(got);
    return true;
}

}  // namespace rl::labels
