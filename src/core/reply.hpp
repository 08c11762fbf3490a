/* Decoding the script's reply (see lua/rl.lua):
 *   { allowed, remaining_1, reset_ms_1, retry_ms_1, ..., retry_ms_n,
 *     now_us } */
#pragma once

#include <cstddef>
#include <cstdint>

struct redisReply;

namespace rl {

struct RuleOutcome {
    int64_t remaining;
    int64_t resetMs;
    int64_t retryMs;  /* 0: this rule admits the request */
};

enum class ReplyStatus {
    Ok,         /* allowed and outcomes are set */
    NoScript,   /* NOSCRIPT: send the script text with EVAL */
    Error,      /* an error reply (OOM, BUSY, script error...) */
    Malformed,  /* anything else: wrong type, size, negative figures */
};

/* On Ok, *allowed, out[0..rules) and *nowUs (the time the script
 * decided at, what a refund sends back) are set. */
ReplyStatus decodeReply(const redisReply* reply, size_t rules,
                        bool* allowed, RuleOutcome* out, int64_t* nowUs);

}  // namespace rl
