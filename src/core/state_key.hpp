/* Redis key of one rule's state for one key value:
 *
 *     PREFIX "{" VALUE "}" ":" RULE_ID
 *
 * The braces make VALUE the hash tag, so every rule of a key value lands
 * on one Redis Cluster slot. VALUE is the key's value as is when short
 * and plain; empty, longer than 64 bytes, holding a brace (which would
 * cut the hash tag), or starting with '~', it becomes '~' and the 40 hex
 * digits of its SHA-1. RULE_ID is 16 hex digits naming the rule's state
 * (zone, name, algorithm, window, key expression, and the layout of
 * the state in Redis; not the limit). So a
 * key is at most the prefix plus 2 + 64 + 1 + 16 = 83 bytes. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rl {

inline constexpr size_t kMaxPlainValue = 64;
inline constexpr size_t kDigestValueLen = 41;
inline constexpr size_t kRuleIdLen = 16;
/* the most bytes writeValueTag() writes: a plain value, or '~' and its
 * digest (a buffer for a tag is sized by this, never by one of them) */
inline constexpr size_t kMaxValueTag =
    kMaxPlainValue > kDigestValueLen ? kMaxPlainValue : kDigestValueLen;

bool valueNeedsDigest(std::string_view value);

size_t stateKeyLength(size_t prefixLen, std::string_view value);

/* Writes the key's hash tag, what stands between its braces: VALUE, or
 * '~' and its digest (at most kMaxValueTag bytes); returns the end. */
char* writeValueTag(char* out, std::string_view value);

/* Writes the key (stateKeyLength bytes, no NUL); returns the end. */
char* writeStateKey(char* out, std::string_view prefix,
                    std::string_view value, std::string_view ruleId);

/* The length of a state key's block key PREFIX{VALUE} (a key value's
 * manual block or override, lua/rl.lua blocked()): the state key less
 * ':' and its rule id, so the state key's bytes hold it. */
constexpr size_t blockKeyLength(size_t stateKeyLen) {
    return stateKeyLen - 1 - kRuleIdLen;
}

std::string ruleId(std::string_view zone, std::string_view name,
                   std::string_view algorithm, uint64_t windowUs,
                   std::string_view keyExpr);

}  // namespace rl
