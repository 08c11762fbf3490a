/* Charges after the response (charge=VALUE, SPEC section 10):
 * request.cpp's side.
 *
 * A rule with charge= is decided with its cost= as usual. When the
 * request ends (its log phase), VALUE is evaluated (the tokens an LLM
 * call used, bytes, rows); a whole number C >= 0 adds C - cost to the
 * rule's usage for the key value, at the time the request ends: in
 * Redis by a call of the worker's own (batched with the others of this
 * turn, nobody waits), in this instance's memory for an embedded zone
 * or a failure=local decision. A value that is no such number charges
 * nothing more (rl_charges_total{result="invalid"}, a warning a minute
 * at most). The worker's part is in charges.cpp. */
#pragma once

#include "ngx.hpp"

namespace rl {

/* The request ended: the charges of the rules that counted it (the
 * request admitted; again is nothing). */
void chargeRequest(ngx_http_rl_ctx_t *ctx);

/* The worker's charges are out (sent, or waiting to go again). */
bool chargesOut(ngx_http_rl_main_conf_t *rmcf);

}  // namespace rl
