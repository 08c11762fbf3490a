/* Limits that follow the upstream (concurrency=auto, SPEC section 13):
 * the request path's side.
 *
 * An auto rule is an in-flight rule (inflight.hpp) whose N is learnt:
 * the script reads the fleet's N beside the rule's slots (lua/
 * concurrency.lua, lua/adaptive.lua), the embedded store this
 * instance's (shm/adaptive.hpp), and each request is admitted while the
 * slots held are below N times its priority's share. Its level (0 to
 * 3) picks one of the rule's specs (adaptive_conf.cpp); a live limit
 * pins N (the specs at that N, made by the worker when it changes).
 *
 * What a request tells the law: when it is decided (count()), whether
 * the limit was reached (a refusal, or the last slot taken) and the N
 * it was decided with; when it ends (end()), its latency from its
 * admission to its upstream's response header (to its end if it was
 * not proxied) and whether the upstream was overloaded. Each goes into
 * the rule and key value's entry in shared memory, summed there per
 * instance; worker 0 hands the sums to the law once an interval
 * (src/fleet/adaptive.hpp). */
#pragma once

#include "ngx.hpp"

#include "shm/adaptive.hpp"

namespace rl::adaptive {

/* The request's level for auto rule i: its priority= evaluated (a value
 * not 0 to 3 counts as 3, logged at info), kept in ctx->levels (made
 * with the first); false when out of memory. */
bool leveled(ngx_http_rl_ctx_t *ctx, ngx_uint_t i);

/* The spec rule i (`rule`) is decided with for this request: its own or
 * its live limit's (live::specOf()); an auto rule's at its request's
 * level, at the fleet's N or at the live limit that pins it. */
const ngx_str_t *specOf(const ngx_http_rl_ctx_t *ctx, ngx_uint_t i,
                        const ngx_http_rl_rule_t *rule, bool dry);

/* The status of a rejected request (rejected: by a rule; else by a
 * zone's failure=closed): rl_status, else 503 where the binding rule is
 * an auto rule (the upstream is busy, not the client's fault), else
 * 429. */
ngx_uint_t status(const ngx_http_rl_ctx_t *ctx, bool rejected);

/* The request was decided: per auto rule decided, its outcome by
 * level (rl_adaptive_requests_total), and, admitted, when. */
void count(ngx_http_rl_ctx_t *ctx);

/* The request ended (logged: its log phase; else its pool's cleanup,
 * which gives no sample): what it tells each auto rule's law (the N it
 * was decided with, whether it reached the limit, its sample), with one
 * look into the shared table. Its latency ends there, or when its
 * response header went, if it was proxied (the header filter's
 * ngx_http_rl_adaptive_responded()). */
void end(ngx_http_rl_ctx_t *ctx, bool logged);


}  // namespace rl::adaptive
