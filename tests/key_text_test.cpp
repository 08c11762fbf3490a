/* Key values as the operator API shows and takes them
 * (src/core/key_text.hpp): addresses for $binary_remote_addr rules,
 * printable text for the others. */

#include "core/key_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

std::string text(const std::string& value, bool address, size_t cap = 64) {
    std::string out(rl::keyTextMax(value.size() > cap ? cap : value.size())
                        + cap, '\0');
    out.resize(rl::keyText(out.data(), cap, value, address));
    return out;
}

std::string bytes(const std::string& t) {
    unsigned char out[16];
    size_t len = 0;
    if (!rl::addressBytes(t, out, &len)) {
        return "invalid";
    }
    return std::string(reinterpret_cast<char*>(out), len);
}

TEST(KeyText, Addresses) {
    EXPECT_EQ(text(std::string("\xcb\x00\x71\x07", 4), true), "203.0.113.7");
    EXPECT_EQ(text(std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0')
                       + "\x01", true),
              "2001:db8::1");
    /* not an address's length: printable, as the log shows it */
    EXPECT_EQ(text("abc", true), "abc");
    EXPECT_EQ(text(std::string("a\0\"\\\xff", 5), false),
              "a\\x00\\x22\\x5c\\xff");
    EXPECT_EQ(text(std::string(100, 'x'), false, 64),
              std::string(64, 'x') + "...");
}

TEST(KeyText, AddressBytes) {
    EXPECT_EQ(bytes("203.0.113.7"), std::string("\xcb\x00\x71\x07", 4));
    EXPECT_EQ(bytes("2001:db8::1"),
              std::string("\x20\x01\x0d\xb8", 4) + std::string(11, '\0') +
                  "\x01");
    /* as nginx's $binary_remote_addr keeps an IPv4-mapped address */
    EXPECT_EQ(bytes("::ffff:10.0.0.1"), std::string("\x0a\x00\x00\x01", 4));
    for (const char* bad : {"", "300.1.1.1", "1.2.3", "1.2.3.4.5", "::g",
                            "host", "1.2.3.4 ", "2001:db8::1%eth0",
                            "11111111111111111111111111111111111111111111111"}) {
        EXPECT_EQ(bytes(bad), "invalid") << bad;
    }
}

TEST(KeyText, RoundTrip) {
    for (const char* a : {"0.0.0.0", "255.255.255.255", "::", "::1",
                          "fe80::1:2:3:4", "2001:db8:0:1:1:1:1:1"}) {
        std::string b = bytes(a);
        EXPECT_EQ(text(b, true), a);
    }
}

}  // namespace
