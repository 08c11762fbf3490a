#include "state_key.hpp"

#include <cstring>

#include "sha1.hpp"

namespace rl {

bool valueNeedsDigest(std::string_view value) {
    if (value.size() > kMaxPlainValue) {
        return true;
    }
    if (value.empty() || value[0] == '~') { /* "{}" is no hash tag */
        return true;
    }
    /* a plain loop: find_first_of runs a memchr per byte of the value */
    for (char c : value) {
        if (c == '{' || c == '}') {
            return true;
        }
    }
    return false;
}

size_t stateKeyLength(size_t prefixLen, std::string_view value) {
    size_t v = valueNeedsDigest(value) ? kDigestValueLen : value.size();
    return prefixLen + 1 + v + 2 + kRuleIdLen;
}

char* writeValueTag(char* out, std::string_view value) {
    if (valueNeedsDigest(value)) {
        *out++ = '~';
        toHex(sha1(value), out, 40);
        return out + 40;
    }
    std::memcpy(out, value.data(), value.size());
    return out + value.size();
}

char* writeStateKey(char* out, std::string_view prefix,
                    std::string_view value, std::string_view ruleId) {
    if (!prefix.empty()) {  /* (an embedded zone's is {0, NULL}) */
        std::memcpy(out, prefix.data(), prefix.size());
        out += prefix.size();
    }
    *out++ = '{';
    out = writeValueTag(out, value);
    *out++ = '}';
    *out++ = ':';
    size_t n = ruleId.size() < kRuleIdLen ? ruleId.size() : kRuleIdLen;
    std::memcpy(out, ruleId.data(), n);
    std::memset(out + n, '0', kRuleIdLen - n);
    return out + kRuleIdLen;
}

std::string ruleId(std::string_view zone, std::string_view name,
                   std::string_view algorithm, uint64_t windowUs,
                   std::string_view keyExpr) {
    /* Length-prefixed fields: no two different rules give one text. The
     * layout of the state in Redis comes first ("s3": packed strings,
     * lua/meter.lua; earlier builds kept hashes and had no such field):
     * a build with another layout never reads these keys as its own. */
    std::string window = std::to_string(windowUs);
    std::string text = "s3:";
    for (std::string_view f : {zone, name, algorithm,
                               std::string_view(window), keyExpr}) {
        text += std::to_string(f.size());
        text += ':';
        text.append(f);
    }
    std::string id(kRuleIdLen, '0');
    toHex(sha1(text), id.data(), kRuleIdLen);
    return id;
}

}  // namespace rl
