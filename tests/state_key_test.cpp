/* Redis keys of rule state: PREFIX "{" VALUE "}" ":" RULE_ID. */

#include "core/state_key.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/sha1.hpp"

namespace {

using namespace std::string_literals;

constexpr std::string_view kPrefix = "rl:";
constexpr std::string_view kRule = "0123456789abcdef";

std::string sha1Hex(std::string_view data) {
    std::string out(40, '?');
    rl::toHex(rl::sha1(data), out.data(), out.size());
    return out;
}

/* Writes the key into a buffer with guard bytes after the announced
 * length: writing past it, or returning another end, fails the test. */
std::string stateKey(std::string_view prefix, std::string_view value,
                     std::string_view ruleId = kRule) {
    size_t len = rl::stateKeyLength(prefix.size(), value);
    std::string buf(len + 8, '#');
    char* end = rl::writeStateKey(buf.data(), prefix, value, ruleId);
    EXPECT_EQ(end, buf.data() + len) << "returned end for value of "
                                     << value.size() << " bytes";
    EXPECT_EQ(buf.substr(len), std::string(8, '#')) << "wrote past the key";
    buf.resize(len);
    return buf;
}

/* The part of a key Redis Cluster hashes (CLUSTER KEYSLOT rules). */
std::string_view hashTag(std::string_view key) {
    size_t open = key.find('{');
    if (open == std::string_view::npos) {
        return key;
    }
    size_t close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) {
        return key;
    }
    return key.substr(open + 1, close - open - 1);
}

bool isLowerHex(std::string_view s) {
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

TEST(StateKey, ConstantsMatchTheDocumentedFormat) {
    EXPECT_EQ(rl::kMaxPlainValue, 64u);
    EXPECT_EQ(rl::kDigestValueLen, 41u);
    EXPECT_EQ(rl::kRuleIdLen, 16u);
}

TEST(StateKey, PlainValuesAreKeptAsIs) {
    EXPECT_FALSE(rl::valueNeedsDigest("192.168.1.7"));
    EXPECT_FALSE(rl::valueNeedsDigest("a"));
    EXPECT_FALSE(rl::valueNeedsDigest("a~b"));
    EXPECT_FALSE(rl::valueNeedsDigest(std::string(64, 'x')));
    EXPECT_FALSE(rl::valueNeedsDigest("\x7f\0\0\x01"s));
    EXPECT_FALSE(rl::valueNeedsDigest("a\0b"s + std::string(61, 'z')));
}

TEST(StateKey, ValuesNeedingADigest) {
    EXPECT_TRUE(rl::valueNeedsDigest(std::string(65, 'x')));
    EXPECT_TRUE(rl::valueNeedsDigest(std::string(1000, 'x')));
    EXPECT_TRUE(rl::valueNeedsDigest("a{b"));
    EXPECT_TRUE(rl::valueNeedsDigest("a}b"));
    EXPECT_TRUE(rl::valueNeedsDigest("{"));
    EXPECT_TRUE(rl::valueNeedsDigest("}"));
    EXPECT_TRUE(rl::valueNeedsDigest("x}"));
    EXPECT_TRUE(rl::valueNeedsDigest("~"));
    EXPECT_TRUE(rl::valueNeedsDigest("~abc"));
    EXPECT_TRUE(rl::valueNeedsDigest("a\0}"s));
    EXPECT_TRUE(rl::valueNeedsDigest("")) << "\"{}\" is no hash tag";
}

TEST(StateKey, PlainKeyLayout) {
    EXPECT_EQ(stateKey("rl:", "10.0.0.1"), "rl:{10.0.0.1}:0123456789abcdef");
    EXPECT_EQ(stateKey("", "u42"), "{u42}:0123456789abcdef");
    /* no prefix, as an embedded zone's nginx string: {0, NULL} */
    EXPECT_EQ(stateKey(std::string_view(nullptr, 0), "u42"),
              "{u42}:0123456789abcdef");
    EXPECT_EQ(rl::stateKeyLength(3, "10.0.0.1"), 3 + 1 + 8 + 2 + 16u);
}

TEST(StateKey, DigestKeyLayout) {
    std::string longValue(65, 'a');
    EXPECT_EQ(stateKey("rl:", longValue),
              "rl:{~11655326c708d70319be2610e8a57d9a5b959d3b}:"
              "0123456789abcdef");
    EXPECT_EQ(stateKey("rl:", "~abc"),
              "rl:{~688f71e3a821b6dd4daf9e6522df146d5cf686bb}:"
              "0123456789abcdef");
    EXPECT_EQ(stateKey("rl:", "a{b"),
              "rl:{~16a33a436d94ed16264190717191ddac43a5de0f}:"
              "0123456789abcdef");
    EXPECT_EQ(rl::stateKeyLength(3, longValue), 3 + 1 + 41 + 2 + 16u);
}

TEST(StateKey, LengthIsAtMostPrefixPlus83) {
    std::string value;
    for (size_t n = 0; n <= 200; n++) {
        size_t len = rl::stateKeyLength(kPrefix.size(), value);
        EXPECT_LE(len, kPrefix.size() + 83) << n << " bytes";
        EXPECT_EQ(stateKey(kPrefix, value).size(), len);
        value += static_cast<char>(n % 7 == 0 ? '\0' : 'a' + n % 26);
    }
    EXPECT_EQ(rl::stateKeyLength(kPrefix.size(), std::string(64, 'v')),
              kPrefix.size() + 83);
}

/* A buffer for a value's tag is sized by kMaxValueTag: a plain value
 * of 42 to 64 bytes is longer than a digest (three buffers sized by the
 * digest overran). */
TEST(StateKey, ValueTagIsAtMostKMaxValueTag) {
    std::string value;
    size_t longest = 0;
    for (size_t n = 0; n <= 200; n++) {
        char out[256];
        size_t len = static_cast<size_t>(rl::writeValueTag(out, value) - out);
        EXPECT_LE(len, rl::kMaxValueTag) << n << " bytes";
        longest = len > longest ? len : longest;
        value += 'a';
    }
    EXPECT_EQ(longest, rl::kMaxValueTag);
    EXPECT_GT(rl::kMaxValueTag, rl::kDigestValueLen);
}

TEST(StateKey, BoundaryBetweenPlainAndDigest) {
    std::string at64(64, 'v');
    std::string at65(65, 'v');
    EXPECT_EQ(stateKey("p", at64), "p{" + at64 + "}:" + std::string(kRule));
    EXPECT_EQ(stateKey("p", at65),
              "p{~" + sha1Hex(at65) + "}:" + std::string(kRule));
}

TEST(StateKey, BinaryValuesWithNulBytes) {
    std::string value = "\0\x01{"s;  /* has a brace: digest */
    EXPECT_EQ(stateKey("rl:", value),
              "rl:{~" + sha1Hex(value) + "}:" + std::string(kRule));

    std::string plain = "\x7f\0\0\x01"s;
    std::string key = stateKey("rl:", plain);
    EXPECT_EQ(key, "rl:{\x7f\0\0\x01}:"s + std::string(kRule));
    EXPECT_EQ(key.size(), 3 + 1 + 4 + 2 + 16u);

    /* Values equal up to a NUL must not share state. */
    EXPECT_NE(stateKey("rl:", "a\0b"s), stateKey("rl:", "a\0c"s));
    EXPECT_NE(stateKey("rl:", "a\0b"s), stateKey("rl:", "a"));
    std::string longA = std::string(70, 'x') + "\0a"s;
    std::string longB = std::string(70, 'x') + "\0b"s;
    EXPECT_NE(stateKey("rl:", longA), stateKey("rl:", longB));
}

/* A plain value spelled like a digest must not share a digested
 * value's state. */
TEST(StateKey, PlainValueCannotImitateADigest) {
    std::string longValue(100, 'q');
    std::string imitation = "~" + sha1Hex(longValue);
    EXPECT_NE(stateKey("rl:", imitation), stateKey("rl:", longValue));
}

/* Every rule of one key value hashes to one cluster slot: the hash tag
 * is the (possibly digested) value and never the rule id. */
TEST(StateKey, HashTagIsTheValueForEveryRule) {
    std::vector<std::string> values = {
        "10.0.0.1", "x", "~", "{", "}", "}{", "{}", "a}b{c", "{{x}}",
        "\0"s, "a\0}b"s, std::string(64, '}'), std::string(65, 'a'),
        std::string(300, '{')};
    for (const std::string& v : values) {
        std::string a = stateKey("rl:", v, "aaaaaaaaaaaaaaaa");
        std::string b = stateKey("rl:", v, "bbbbbbbbbbbbbbbb");
        std::string_view tagA = hashTag(a);
        EXPECT_EQ(tagA, hashTag(b)) << "value " << testing::PrintToString(v);
        EXPECT_EQ(tagA.find("aaaa"), std::string_view::npos)
            << "value " << testing::PrintToString(v);
        std::string expect =
            rl::valueNeedsDigest(v) ? "~" + sha1Hex(v) : v;
        EXPECT_EQ(tagA, expect) << "value " << testing::PrintToString(v);
    }
}

TEST(StateKey, ShortRuleIdIsPaddedToSixteen) {
    EXPECT_EQ(stateKey("rl:", "v", "abc"), "rl:{v}:abc0000000000000");
}

TEST(RuleId, SixteenLowercaseHexDigits) {
    std::string id = rl::ruleId("api", "per_ip", "fixed_window", 1000000,
                                "$binary_remote_addr");
    EXPECT_EQ(id.size(), rl::kRuleIdLen);
    EXPECT_TRUE(isLowerHex(id)) << id;
}

/* Ids name state kept in Redis across reloads and upgrades: a change
 * of the derivation silently resets every counter, so pin it. This is
 * sha1("s3:3:api6:per_ip12:fixed_window7:100000019:$binary_remote_addr"). */
TEST(RuleId, IsStable) {
    EXPECT_EQ(rl::ruleId("api", "per_ip", "fixed_window", 1000000,
                         "$binary_remote_addr"),
              "384299ca4f56cb95");
    EXPECT_EQ(rl::ruleId("api", "per_ip", "fixed_window", 1000000,
                         "$binary_remote_addr"),
              rl::ruleId("api", "per_ip", "fixed_window", 1000000,
                         "$binary_remote_addr"));
}

TEST(RuleId, DiffersWhenAnyFieldDiffers) {
    std::set<std::string> ids;
    auto add = [&](std::string_view zone, std::string_view name,
                   std::string_view alg, uint64_t window,
                   std::string_view key) {
        std::string id = rl::ruleId(zone, name, alg, window, key);
        EXPECT_TRUE(ids.insert(id).second)
            << "duplicate id " << id << " for " << zone << '|' << name
            << '|' << alg << '|' << window << '|' << key;
    };
    add("api", "r", "fixed_window", 1000000, "$remote_addr");
    add("web", "r", "fixed_window", 1000000, "$remote_addr");
    add("api", "s", "fixed_window", 1000000, "$remote_addr");
    add("api", "r", "sliding_window", 1000000, "$remote_addr");
    add("api", "r", "fixed_window", 60000000, "$remote_addr");
    add("api", "r", "fixed_window", 1000001, "$remote_addr");
    add("api", "r", "fixed_window", 1000000, "$binary_remote_addr");
    add("api", "r", "fixed_window", 1000000, "");
    add("", "", "", 0, "");
    /* Field boundaries cannot shift: "ab"+"c" is not "a"+"bc". */
    add("ab", "c", "x", 1, "k");
    add("a", "bc", "x", 1, "k");
    add("a", "b", "cx", 1, "k");
    add("a", "bcx", "", 1, "k");
    add("a", "b", "c", 11, "k");
    add("a", "b", "c1", 1, "k");
    add("a", "b", "c", 1, "1k");
    /* Binary fields are compared whole. */
    add("z\0a"s, "r", "fixed_window", 1000000, "$k");
    add("z\0b"s, "r", "fixed_window", 1000000, "$k");
}

/* Changing a rule's limit keeps its state: there is no limit input. */
TEST(RuleId, DoesNotTakeTheLimit) {
    using Sv = std::string_view;
    static_assert(std::is_same_v<decltype(&rl::ruleId),
                                 std::string (*)(Sv, Sv, Sv, uint64_t, Sv)>,
                  "ruleId(zone, name, algorithm, windowUs, keyExpr)");
    SUCCEED();
}

}  // namespace
