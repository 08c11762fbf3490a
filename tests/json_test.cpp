/* JSON for the operator API (src/core/json.hpp): strings written, and
 * the flat bodies of its writes read strictly. */

#include "core/json.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

std::string write(const std::string& s) {
    std::string out(rl::json::stringMax(s.size()), '\0');
    char* end = rl::json::writeString(out.data(), s);
    out.resize(static_cast<size_t>(end - out.data()));
    return out;
}

/* The body parsed, with the text its views point into, on the heap
 * (moving the result must not move its bytes). */
struct Parsed {
    bool ok;
    rl::json::Object obj;
    const char* why;
    std::unique_ptr<std::string> text;
};

Parsed parse(std::string text) {
    Parsed p{false, {}, nullptr,
             std::make_unique<std::string>(std::move(text))};
    p.ok = rl::json::parseObject(p.text->data(), p.text->size(), &p.obj,
                                 &p.why);
    return p;
}

TEST(Json, Strings) {
    EXPECT_EQ(write("abc"), "\"abc\"");
    EXPECT_EQ(write("a\"b\\c"), "\"a\\\"b\\\\c\"");
    EXPECT_EQ(write("\n\t"), "\"\\n\\t\"");
    EXPECT_EQ(write(std::string("\0\x1f\x7f", 3)),
              "\"\\u0000\\u001f\\u007f\"");
    EXPECT_EQ(write("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    /* bytes that are no UTF-8: as code points, never a broken document */
    EXPECT_EQ(write("\xff\xc3"), "\"\\u00ff\\u00c3\"");
    EXPECT_EQ(write("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");
    EXPECT_EQ(write("\xc0\xaf"), "\"\\u00c0\\u00af\"");
}

TEST(Json, Objects) {
    Parsed p = parse(" { \"ttl\" : 600 , \"reason\":\"abuse\\n\\u00e9\\ud83d\\ude00\","
                     "\"x\": null, \"neg\": -5 } \n");
    ASSERT_TRUE(p.ok) << p.why;
    ASSERT_EQ(p.obj.n, 4u);
    const rl::json::Member* m = p.obj.find("ttl");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->kind, rl::json::Member::Kind::Number);
    EXPECT_EQ(m->number, 600);
    m = p.obj.find("reason");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->text, "abuse\n\xc3\xa9\xf0\x9f\x98\x80");
    EXPECT_EQ(p.obj.find("x")->kind, rl::json::Member::Kind::Null);
    EXPECT_EQ(p.obj.find("neg")->number, -5);
    EXPECT_EQ(p.obj.find("none"), nullptr);
    EXPECT_TRUE(parse("{}").ok);
    EXPECT_TRUE(parse("{\"n\":9007199254740991}").ok);
}

TEST(Json, RefusesWhatItWasNotAsked) {
    for (const char* bad :
         {"", " ", "[]", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}",
          "{a:1}", "{\"a\":1} x", "{\"a\":1}{}", "{\"a\":{}}",
          "{\"a\":[1]}", "{\"a\":true}", "{\"a\":1.5}", "{\"a\":1e3}",
          "{\"a\":01}", "{\"a\":-}", "{\"a\":9007199254740992}",
          "{\"a\":1,\"a\":2}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12\"}",
          "{\"a\":\"\\udc00\"}", "{\"a\":\"\\ud800\"}",
          "{\"a\":\"\\ud800\\u0041\"}", "{\"a\":\"\x01\"}",
          "{\"a\":\"\xff\"}", "{\"a\":\"abc", "{\"a\":nul}",
          "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,"
          "\"8\":8,\"9\":9}"}) {
        Parsed p = parse(bad);
        EXPECT_FALSE(p.ok) << bad;
        EXPECT_NE(p.why, nullptr) << bad;
    }
}

TEST(Json, WhatItWritesItReadsBack) {
    for (std::string s : {std::string("plain"), std::string("q\"b\\s/"),
                          std::string("\x01\x02\n\r\t\x1f", 6),
                          std::string("\xc3\xa9\xf0\x9f\x98\x80")}) {
        Parsed p = parse("{\"k\":" + write(s) + "}");
        ASSERT_TRUE(p.ok) << p.why;
        EXPECT_EQ(p.obj.find("k")->text, s);
    }
}

}  // namespace
