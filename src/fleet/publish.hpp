/* What an instance publishes to the fleet (SPEC section 11): its
 * identity and, per Redis zone, its record (src/core/fleet_record.hpp),
 * made from the tables the module keeps: the configuration's rules by
 * name, their counters, top keys, trials. */
#pragma once

#include "ngx.hpp"

namespace rl::fleet::publish {

/* How long an instance not seen stays listed (SPEC: gone, 10 more
 * minutes), past its 3 intervals. */
inline constexpr int64_t kKeepMs = 600000;

/* The identity line, in the pool; false when out of memory. */
bool identity(ngx_pool_t *pool, ngx_http_rl_main_conf_t *rmcf,
              ngx_str_t *out);

/* The zone's record, in the pool, at most kRecordMax bytes; false when
 * out of memory. */
bool record(ngx_pool_t *pool, ngx_http_rl_main_conf_t *rmcf,
            const ngx_http_rl_zone_t *zone, ngx_str_t *out);

/* A name's definitions (every state of it) in a digest of 12 hex
 * digits: instances that define it alike have the same. */
void definitionDigest(const ngx_http_rl_name_t *name, char out[12]);

}  // namespace rl::fleet::publish
