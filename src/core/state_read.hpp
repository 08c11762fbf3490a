/* The operator API's read of one key value's state in every state of a
 * rule name (SPEC section 8, GET /1/rules/NAME/keys/VALUE): one script
 * call whose records each carry at most kMaxRulesPerCall rules of cost
 * 0 (a request's rule count is a small number in the head, lua/rl.lua),
 * however many states the name has: rules of one name written in many
 * places with other windows or keys have one each. Pure: the nginx side
 * (src/api/keys.cpp) sends the call and hands the reply here. */
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

/* The head of any call on a key value's n states, as the read's: each
 * record's cost `units` (a read: 0; a credit, SPEC section 12: its
 * units), a calendar state's record followed by its period's bounds
 * (bounds[k]: 3 numbers, or NULL; script.hpp boundsRecord), every
 * record at time t (0: Redis' clock). keyCallHeadBytes(n, c): its
 * bytes, c of the states calendar ones. */
size_t keyCallHeadBytes(size_t n, size_t calendars);
unsigned char* keyCallHead(unsigned char* p, size_t n, uint64_t units,
                           const int64_t* const* bounds, int64_t t);

/* Decodes the script's reply to that call: out[0..n) each state's
 * figures (a key value's override in its limit), *allowed whether every
 * state would admit a request. False when the reply is no reply of the
 * script's to it (too short, malformed, a bad trailer). */
bool decodeStateRead(const redisReply* reply, size_t n, RuleOutcome* out,
                     bool* allowed);

}  // namespace rl
