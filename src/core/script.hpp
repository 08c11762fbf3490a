/* The Redis script (lua/, embedded at build time) and the argument
 * vector of one EVALSHA call deciding several rules of one zone:
 *
 *   EVALSHA sha n key_1..key_n  n now  spec_1 cost_1 ... spec_n cost_n
 *           [refund]
 *
 * A spec is "ALG LIMIT WINDOW BURST DELAY DRY", decimal, one space
 * apart, made once per rule at configuration (the script parses each
 * distinct spec once per call): window in microseconds; burst the
 * effective one (token_bucket: capacity, default N; leaky_bucket, gcra:
 * excess tolerated, default 0; others 0); delay for leaky_bucket and
 * gcra (the excess passed at once; nodelay: delay = burst), 0 for
 * others; dry 1 for a dry-run rule (never rejects, never delays), else
 * 0. The cost is decimal too.
 *
 * A batch (src/batch.cpp) is several requests' keys, then their blocks
 * "n now spec cost ..." one after the other, "now" being "-A" for a
 * request that waited A us.
 *
 * To decide, `now` is empty (the script reads Redis' TIME; tests may pass
 * one). To refund a decision (another zone rejected the request), `now`
 * is the time that decision's reply gave, followed by "refund". */
#pragma once

#include <cstddef>
#include <string_view>

namespace rl {

std::string_view scriptText();

/* 40 lowercase hex digits, computed once. */
std::string_view scriptSha();

/* Per-rule constant arguments, as text (precomputed at configuration). */
struct RuleArgs {
    std::string_view spec;  /* "ALG LIMIT WINDOW BURST DELAY DRY" */
    std::string_view cost;
};

inline constexpr size_t kArgsPerRule = 2;
inline constexpr size_t kMaxRulesPerCall = 64;

constexpr size_t argvCount(size_t rules, bool refund = false) {
    return 5 + rules + kArgsPerRule * rules + (refund ? 1 : 0);
}

/* Index of `now` in the vector. */
constexpr size_t argvNowIndex(size_t rules) { return 4 + rules; }

/* Fills argv/argvlen (argvCount(n, refund) entries each). `count` is the
 * text of n; `command` is "EVALSHA" (with the SHA) or "EVAL" (with the
 * script's text); `now` is empty to decide. */
void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const std::string_view* keys, const RuleArgs* rules,
              size_t n, std::string_view now = {}, bool refund = false);

/* The same from C arrays (the module's C ABI, no copies): key k is
 * keys[k] (keyLens[k] bytes); rule k's arguments are ruleArgs[kArgsPerRule
 * * k ...] in RuleArgs' order. */
void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const char* const* keys, const size_t* keyLens,
              const char* const* ruleArgs, const size_t* ruleArgLens,
              size_t n, std::string_view now, bool refund);

}  // namespace rl
