/* The Redis script (lua/, embedded at build time) and the argument
 * vector of one EVALSHA call deciding several rules of one zone:
 *
 *   EVALSHA sha n key_1..key_n  n now  alg_1 limit_1 window_1 burst_1
 *           cost_1 delay_1 dry_1 ... alg_n ... dry_n  [refund]
 *
 * All decimal text: window in microseconds; burst the effective one
 * (token_bucket: capacity, default N; leaky_bucket, gcra: excess
 * tolerated, default 0; others 0); delay for leaky_bucket and gcra (the
 * excess passed at once; nodelay: delay = burst), 0 for others; dry 1
 * for a dry-run rule (never rejects, never delays), else 0.
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
    std::string_view algorithm;
    std::string_view limit;
    std::string_view windowUs;
    std::string_view burst;
    std::string_view cost;
    std::string_view delay;
    std::string_view dryRun;  /* "1": dry run, "0": enforced */
};

inline constexpr size_t kArgsPerRule = 7;
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

}  // namespace rl
