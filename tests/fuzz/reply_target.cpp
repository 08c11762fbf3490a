/* The script's reply as the module reads it (src/redis/link.cpp
 * Link::onReply, src/redis/batch.cpp replyPart): Redis' clock, each call's
 * part, the trailer of overrides and lease grants; then each part decoded with what the
 * call asked (src/core/reply.cpp). The input picks the batch's shape
 * (calls, rules, costs, dry runs), then gives the reply: RESP through
 * hiredis' own reader, or (first byte's top bit) the bytes of a string
 * reply as they are, so the fuzzer reaches the figures without first
 * learning RESP. */
#include "fuzz.hpp"

#include "core/rate.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <cstring>

namespace rl::fuzz {
namespace {

struct Shape {
    size_t calls = 0;
    size_t rules[4] = {};
    RuleAsked asked[4][8] = {};
};

/* A part decoded Ok keeps decodeReply()'s promises. */
void checkOutcomes(const Shape& s, size_t call, bool allowed,
                   const RuleOutcome* out) {
    bool rejects = false;
    for (size_t i = 0; i < s.rules[call]; i++) {
        const RuleOutcome& o = out[i];
        const RuleAsked& a = s.asked[call][i];
        FUZZ_CHECK(o.remaining >= 0 && o.resetMs >= 0);
        FUZZ_CHECK(o.retryMs >= 0 && o.delayMs >= 0 && o.retryUs >= 0);
        FUZZ_CHECK(o.retryMs == msCeil(o.retryUs));
        FUZZ_CHECK(!a.dryRun || o.delayMs == 0);
        FUZZ_CHECK(o.delayMs <= msCeil(a.maxDelayUs));
        FUZZ_CHECK(o.retryUs <= a.maxRetryUs);
        FUZZ_CHECK(allowed || o.delayMs == 0);
        rejects = rejects || (o.retryMs > 0 && !a.dryRun);
    }
    FUZZ_CHECK(allowed == !rejects);
}

/* What Link::onReply() does with a batch's reply. */
void examine(const redisReply* reply, const Shape& s) {
    bool noScript = isNoScript(reply);
    FUZZ_CHECK(!noScript || reply->type == REDIS_REPLY_ERROR);
    int64_t clock = replyClock(reply);
    FUZZ_CHECK(clock >= -1);

    size_t want = kClockBytes, rules = 0;
    for (size_t c = 0; c < s.calls; c++) {
        want += replyBytes(s.rules[c]);
        rules += s.rules[c];
    }
    if (reply->type != REDIS_REPLY_STRING || reply->len < want ||
        clock <= 0 ||
        !validTrailer(reply->str + want, reply->len - want, rules)) {
        clock = -1;
    }

    const char* trailer = nullptr;
    size_t trailerLen = 0, record = 0, rule = 0, at = kClockBytes;
    if (clock > 0 && reply->len > want) {
        trailer = reply->str + want;
        trailerLen = reply->len - want;
    }
    for (size_t c = 0; c < s.calls; c++) {
        int64_t limits[kMaxRulesPerCall], grant = 0;
        if (trailer != nullptr) {
            trailerFor(trailer, trailerLen, &record, rule, s.rules[c],
                       limits, &grant);
            for (size_t i = 0; i < s.rules[c]; i++) {
                FUZZ_CHECK(limits[i] >= 0 &&
                           limits[i] <= static_cast<int64_t>(kMaxLimit));
            }
            FUZZ_CHECK(grant >= 0 && grant <= (int64_t{1} << 53));
        }
        rule += s.rules[c];

        /* replyPart(): this call's slice of a string reply */
        const redisReply* part = reply;
        redisReply slice;
        size_t len = replyBytes(s.rules[c]);
        if (reply->type == REDIS_REPLY_STRING && reply->str != nullptr) {
            if (at + len <= reply->len) {
                std::memset(&slice, 0, sizeof slice);
                slice.type = REDIS_REPLY_STRING;
                slice.len = len;
                slice.str = reply->str + at;
                part = &slice;
            }
            at += len;
        }
        bool allowed = false;
        RuleOutcome out[8];
        ReplyStatus st = decodeReply(part, s.rules[c], s.asked[c],
                                     &allowed, out);
        FUZZ_CHECK(st != ReplyStatus::NoScript || noScript);
        if (st == ReplyStatus::Ok) {
            FUZZ_CHECK(part->type == REDIS_REPLY_STRING);
            checkOutcomes(s, c, allowed, out);
        }
    }
    /* a valid trailer's records all belong to some call's rules */
    FUZZ_CHECK(trailer == nullptr || record == trailerLen /
                                                   kTrailerRecordBytes);
}

/* hiredis (0.14 and 1.x) allocates an array's element pointers when it
 * reads its header: "*2147483647" asks for 16 GB. Redis is no such
 * peer; the fuzzer is kept off it. */
bool hugeArray(const char* p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if ((p[i] == '*' || p[i] == '%' || p[i] == '~' || p[i] == '>') &&
            (i == 0 || p[i - 1] == '\n')) {
            long long v = 0;
            for (size_t k = i + 1; k < n && p[k] >= '0' && p[k] <= '9';
                 k++) {
                v = v * 10 + (p[k] - '0');
                if (v > 4096) {
                    return true;
                }
            }
        }
    }
    return false;
}

}  // namespace

void reply(const uint8_t* data, size_t size) {
    Input in(data, size);
    uint8_t head = in.byte();
    Shape s;
    s.calls = 1 + (head & 3u);
    for (size_t c = 0; c < s.calls; c++) {
        uint8_t b = in.byte();
        s.rules[c] = 1 + (b & 7u);
        for (size_t i = 0; i < s.rules[c]; i++) {
            auto r = static_cast<unsigned>(in.byte());
            /* bits 5-6: the longest delay the rule asks: none, 300 ms,
             * a day, unbounded; bit 7: the longest retry it gives, a
             * minute or unbounded */
            static constexpr int64_t kDelays[] = {0, 300000,
                                                  86400000000, INT64_MAX};
            s.asked[c][i] = {1u + (r & 15u), (r & 16u) != 0,
                             kDelays[(r >> 5) & 3u],
                             (r & 128u) != 0 ? INT64_MAX : 60000000};
        }
    }
    size_t len;
    const char* rest = in.rest(&len);

    if (head & 0x80u) {
        /* the reply's bytes as a string reply, NUL-terminated as
         * hiredis leaves them */
        char* str = static_cast<char*>(std::malloc(len + 1));
        std::memcpy(str, rest, len);
        str[len] = '\0';
        redisReply r;
        std::memset(&r, 0, sizeof r);
        r.type = (head & 0x40u) ? REDIS_REPLY_ERROR : REDIS_REPLY_STRING;
        r.str = str;
        r.len = len;
        examine(&r, s);
        std::free(str);
        return;
    }

    if (hugeArray(rest, len)) {
        return;
    }
    redisReader* reader = redisReaderCreate();
    if (reader == nullptr) {
        return;
    }
    if (redisReaderFeed(reader, rest, len) == REDIS_OK) {
        void* got = nullptr;
        while (redisReaderGetReply(reader, &got) == REDIS_OK &&
               got != nullptr) {
            examine(static_cast<redisReply*>(got), s);
            freeReplyObject(got);
            got = nullptr;
        }
    }
    redisReaderFree(reader);
}

}  // namespace rl::fuzz
