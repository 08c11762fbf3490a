/* What a request's rules decided, in figures for headers and variables. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "reply.hpp"

namespace rl {

/* The binding rule: on a rejection, the rejecting rule that frees
 * capacity last; otherwise the rule with least remaining (ties: the
 * one whose reset is furthest). Returns an index below n (n > 0). */
size_t bindingRule(const RuleOutcome* o, size_t n, bool allowed);

/* Whole seconds for headers, rounded up: "Retry-After: 0" would invite
 * an immediate retry that fails. */
int64_t secondsCeil(int64_t ms);

}  // namespace rl
