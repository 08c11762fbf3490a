/* Decoding the script's reply (see lua/rl.lua) to one request: one
 * string of little-endian doubles (whole numbers, exact below 2^53)
 *   allowed, remaining_1, reset_us_1, retry_us_1, delay_us_1, ...,
 *     delay_us_n, now_us
 * (one string rather than an array of integers: hiredis makes one object
 * per array element, a string is one). Times come in microseconds and
 * leave in milliseconds, rounded up (a retry of 1 us is 1 ms, never 0). */
#pragma once

#include <cstddef>
#include <cstdint>

struct redisReply;

namespace rl {

struct RuleOutcome {
    int64_t remaining;
    int64_t resetMs;
    int64_t retryMs;  /* 0: this rule admits the request */
    int64_t delayMs;  /* admitted, shaped by delay=: wait this long */
    int64_t retryUs = 0;  /* retryMs before rounding (the deny cache) */
};

enum class ReplyStatus {
    Ok,         /* allowed and outcomes are set */
    NoScript,   /* NOSCRIPT: send the script text with EVAL */
    Error,      /* an error reply (OOM, BUSY, script error...) */
    Malformed,  /* anything else: wrong type, size, negative figures */
};

/* Figures per rule in the reply. */
inline constexpr size_t kFiguresPerRule = 4;

/* Figures, and bytes, of one request's reply. A call carrying several
 * requests (a batch, src/batch.cpp) replies with their parts one after
 * the other in one string, each decoded as a reply of its own. */
constexpr size_t replyLength(size_t rules) {
    return 2 + kFiguresPerRule * rules;
}

constexpr size_t replyBytes(size_t rules) { return 8 * replyLength(rules); }

/* On Ok, *allowed, out[0..rules) and *nowUs (the time the script
 * decided at, what a refund sends back) are set. A rejection names a
 * rule that rejected (retry > 0) and delays nothing; an admission has
 * no retry. */
ReplyStatus decodeReply(const redisReply* reply, size_t rules,
                        bool* allowed, RuleOutcome* out, int64_t* nowUs);

/* The i-th little-endian double of packed bytes (the script's replies
 * and states). */
double doubleAt(const char* bytes, size_t i);

/* Microseconds to milliseconds, rounded up (non-negative input). */
constexpr int64_t msCeil(int64_t us) { return us / 1000 + (us % 1000 > 0); }

}  // namespace rl
