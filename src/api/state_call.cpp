/*
 * api/state_call.cpp: the script's call that reads (or credits) key
 * values' states, and its reply read (see api/state_call.hpp).
 */

#include "state_call.hpp"

#include "clock.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"
#include "core/state_read.hpp"

namespace rl::api {

Args *makeArgs(ngx_pool_t *pool, size_t cap) {
    auto *a = static_cast<Args *>(ngx_palloc(pool, sizeof(Args)));
    if (a == nullptr) {
        return nullptr;
    }
    a->argv = static_cast<const char **>(
        ngx_palloc(pool, cap * sizeof(const char *)));
    a->len = static_cast<size_t *>(ngx_palloc(pool, cap * sizeof(size_t)));
    if (a->argv == nullptr || a->len == nullptr) {
        return nullptr;
    }
    a->argc = 0;
    a->cap = static_cast<int>(cap);
    a->full = false;
    return a;
}

Args *statesCall(ngx_pool_t *pool, const ngx_str_t &prefix, const States &s,
                 bool eval, uint64_t units) {
    size_t n = s.n;
    Args *a = makeArgs(pool, 5 + 3 * n);
    size_t calendars = 0;
    for (size_t k = 0; k < n; k++) {
        calendars += s.bounds[k] != nullptr ? 1 : 0;
    }
    auto *head = static_cast<u_char *>(
        ngx_pnalloc(pool, keyCallHeadBytes(n, calendars)));
    auto *nkeys = static_cast<u_char *>(ngx_pnalloc(pool, NGX_INT64_LEN));
    if (a == nullptr || head == nullptr || nkeys == nullptr) {
        return nullptr;
    }
    a->push(eval ? "EVAL" : "EVALSHA", eval ? 4 : 7);
    a->push(eval ? scriptText() : scriptSha());
    auto count = static_cast<int64_t>(2 * n);   /* keys, block keys */
    a->push(nkeys, static_cast<size_t>(ngx_http_rl_decimal(nkeys, count) -
                                       nkeys));
    for (size_t k = 0; k < n; k++) {
        auto *key = static_cast<char *>(
            ngx_pnalloc(pool, prefix.len + RL_STATE_KEY_MAX));
        if (key == nullptr) {
            return nullptr;
        }
        char *end = rl_state_key_write(
            key, reinterpret_cast<const char *>(prefix.data), prefix.len,
            s.values[k].data(), s.values[k].size(), s.rules[k]->id);
        a->push(key, static_cast<size_t>(end - key));
    }
    for (size_t k = 0; k < n; k++) {
        /* each key's block key: its first bytes */
        a->push(a->argv[3 + k], blockKeyLength(a->len[3 + k]));
    }
    /* (RL_TEST_CLOCK=nginx: at nginx's time, as its requests) */
    u_char *p = keyCallHead(head, n, units, s.bounds,
                            ngx_http_rl_nginx_clock ? realtimeUs() : 0);
    a->push(head, static_cast<size_t>(p - head));
    for (size_t k = 0; k < n; k++) {
        a->push(s.specs[k]);
    }
    if (units > 0) {
        a->push(callWord(CallKind::Credit));
    }
    return a;
}

bool readStates(ngx_pool_t *pool, const redisReply *reply, size_t n,
                rl_outcome_t *out, bool *allowed) {
    auto *read = static_cast<RuleOutcome *>(
        ngx_palloc(pool, n * sizeof(RuleOutcome)));
    if (read == nullptr || !decodeStateRead(reply, n, read, allowed)) {
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        out[k] = {read[k].remaining, read[k].resetMs, read[k].retryMs,
                  read[k].delayMs, read[k].retryUs, read[k].limit};
    }
    return true;
}

}  // namespace rl::api
