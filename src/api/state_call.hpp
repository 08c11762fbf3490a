/* The script's call on key values' states that reads them without
 * counting (a cost of 0, which lua/rl.lua counts and writes nothing
 * for), or credits them: what the operator API's key read and credit
 * (api/keys.cpp) and a caller's own quota (api/quota.cpp, SPEC section
 * 14) send, and how its reply is read. Pure arithmetic is the core's
 * (core/state_read.hpp); this is its nginx side: arguments in the
 * request's pool. */
#pragma once

#include "ngx.hpp"

#include <string_view>

namespace rl::api {

/* A command's arguments, in the request's pool; sized for what it
 * carries (a rule name may have any number of states). */
struct Args {
    const char **argv;
    size_t *len;
    int argc;
    int cap;
    bool full;      /* a push found no room: never sent */

    void push(const void *p, size_t n) {
        if (argc == cap) {
            full = true;
            return;
        }
        argv[argc] = static_cast<const char *>(p);
        len[argc++] = n;
    }
    void push(std::string_view s) { push(s.data(), s.size()); }
};

/* Room for cap arguments; NULL when out of memory. */
Args *makeArgs(ngx_pool_t *pool, size_t cap);

/* The states of one call, each its rule's, with its key value, its
 * calendar period's bounds (3 numbers, or NULL for a rule of no
 * calendar) and the spec it is read with. */
struct States {
    size_t n;
    ngx_http_rl_rule_t *const *rules;
    const std::string_view *values;
    const int64_t *const *bounds;
    const std::string_view *specs;
};

/* EVAL[SHA] script 2n key_1..key_n blk_1..blk_n head spec_1..spec_n
 * [credit]: each record of cost `units` (0: a read; else the script's
 * "credit" of that many), at Redis' time (RL_TEST_CLOCK=nginx: nginx's,
 * as its requests); eval: with the script's text (Redis lost it). The
 * keys are each value's state key in the zone's prefix. NULL when out
 * of memory. */
Args *statesCall(ngx_pool_t *pool, const ngx_str_t &prefix, const States &s,
                 bool eval, uint64_t units = 0);

/* The script's reply to such a call: out[0..n) each state's figures (a
 * key value's override of N in its limit), *allowed whether every
 * state admits a request. False when it is no reply of the script's. */
bool readStates(ngx_pool_t *pool, const redisReply *reply, size_t n,
                rl_outcome_t *out, bool *allowed);

}  // namespace rl::api
