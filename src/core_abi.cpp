/* The C ABI of the core (rl_core.h): every entry is noexcept and turns
 * an exception (only std::bad_alloc can happen) into a failure value. */

#include "rl_core.h"

#include <cstring>
#include <string>
#include <string_view>

#include "core/algorithm.hpp"
#include "core/outcome.hpp"
#include "core/rate.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"

static_assert(sizeof(rl_outcome_t) == sizeof(rl::RuleOutcome),
              "rl_outcome_t mirrors rl::RuleOutcome");
static_assert(RL_RULE_ID_LEN == rl::kRuleIdLen, "rule id length");
static_assert(RL_MAX_RULES == rl::kMaxRulesPerCall, "rules per call");
static_assert(RL_ALGORITHM_CONCURRENCY ==
                  static_cast<int>(rl::Algorithm::Concurrency),
              "the in-flight limit's algorithm");
static_assert(RL_STATE_KEY_MAX == 1 + rl::kMaxPlainValue + 2 + rl::kRuleIdLen &&
                  rl::kDigestValueLen <= rl::kMaxPlainValue,
              "the longest state key");

int rl_parse_rate(const char *text, size_t len, uint64_t *limit,
                  uint64_t *window_us) noexcept try {
    auto rate = rl::parseRate({text, len});
    if (!rate) {
        return -1;
    }
    *limit = rate->limit;
    *window_us = rate->windowUs;
    return 0;
} catch (...) {
    return -1;
}

int rl_parse_calendar_rate(const char *text, size_t len, uint64_t *limit,
                           size_t *per) noexcept {
    auto rate = rl::parseCalendarRate({text, len});
    if (!rate) {
        return -1;
    }
    *limit = rate->limit;
    *per = rate->per;
    return 0;
}

int rl_rule_id(const char *zone, size_t zone_len, const char *name,
               size_t name_len, const char *algorithm, size_t algorithm_len,
               uint64_t window_us, const char *key, size_t key_len,
               char *out) noexcept try {
    std::string id = rl::ruleId({zone, zone_len}, {name, name_len},
                                {algorithm, algorithm_len}, window_us,
                                {key, key_len});
    std::memcpy(out, id.data(), rl::kRuleIdLen);
    return 0;
} catch (...) {
    return -1;
}

char *rl_state_key_write(char *out, const char *prefix, size_t prefix_len,
                         const char *value, size_t len,
                         const char *rule_id) noexcept {
    return rl::writeStateKey(out, {prefix, prefix_len}, {value, len},
                             {rule_id, rl::kRuleIdLen});
}

int rl_algorithm_from_name(const char *name, size_t len) noexcept {
    auto a = rl::algorithmFromName({name, len});
    return a ? static_cast<int>(*a) : -1;
}

const char *rl_algorithm_name(int algorithm, size_t *len) noexcept {
    std::string_view n = rl::algorithmName(static_cast<rl::Algorithm>(algorithm));
    *len = n.size();
    return n.data();
}

int rl_algorithm_takes_burst(int algorithm) noexcept {
    return rl::takesBurst(static_cast<rl::Algorithm>(algorithm)) ? 1 : 0;
}

int rl_algorithm_takes_delay(int algorithm) noexcept {
    return rl::takesDelay(static_cast<rl::Algorithm>(algorithm)) ? 1 : 0;
}

uint64_t rl_algorithm_default_burst(int algorithm, uint64_t limit) noexcept {
    return rl::defaultBurst(static_cast<rl::Algorithm>(algorithm), limit);
}

int rl_algorithm_exact(int algorithm, uint64_t limit, uint64_t window_us,
                       uint64_t burst, uint64_t delay,
                       uint64_t max_cost) noexcept {
    rl::Params p{static_cast<rl::Algorithm>(algorithm), limit, window_us,
                 burst, delay};
    return rl::exactArithmetic(p, max_cost) ? 1 : 0;
}

uint64_t rl_algorithm_capacity(int algorithm, uint64_t limit,
                               uint64_t burst) noexcept {
    rl::Params p{static_cast<rl::Algorithm>(algorithm), limit, 0, burst, 0};
    return rl::capacity(p);
}

void rl_reply_bounds(int algorithm, uint64_t limit, uint64_t window_us,
                     uint64_t burst, uint64_t delay, uint64_t cost,
                     rl_reply_bounds_t *out) noexcept {
    rl::Params p{static_cast<rl::Algorithm>(algorithm), limit, window_us,
                 burst, delay};
    out->max_delay_us = rl::maxDelayUs(p);
    out->max_retry_us = rl::maxRetryUs(p, cost);
}

const char *rl_script_text(size_t *len) noexcept {
    *len = rl::scriptText().size();
    return rl::scriptText().data();
}

const char *rl_script_sha(void) noexcept {
    return rl::scriptSha().data();
}

size_t rl_spec_len(int algorithm, size_t name_len) noexcept {
    return rl::specBytes(rl::algorithmName(static_cast<rl::Algorithm>(
                             algorithm)),
                         {"", 0}) + name_len;
}

unsigned char *rl_spec_write(unsigned char *out, int algorithm,
                             const char *name, size_t name_len,
                             uint64_t limit, uint64_t window_us,
                             uint64_t burst, uint64_t delay, int dry,
                             int burst_follows, int kind) noexcept {
    return rl::writeSpec(out,
                         rl::algorithmName(static_cast<rl::Algorithm>(
                             algorithm)),
                         {name, name_len}, limit, window_us, burst, delay,
                         dry != 0, burst_follows != 0,
                         (kind & RL_SPEC_CALENDAR) != 0, dry == 2,
                         (kind & RL_SPEC_ADAPTIVE) != 0);
}

rl_reply_status_e rl_decode_reply(const void *reply, size_t rules,
                                  const uint64_t *costs,
                                  const unsigned char *dry,
                                  const rl_reply_bounds_t *bounds,
                                  int *allowed, rl_outcome_t *out) noexcept {
    bool ok = false;
    rl::RuleAsked asked[rl::kMaxRulesPerCall];
    if (rules > rl::kMaxRulesPerCall) {
        return RL_REPLY_MALFORMED;
    }
    for (size_t i = 0; i < rules; i++) {
        asked[i] = {costs[i], dry[i] != 0};
        if (bounds != nullptr) {
            asked[i].maxDelayUs = bounds[i].max_delay_us;
            asked[i].maxRetryUs = bounds[i].max_retry_us;
        }
    }
    auto *o = reinterpret_cast<rl::RuleOutcome *>(out);
    switch (rl::decodeReply(static_cast<const redisReply *>(reply), rules,
                            asked, &ok, o)) {
    case rl::ReplyStatus::Ok:
        *allowed = ok ? 1 : 0;
        return RL_REPLY_OK;
    case rl::ReplyStatus::NoScript:
        return RL_REPLY_NOSCRIPT;
    case rl::ReplyStatus::Error:
        return RL_REPLY_ERROR;
    default:
        return RL_REPLY_MALFORMED;
    }
}

size_t rl_binding_rule(const rl_outcome_t *o, size_t n,
                       int allowed) noexcept {
    return rl::bindingRule(reinterpret_cast<const rl::RuleOutcome *>(o), n,
                           allowed != 0);
}

int64_t rl_seconds_ceil(int64_t ms) noexcept {
    return rl::secondsCeil(ms);
}

size_t rl_printable(char *out, size_t cap, const char *value,
                    size_t len) noexcept {
    return rl::printable(out, cap, {value, len});
}
