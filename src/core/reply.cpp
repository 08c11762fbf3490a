#include "reply.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

namespace rl {
namespace {

/* Beyond what the script's doubles hold exactly: not a script reply. */
constexpr double kMaxFigure = 9007199254740992.0; /* 2^53 */

/* The i-th figure of the reply as a whole number in [0, 2^53], or -1. */
int64_t figureAt(const char* bytes, size_t i) {
    double d = doubleAt(bytes, i);
    if (!(d >= 0 && d <= kMaxFigure)) {
        return -1; /* negative, too large, NaN */
    }
    /* in range, the conversion is exact for whole numbers (std::floor
     * is a libm call, six per request) */
    auto v = static_cast<int64_t>(d);
    return static_cast<double>(v) == d ? v : -1; /* fractional */
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

ReplyStatus decodeReply(const redisReply* reply, size_t rules,
                        bool* allowed, RuleOutcome* out, int64_t* nowUs) {
    if (reply == nullptr) {
        return ReplyStatus::Malformed;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (reply->str != nullptr && reply->len >= 8 &&
            std::memcmp(reply->str, "NOSCRIPT", 8) == 0) {
            return ReplyStatus::NoScript;
        }
        return ReplyStatus::Error;
    }
    if (reply->type != REDIS_REPLY_STRING || reply->str == nullptr ||
        reply->len != replyBytes(rules)) {
        return ReplyStatus::Malformed;
    }
    const char* f = reply->str;
    const int64_t a = figureAt(f, 0);
    if (a != 0 && a != 1) {
        return ReplyStatus::Malformed;
    }
    const bool admitted = a == 1;
    bool anyRetry = false;
    for (size_t i = 0; i < rules; i++) {
        int64_t e[kFiguresPerRule];
        for (size_t j = 0; j < kFiguresPerRule; j++) {
            e[j] = figureAt(f, 1 + kFiguresPerRule * i + j);
            if (e[j] < 0) {
                return ReplyStatus::Malformed;
            }
        }
        /* A rejected request waits for nothing. */
        if (!admitted && e[3] != 0) {
            return ReplyStatus::Malformed;
        }
        out[i] = {e[0], msCeil(e[1]), msCeil(e[2]), msCeil(e[3]), e[2]};
        anyRetry = anyRetry || e[2] > 0;
    }
    /* A rejection names at least one rule that rejected (an admission
     * may name dry-run rules that would have). */
    if (!admitted && !anyRetry) {
        return ReplyStatus::Malformed;
    }
    const int64_t t = figureAt(f, 1 + kFiguresPerRule * rules);
    if (t < 0) {
        return ReplyStatus::Malformed;
    }
    *allowed = admitted;
    *nowUs = t;
    return ReplyStatus::Ok;
}

}  // namespace rl
