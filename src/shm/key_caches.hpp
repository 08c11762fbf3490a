/* key_caches.cpp: what this instance caches of a key, dropped. */
#pragma once

#include "ngx.hpp"

namespace rl::shm {

/* What this instance caches of a key value of the zone goes (an
 * operator changed it, here or through another instance): its deny
 * cache entries in every rule of the zone's prefix (name: in that rule
 * of the zone only, a reset), and its leases. */
void forgetKey(ngx_http_rl_main_conf_t *rmcf, ngx_http_rl_zone_t *zone,
               const ngx_str_t *name, const ngx_str_t *value);

}  // namespace rl::shm
