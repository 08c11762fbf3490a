/* Decoding the script's reply (see lua/rl.lua):
 *   { allowed, remaining_1, reset_ms_1, retry_ms_1, ..., retry_ms_n } */
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

ReplyStatus decodeReply(const redisReply* reply, size_t rules,
                        bool* allowed, RuleOutcome* out);

}  // namespace rl
