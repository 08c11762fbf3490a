/* The Redis script (lua/, embedded at build time) and the argument
 * vector of one EVALSHA call deciding several rules of one zone:
 *
 *   EVALSHA sha n key_1..key_n  n now  alg_1 limit_1 window_1 burst_1
 *           cost_1 ... alg_n ... cost_n
 *
 * `now` is empty: the script reads Redis' TIME (tests may pass one). */
#pragma once

#include <cstddef>
#include <string_view>

namespace rl {

std::string_view scriptText();

/* 40 lowercase hex digits, computed once. */
std::string_view scriptSha();

/* Per-rule constant arguments, as text (precomputed at configuration). */
struct RuleArgs {
    std::string_view algorithm;
    std::string_view limit;
    std::string_view windowUs;
    std::string_view burst;
    std::string_view cost;
};

inline constexpr size_t kArgsPerRule = 5;
inline constexpr size_t kMaxRulesPerCall = 64;

constexpr size_t argvCount(size_t rules) {
    return 5 + rules + kArgsPerRule * rules;
}

/* Fills argv/argvlen (argvCount(n) entries each). `count` is the text of
 * n; `command` is "EVALSHA" (with the SHA) or "EVAL" (with the text). */
void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const std::string_view* keys, const RuleArgs* rules,
              size_t n);

}  // namespace rl
