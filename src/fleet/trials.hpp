/* Trials on the request path (SPEC section 11): while a trial of a
 * rule's name runs, each request the rule decides carries a trial
 * record in its group's call, after the rules' records: the rule again,
 * in its place, in dry run, at the trial's N, on a state of its own
 * (live.hpp's shadow rule). It rides the same script call (no round
 * trip of its own), makes the group unleased as a dry_run rule would,
 * keeps its rule out of the deny cache (the trial decides each request
 * of it), and counts in the trial's figures, never in the rule's, its
 * headers or $rl_status.
 *
 * Its state takes the request when the world of the trial admits it:
 * the trial admits it and every other rule of the request does. The
 * script (and the embedded store) sees the rules of its own call: a
 * request the trial's rule alone rejects there is counted in the trial.
 * The other zones' rules are decided in other calls: when one of them
 * rejects the request (or a zone's failure=closed does), what the trial
 * counted is given back as a rule's count is (owed()). A rule that was
 * not asked (the request was rejected before its zone's turn) counts as
 * admitting it, as it counts as passed in the figures. */
#pragma once

#include "ngx.hpp"

namespace rl::trials {

/* The group's trials, once its rules are grouped (as many as a call's
 * request holds: the records stay within kMaxRulesPerCall). False when
 * out of memory. */
bool add(ngx_http_request_t *r, ngx_http_rl_group_t *g);

/* The trials' records of the call, after the rules' (keys, specs,
 * costs from `at` on). False when out of memory. */
bool build(ngx_http_request_t *r, ngx_http_rl_group_t *g, size_t at);

/* The request's trials counted, once it is decided (its groups that
 * erred count nothing; a trial not asked counts as passed, as a rule
 * not asked does). */
void count(ngx_http_rl_ctx_t *ctx);

/* What the group gives back of a request that was not admitted, per
 * record (costs[k], the rules' then the trials'; 0: nothing): its
 * rules' costs if it counted them (it admitted the request), and each
 * trial's if the trial counted it while a rule other than its own
 * rejected the request. False when nothing is owed. */
bool owed(const ngx_http_rl_ctx_t *ctx, const ngx_http_rl_group_t *g,
          uint64_t *costs);

}  // namespace rl::trials
