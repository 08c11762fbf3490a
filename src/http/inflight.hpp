/* In-flight limits (concurrency=N, SPEC section 9): request.cpp's side.
 *
 * A concurrency rule is decided with the zone's other rules of the
 * request, in one script call (lua/concurrency.lua) or under the
 * embedded store's lock: admitted, the request holds a slot in the
 * rule's key, named by its slot id (this worker's tag and a counter).
 * While it runs, its worker renews the slot every hold/3 (batched per
 * link, nobody waits); when it ends (its log phase, or its pool's
 * cleanup) the slot is released (batched, asynchronous). A slot whose
 * worker died is never renewed: it expires within the hold, on Redis'
 * clock. The worker's part is in inflight.cpp. */
#pragma once

#include "ngx.hpp"

namespace rl {

/* The slot id of a request of this worker (0: no worker, no slots). */
uint64_t slotId(ngx_http_rl_main_conf_t *rmcf);

/* The request was admitted: the rules of its groups that took a slot
 * hold it until it ends. */
void inflightHold(ngx_http_rl_ctx_t *ctx);

/* The request ended (its log phase, or its pool's cleanup; again is
 * nothing): its slots are released. Ended before it was settled (the
 * client went away), the slots its groups took, or may still take,
 * go too. */
void inflightEnd(ngx_http_rl_ctx_t *ctx);

/* The group's decision call was let go unanswered (its zone's timeout):
 * Redis may still run it and take its slots, so a release follows it. */
void inflightAbandon(ngx_http_rl_group_t *g);

}  // namespace rl
