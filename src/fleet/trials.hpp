/* Trials on the request path (SPEC section 11): while a trial of a
 * rule's name runs, each request the rule decides carries a trial
 * record in its group's call, after the rules' records: the rule again,
 * in dry run, at the trial's N, on a state of its own (live.hpp's
 * shadow rule). It rides the same script call (no round trip of its
 * own), makes the group unleased as a dry_run rule would, and is
 * counted as a dry_run rule at that N beside the rule would be: in the
 * trial's figures, never in the rule's, its headers or $rl_status. */
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

}  // namespace rl::trials
