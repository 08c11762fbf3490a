#include "reply.hpp"

#include "rate.hpp"
#include "script.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

namespace rl {
namespace {

/* Beyond what the script's doubles hold exactly: not a script reply. */
constexpr double kMaxFigure = 9007199254740992.0; /* 2^53 */

/* The i-th figure of the reply as a whole number in [-2^53, 2^53], or
 * false. */
bool wholeAt(const char* bytes, size_t i, int64_t* v) {
    double d = doubleAt(bytes, i);
    if (!(d >= -kMaxFigure && d <= kMaxFigure)) {
        return false; /* too large, NaN */
    }
    /* in range, the conversion is exact for whole numbers (std::floor
     * is a libm call, three per rule) */
    *v = static_cast<int64_t>(d);
    return static_cast<double>(*v) == d; /* else fractional */
}

}  // namespace

double doubleAt(const char* bytes, size_t i) {
    double d;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(&d, bytes + 8 * i, sizeof d);
#else
    const auto* b = reinterpret_cast<const unsigned char*>(bytes) + 8 * i;
    uint64_t bits = 0;
    for (int k = 7; k >= 0; k--) {
        bits = bits << 8 | b[k];
    }
    std::memcpy(&d, &bits, sizeof d);
#endif
    return d;
}

bool isNoScript(const redisReply* reply) {
    return reply != nullptr && reply->type == REDIS_REPLY_ERROR &&
           reply->str != nullptr && reply->len >= 8 &&
           std::memcmp(reply->str, "NOSCRIPT", 8) == 0;
}

int64_t replyClock(const redisReply* reply) {
    int64_t t;
    if (reply == nullptr || reply->type != REDIS_REPLY_STRING ||
        reply->str == nullptr || reply->len < kClockBytes ||
        !wholeAt(reply->str, 0, &t) || t < 0) {
        return -1;
    }
    return t;
}

ReplyStatus decodeFigures(const redisReply* part, size_t rules,
                          const RuleAsked* asked, bool* allowed,
                          Figures* out) {
    if (part == nullptr) {
        return ReplyStatus::Malformed;
    }
    if (part->type == REDIS_REPLY_ERROR) {
        return isNoScript(part) ? ReplyStatus::NoScript : ReplyStatus::Error;
    }
    if (part->type != REDIS_REPLY_STRING || part->str == nullptr ||
        part->len != replyBytes(rules)) {
        return ReplyStatus::Malformed;
    }
    const char* f = part->str;
    bool admitted = true;
    for (size_t i = 0; i < rules; i++) {
        int64_t left, reset, verdict;
        if (!wholeAt(f, kFiguresPerRule * i, &left) || left < 0 ||
            !wholeAt(f, kFiguresPerRule * i + 1, &reset) || reset < 0 ||
            !wholeAt(f, kFiguresPerRule * i + 2, &verdict)) {
            return ReplyStatus::Malformed;
        }
        if ((verdict < 0 && !asked[i].dryRun &&
             -verdict > asked[i].maxDelayUs) ||
            verdict > asked[i].maxRetryUs) {
            /* a delay the rule never asks (held for years, or at all),
             * a retry it never gives (the deny cache would reject the
             * key for as long, across reloads) */
            return ReplyStatus::Malformed;
        }
        out[i] = {left, reset, verdict > 0 ? verdict : 0,
                  verdict < 0 && !asked[i].dryRun ? -verdict : 0};
        admitted = admitted && (verdict <= 0 || asked[i].dryRun);
    }
    for (size_t i = 0; i < rules; i++) {
        if (!admitted) {
            out[i].delayUs = 0;     /* nothing counted, nothing shaped */
        } else if (out[i].retryUs == 0) {
            int64_t cost = static_cast<int64_t>(asked[i].cost);
            out[i].remaining = out[i].remaining > cost
                                   ? out[i].remaining - cost : 0;
        }
    }
    *allowed = admitted;
    return ReplyStatus::Ok;
}

namespace {

/* A trailer record's rule: an override's, or a grant's request's last
 * (-1 - index); *grant tells which. */
int64_t recordRule(int64_t index, bool* grant) {
    *grant = index < 0;
    return index < 0 ? -1 - index : index;
}

}  // namespace

bool validTrailer(const char* bytes, size_t len, size_t rules) {
    if (len % kTrailerRecordBytes != 0) {
        return false;
    }
    int64_t lastOverride = -1, lastGrant = -1;
    for (size_t r = 0; r < len / kTrailerRecordBytes; r++) {
        int64_t index, value;
        bool grant;
        if (!wholeAt(bytes, 2 * r, &index) ||
            !wholeAt(bytes, 2 * r + 1, &value) || value < 1) {
            return false;
        }
        int64_t rule = recordRule(index, &grant);
        /* in order: past every record before, a grant after its own
         * request's overrides (whose rules are at most its last) */
        if (rule >= static_cast<int64_t>(rules) || rule <= lastGrant ||
            (grant ? rule < lastOverride : rule <= lastOverride) ||
            (!grant && value > static_cast<int64_t>(kMaxLimit))) {
            return false;
        }
        (grant ? lastGrant : lastOverride) = rule;
    }
    return true;
}

bool trailerFor(const char* bytes, size_t len, size_t* next, size_t from,
                size_t n, int64_t* limits, int64_t* grant) {
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        limits[i] = 0;
    }
    *grant = 0;
    for (; *next < len / kTrailerRecordBytes; ++*next) {
        bool isGrant;
        auto rule = static_cast<size_t>(recordRule(
            static_cast<int64_t>(doubleAt(bytes, 2 * *next)), &isGrant));
        if (rule >= from + n) {
            break;
        }
        auto value = static_cast<int64_t>(doubleAt(bytes, 2 * *next + 1));
        if (rule < from) {
            continue;
        }
        if (isGrant) {
            *grant = rule == from + n - 1 ? value : 0;
        } else {
            limits[rule - from] = value;
            any = true;
        }
    }
    return any;
}

ReplyStatus decodeReply(const redisReply* part, size_t rules,
                        const RuleAsked* asked, bool* allowed,
                        RuleOutcome* out) {
    Figures f[kMaxRulesPerCall];
    if (rules > kMaxRulesPerCall) {
        return ReplyStatus::Malformed;
    }
    ReplyStatus s = decodeFigures(part, rules, asked, allowed, f);
    if (s != ReplyStatus::Ok) {
        return s;
    }
    for (size_t i = 0; i < rules; i++) {
        out[i] = {f[i].remaining, msCeil(f[i].resetUs), msCeil(f[i].retryUs),
                  msCeil(f[i].delayUs), f[i].retryUs};
    }
    return ReplyStatus::Ok;
}

}  // namespace rl
