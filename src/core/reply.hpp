/* Decoding the script's reply (see lua/rl.lua): one string of
 * little-endian doubles (whole numbers, exact below 2^53)
 *   clock_us, then for each request of the call, for each of its rules:
 *     left, reset_us, verdict
 * (one string rather than an array of integers: hiredis makes one object
 * per array element, a string is one). A rule's verdict is its retry in
 * us when it would reject the request (> 0), else minus its delay (<= 0).
 * The script sends what each rule's check found and no more: whether
 * the request is admitted, what it leaves, and which delay applies
 * follow from the verdicts and from what the module asked (each rule's
 * cost, and whether it is a dry run), so the module works them out, as
 * lua/rl.lua and the C++ core's decide() define them. Every figure the
 * script packs costs Redis about 330 instructions. Times come in
 * microseconds and leave in milliseconds, rounded up (a retry of 1 us
 * is 1 ms, never 0). */
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithm.hpp"

struct redisReply;

namespace rl {

struct RuleOutcome {
    int64_t remaining;
    int64_t resetMs;
    int64_t retryMs;  /* 0: this rule admits the request */
    int64_t delayMs;  /* admitted, shaped by delay=: wait this long */
    int64_t retryUs = 0;  /* retryMs before rounding (the deny cache) */
    int64_t limit = 0;    /* a key value's override of N (0: none) */
};

enum class ReplyStatus {
    Ok,         /* allowed and outcomes are set */
    NoScript,   /* NOSCRIPT: send the script text with EVAL */
    Error,      /* an error reply (OOM, BUSY, script error...) */
    Malformed,  /* anything else: wrong type, size, negative figures */
};

/* Figures per rule in the reply. */
inline constexpr size_t kFiguresPerRule = 3;

/* Bytes before the requests' parts: Redis' clock. */
inline constexpr size_t kClockBytes = 8;

/* Figures, and bytes, of one request's part of the reply. A call
 * carrying several requests (a batch, src/redis/batch.cpp) replies with the
 * clock, then their parts one after the other, each decoded on its own
 * (replyPart()). */
constexpr size_t replyLength(size_t rules) { return kFiguresPerRule * rules; }

constexpr size_t replyBytes(size_t rules) { return 8 * replyLength(rules); }

/* What the module asked of one rule: the reply is read with it. A
 * delay longer than maxDelayUs (0: a rule without delay= never waits;
 * maxDelayUs() of src/core/algorithm.hpp), or a retry longer than
 * maxRetryUs (maxRetryUs() there), is no reply of the script's. */
struct RuleAsked {
    uint64_t cost;
    bool dryRun;
    int64_t maxDelayUs = INT64_MAX;
    int64_t maxRetryUs = INT64_MAX;
};

/* Redis lost the script (SCRIPT FLUSH, a restart, a failover): an error
 * reply starting "NOSCRIPT"; the call goes again with the script's text. */
bool isNoScript(const redisReply* reply);

/* Redis' clock, in us, that a call's requests were decided on (each
 * request's time is it minus how long it waited in nginx, the time a
 * refund sends back): the reply's first figure, read by the script for
 * every call. -1 when `reply` is not a reply of the script (an error,
 * another type, too short, a clock that is no whole number of at least
 * 0). */
int64_t replyClock(const redisReply* reply);

/* Decodes one request's part (a string of replyBytes(rules)): on Ok,
 * *allowed and out[0..rules) are set. The request is admitted unless a
 * rule that is not a dry run would reject it; it is then counted in
 * every rule that admits it (its remaining less its cost); a rejected
 * request, and a dry run, waits for nothing. */
ReplyStatus decodeReply(const redisReply* part, size_t rules,
                        const RuleAsked* asked, bool* allowed,
                        RuleOutcome* out);

/* The same, in the C++ core's figures, in microseconds (what decide()
 * gives for the same request: the differential test holds the two
 * alike). */
ReplyStatus decodeFigures(const redisReply* part, size_t rules,
                          const RuleAsked* asked, bool* allowed,
                          Figures* out);

/* The trailer, after the parts, in the order the script decided: for
 * each rule a key value's override decided, its index among the call's
 * rules (0: the first rule of the first request) and the limit it was
 * decided with (lua/rl.lua override()); for each request granted a lease
 * (SPEC section 6), minus (1 + the index of its last rule) and the units
 * granted. */
inline constexpr size_t kTrailerRecordBytes = 16;

/* Whether `bytes` (`len` of them) are such records: each names a rule
 * below `rules`, in order (overrides' indexes increasing, grants' too,
 * a request's overrides before its grant), with a limit a rate may have
 * (a whole number from 1 to kMaxLimit) or a grant of 1 to 2^53 units. */
bool validTrailer(const char* bytes, size_t len, size_t rules);

/* What the trailer says of the call whose rules are the call's [from,
 * from + n): limits[i] the override's limit of rule from + i, or 0, and
 * *grant the units granted to its lease (0: none; a grant counts only
 * for the call's last rule). *next is the first record not read yet
 * (start at 0, then keep it from call to call, in order). The trailer is
 * valid. Returns whether any rule has an override. */
bool trailerFor(const char* bytes, size_t len, size_t* next, size_t from,
                size_t n, int64_t* limits, int64_t* grant);

/* The i-th little-endian double of packed bytes (the script's replies
 * and states). */
double doubleAt(const char* bytes, size_t i);

/* Microseconds to milliseconds, rounded up (non-negative input). */
constexpr int64_t msCeil(int64_t us) { return us / 1000 + (us % 1000 > 0); }

}  // namespace rl
