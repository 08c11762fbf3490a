#include "reply.hpp"

#include <hiredis/hiredis.h>

#include <cstring>

namespace rl {
namespace {

constexpr int64_t kMaxMs = int64_t(1) << 45;

bool isInteger(const redisReply* r) {
    return r != nullptr && r->type == REDIS_REPLY_INTEGER;
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
        reply->elements != 2 + 3 * rules || reply->element == nullptr) {
        return ReplyStatus::Malformed;
    }
    const redisReply* a = reply->element[0];
    if (!isInteger(a) || (a->integer != 0 && a->integer != 1)) {
        return ReplyStatus::Malformed;
    }
    bool anyRetry = false;
    for (size_t i = 0; i < rules; i++) {
        redisReply* const* e = reply->element + 1 + 3 * i;
        for (int j = 0; j < 3; j++) {
            if (!isInteger(e[j]) || e[j]->integer < 0 ||
                e[j]->integer > kMaxMs) {
                return ReplyStatus::Malformed;
            }
        }
        out[i] = {e[0]->integer, e[1]->integer, e[2]->integer};
        anyRetry = anyRetry || out[i].retryMs > 0;
    }
    /* A rejection names at least one rule that rejected; an admission
     * none. */
    if ((a->integer == 0) != anyRetry) {
        return ReplyStatus::Malformed;
    }
    const redisReply* t = reply->element[1 + 3 * rules];
    if (!isInteger(t) || t->integer < 0) {
        return ReplyStatus::Malformed;
    }
    *allowed = a->integer == 1;
    *nowUs = t->integer;
    return ReplyStatus::Ok;
}

}  // namespace rl
