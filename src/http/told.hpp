/* What a decided request tells beyond its answer: request.cpp's
 * finish() calls these once the decision is made (told.cpp). */
#pragma once

#include "ngx.hpp"

namespace rl {

/* One line per decision worth telling, in limit_req's manner: at
 * rl_log_level, a delay (what == NULL) one level less severe; rule
 * `index` is the one told of. */
void logDecision(ngx_http_rl_ctx_t *ctx, ngx_int_t index, const char *what,
                 ngx_uint_t level);

/* rl_requests_total and what the operator API shows: each rule that
 * applied, from its point of view, and each zone, by the worst its
 * rules had; the trials' and the auto rules' figures. */
void count(ngx_http_rl_ctx_t *ctx);

}  // namespace rl
