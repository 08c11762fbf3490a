#include "state_read.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

namespace rl {

size_t stateReadHeadBytes(size_t n) {
    return keyCallHeadBytes(n, 0);
}

unsigned char* stateReadHead(unsigned char* p, size_t n) {
    return keyCallHead(p, n, 0, nullptr, 0);
}

size_t keyCallHeadBytes(size_t n, size_t calendars) {
    return stateReadRecords(n) * requestBytes(0) + 24 * n +
           kBoundsBytes * calendars;
}

unsigned char* keyCallHead(unsigned char* p, size_t n, uint64_t units,
                           const int64_t* const* bounds, int64_t t) {
    for (size_t k = 0; k < n; k++) {
        if (k % kMaxRulesPerCall == 0) {
            size_t left = n - k;
            p = requestHead(p, left < kMaxRulesPerCall ? left
                                                       : kMaxRulesPerCall,
                            t);
        }
        p = ruleRecord(p, k + 1, k + 1, units);
        if (bounds != nullptr && bounds[k] != nullptr) {
            p = boundsRecord(p, bounds[k]);
        }
    }
    return p;
}

bool decodeStateRead(const redisReply* reply, size_t n, RuleOutcome* out,
                     bool* allowed) {
    size_t want = kClockBytes + replyBytes(n);
    if (n == 0 || replyClock(reply) <= 0 || reply->len < want) {
        return false;
    }
    const char* trailer = reply->str + want;
    size_t trailerLen = reply->len - want;
    if (!validTrailer(trailer, trailerLen, n)) {
        return false;
    }
    *allowed = true;
    size_t at = kClockBytes;
    size_t next = 0;
    for (size_t from = 0; from < n; from += kMaxRulesPerCall) {
        size_t m = n - from < kMaxRulesPerCall ? n - from : kMaxRulesPerCall;
        redisReply part;
        std::memset(&part, 0, sizeof(part));
        part.type = REDIS_REPLY_STRING;
        part.str = reply->str + at;
        part.len = replyBytes(m);
        at += part.len;
        RuleAsked asked[kMaxRulesPerCall];
        for (size_t k = 0; k < m; k++) {
            asked[k] = {0, false};
        }
        bool admitted = false;
        if (decodeReply(&part, m, asked, &admitted, out + from) !=
            ReplyStatus::Ok) {
            return false;
        }
        int64_t limits[kMaxRulesPerCall] = {};
        int64_t grant = 0;
        trailerFor(trailer, trailerLen, &next, from, m, limits, &grant);
        for (size_t k = 0; k < m; k++) {
            out[from + k].limit = limits[k];
        }
        *allowed = *allowed && admitted;
    }
    return true;
}

}  // namespace rl
