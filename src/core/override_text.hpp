/* Per-key overrides as text (lua/override.lua reads them in Redis; the
 * embedded store reads its own here): "limit NAME=N [NAME=N ...]", the
 * first word "limit" in any case, words apart by white space, each
 * split at its last '=', NAME compared whole, the first word naming a
 * rule counting. Pure: no nginx. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "algorithm.hpp"

namespace rl {

/* Whether `text` is an override (its first word is "limit"). */
bool isOverride(std::string_view text);

/* The N the override's text gives rule `name`, or 0 (none, or no whole
 * number). */
uint64_t overrideLimit(std::string_view text, std::string_view name);

/* The rule's parameters under an override of N, as lua/override.lua
 * decides them: false (the rule keeps its own) for an N that is not
 * from 1 to 1e9 (sliding_log: 1e5), that is the rule's own N, or that a
 * bucket cannot compute exactly over its window (exactArithmetic for a
 * cost up to burst + 1); `burstFollows`: the burst is N's default, and
 * follows. */
bool overridden(const Params& rule, uint64_t n, bool burstFollows,
                Params* out);

/* The text with NAME's word set to NAME=N (n = 0: taken out), written
 * at out (room for text.size() + name.size() + 32); returns its length,
 * 0 when no word is left. "limit" starts a text that had none. */
size_t overrideWith(char* out, std::string_view text, std::string_view name,
                    uint64_t n);

}  // namespace rl
