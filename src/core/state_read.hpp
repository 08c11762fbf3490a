/* The operator API's read of one key value's state in every state of a
 * rule name (SPEC section 8, GET /1/rules/NAME/keys/VALUE): one script
 * call whose records each carry at most kMaxRulesPerCall rules of cost
 * 0 (a request's rule count is a small number in the head, lua/rl.lua),
 * however many states the name has: rules of one name written in many
 * places with other windows or keys have one each. Pure: the nginx side
 * (src/api_keys.cpp) sends the call and hands the reply here. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "reply.hpp"
#include "script.hpp"

namespace rl {

/* Records of a read of n states, and the bytes of its head. */
constexpr size_t stateReadRecords(size_t n) {
    return n == 0 ? 0 : (n + kMaxRulesPerCall - 1) / kMaxRulesPerCall;
}

/* Writes the head: state k (0-based) reads key k + 1 with spec k + 1;
 * returns the end (stateReadHeadBytes(n) bytes on). */
size_t stateReadHeadBytes(size_t n);
unsigned char* stateReadHead(unsigned char* p, size_t n);

/* Decodes the script's reply to that call: out[0..n) each state's
 * figures (a key value's override in its limit), *allowed whether every
 * state would admit a request. False when the reply is no reply of the
 * script's to it (too short, malformed, a bad trailer). */
bool decodeStateRead(const redisReply* reply, size_t n, RuleOutcome* out,
                     bool* allowed);

}  // namespace rl
