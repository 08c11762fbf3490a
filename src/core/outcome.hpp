/* What a request's rules decided, in figures for headers and variables. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "reply.hpp"

namespace rl {

/* The binding rule: on a rejection, the rejecting rule that frees
 * capacity last; otherwise the rule with least remaining (ties: the
 * one whose reset is furthest). Returns an index below n (n > 0). */
size_t bindingRule(const RuleOutcome* o, size_t n, bool allowed);

/* Whole seconds for headers, rounded up: "Retry-After: 0" would invite
 * an immediate retry that fails. */
int64_t secondsCeil(int64_t ms);

/* A key value as a log may show it: bytes outside 0x20-0x7e, '"' and
 * backslash become \xHH; past `cap` output bytes it is cut and "..."
 * follows. Writes at most cap + 3 bytes; returns the length. */
size_t printable(char* out, size_t cap, std::string_view value);

}  // namespace rl
