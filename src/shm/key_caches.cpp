/*
 * key_caches.cpp: what this instance keeps of a key value in shared
 * memory besides its state, dropped when an operator changes the key
 * (here through the API, or through another instance: the fleet's
 * audit): its deny cache entries (deny_cache.cpp) and its leases
 * (lease.cpp).
 */

#include "key_caches.hpp"

#include "core/state_key.hpp"

namespace rl::shm {
void forgetKey(ngx_http_rl_main_conf_t *rmcf, ngx_http_rl_zone_t *zone,
               const ngx_str_t *name, const ngx_str_t *value) {
    if (ngx_http_rl_embedded(zone)) {
        return;     /* no deny cache, no lease: nothing kept */
    }
    auto **all = static_cast<ngx_http_rl_rule_t **>(rmcf->rules.elts);
    std::string_view prefix = viewOf(zone->prefix);
    if (rmcf->deny != nullptr) {
        /* a block or override: every rule of the prefix's zones; a
         * reset: the rule's (Redis zones: the embedded store has no deny
         * cache) */
        for (ngx_uint_t i = 0; i < rmcf->rules.nelts; i++) {
            ngx_http_rl_zone_t *z = all[i]->zone;
            bool reach = name != nullptr
                             ? viewOf(all[i]->name) == viewOf(*name) &&
                                   z == zone
                             : viewOf(z->prefix) == prefix;
            if (reach && !ngx_http_rl_embedded(z)) {
                ngx_http_rl_deny_forget(rmcf->deny, all[i], value);
            }
        }
    }
    if (rmcf->leases != nullptr) {
        /* its leases end, what they hold going back: PREFIX{VALUE} */
        u_char text[NGX_HTTP_RL_MAX_PREFIX + 2 + kMaxValueTag];
        u_char *p = ngx_cpymem(text, zone->prefix.data, zone->prefix.len);
        *p++ = '{';
        p = reinterpret_cast<u_char *>(writeValueTag(
            reinterpret_cast<char *>(p),
            {reinterpret_cast<const char *>(value->data), value->len}));
        *p++ = '}';
        ngx_str_t block = {static_cast<size_t>(p - text), text};
        ngx_http_rl_lease_forget(rmcf, &block);
    }
}

}  // namespace rl::shm
