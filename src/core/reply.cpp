#include "reply.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

namespace rl {
namespace {

/* Beyond what the script's doubles hold exactly: not a script reply. */
constexpr int64_t kMaxFigure = int64_t(1) << 53;

bool isInteger(const redisReply* r) {
    return r != nullptr && r->type == REDIS_REPLY_INTEGER;
}

bool isFigure(const redisReply* r) {
    return isInteger(r) && r->integer >= 0 && r->integer <= kMaxFigure;
}

}  // namespace

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
    if (reply->type != REDIS_REPLY_ARRAY ||
        reply->elements != replyLength(rules) ||
        reply->element == nullptr) {
        return ReplyStatus::Malformed;
    }
    const redisReply* a = reply->element[0];
    if (!isInteger(a) || (a->integer != 0 && a->integer != 1)) {
        return ReplyStatus::Malformed;
    }
    const bool admitted = a->integer == 1;
    bool anyRetry = false;
    for (size_t i = 0; i < rules; i++) {
        redisReply* const* e = reply->element + 1 + kFiguresPerRule * i;
        for (size_t j = 0; j < kFiguresPerRule; j++) {
            if (!isFigure(e[j])) {
                return ReplyStatus::Malformed;
            }
        }
        /* A rejected request waits for nothing. */
        if (!admitted && e[3]->integer != 0) {
            return ReplyStatus::Malformed;
        }
        out[i] = {e[0]->integer, msCeil(e[1]->integer),
                  msCeil(e[2]->integer), msCeil(e[3]->integer),
                  e[2]->integer};
        anyRetry = anyRetry || e[2]->integer > 0;
    }
    /* A rejection names at least one rule that rejected (an admission
     * may name dry-run rules that would have). */
    if (!admitted && !anyRetry) {
        return ReplyStatus::Malformed;
    }
    const redisReply* t = reply->element[1 + kFiguresPerRule * rules];
    if (!isInteger(t) || t->integer < 0) {
        return ReplyStatus::Malformed;
    }
    *allowed = admitted;
    *nowUs = t->integer;
    return ReplyStatus::Ok;
}

}  // namespace rl
