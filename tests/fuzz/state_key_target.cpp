/* Redis keys from key values (src/core/state_key.cpp) and their
 * printable form for logs (src/core/outcome.cpp printable()): a client
 * chooses the value (a header, an argument), of any length and bytes.
 * The input gives the prefix's length, the rule id's length and the
 * log's cap, then the value.
 *
 * Promises: the key is exactly stateKeyLength() bytes, at most the
 * prefix plus 83; PREFIX "{" TAG "}:" RULE_ID; the tag is the value when
 * valueNeedsDigest() says no, else '~' and 40 hex digits of its SHA-1,
 * never empty and never holding a brace (so it is the key's hash tag);
 * the same value gives the same key. ruleId() is 16 hex digits. The
 * printable form takes at most cap + 3 bytes, all of them printable,
 * without '"' or a lone '\'. */
#include "fuzz.hpp"

#include "core/outcome.hpp"
#include "core/state_key.hpp"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace rl::fuzz {
namespace {

bool hex(std::string_view s) {
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

}  // namespace

void stateKey(const uint8_t* data, size_t size) {
    Input in(data, size);
    size_t prefixLen = in.byte() % 32u;
    size_t idLen = in.byte() % 20u;
    size_t cap = in.byte();
    size_t n;
    const char* bytes = in.rest(&n);
    std::string_view value(bytes, n);
    std::string prefix(prefixLen, ':');
    std::string id(idLen, 'f');

    size_t len = stateKeyLength(prefix.size(), value);
    FUZZ_CHECK(len <= prefix.size() + 83);
    /* exactly len bytes: ASan sees a write past them */
    std::vector<char> key(len);
    char* end = writeStateKey(key.data(), prefix, value, id);
    FUZZ_CHECK(end == key.data() + len);

    std::string_view k(key.data(), len);
    FUZZ_CHECK(k.substr(0, prefix.size()) == prefix);
    FUZZ_CHECK(k[prefix.size()] == '{');
    FUZZ_CHECK(k.substr(len - kRuleIdLen - 2, 2) == "}:");
    std::string_view tag = k.substr(prefix.size() + 1,
                                    len - prefix.size() - 3 - kRuleIdLen);
    FUZZ_CHECK(!tag.empty());
    FUZZ_CHECK(tag.find('{') == std::string_view::npos &&
               tag.find('}') == std::string_view::npos);
    if (valueNeedsDigest(value)) {
        FUZZ_CHECK(tag.size() == kDigestValueLen && tag[0] == '~' &&
                   hex(tag.substr(1)));
    } else {
        FUZZ_CHECK(tag == value);
    }

    std::vector<char> again(len);
    writeStateKey(again.data(), prefix, value, id);
    FUZZ_CHECK(std::memcmp(again.data(), key.data(), len) == 0);

    std::string rid = ruleId("zone", value, "gcra", n, value);
    FUZZ_CHECK(rid.size() == kRuleIdLen && hex(rid));

    std::vector<char> out(cap + 3);
    size_t w = printable(out.data(), cap, value);
    FUZZ_CHECK(w <= cap + 3);
    for (size_t i = 0; i < w; i++) {
        FUZZ_CHECK(out[i] >= 0x20 && out[i] < 0x7f && out[i] != '"');
        FUZZ_CHECK(out[i] != '\\' || (i + 1 < w && out[i + 1] == 'x'));
    }
}

}  // namespace rl::fuzz
