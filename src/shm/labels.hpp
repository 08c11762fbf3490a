/* Shared memory tables with an entry per zone and rule name, found
 * again by their labels when a reload hands the zone to the new cycle
 * (the top limited keys, the live limits): each entry starts with its
 * Labels. */
#pragma once

#include "ngx.hpp"

namespace rl::labels {

struct Labels {
    ngx_uint_t  generation;     /* the last configuration using it */
    uint8_t     zoneLen;
    uint8_t     ruleLen;
    u_char      zone[NGX_HTTP_RL_MAX_NAME];
    u_char      rule[NGX_HTTP_RL_MAX_NAME];
};

/* For each name of the configuration, the entry (`stride` bytes each
 * from `base`, `capacity` of them) its labels name, else one no name of
 * this generation (`gen`) has, which takes its labels: bind(name,
 * entry, fresh) for each name that got one (fresh: taken now, to be
 * made new). In time linear in the entries and the names. False when
 * out of memory. */
bool claim(u_char *base, size_t stride, ngx_uint_t capacity, ngx_uint_t gen,
           ngx_http_rl_main_conf_t *rmcf, ngx_log_t *log,
           void (*bind)(ngx_http_rl_name_t *name, Labels *entry, bool fresh,
                        void *data),
           void *data);

}  // namespace rl::labels
