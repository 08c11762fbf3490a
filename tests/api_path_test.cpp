/* The operator API's paths (src/core/api_path.hpp): routes, names and
 * values cut before they are decoded, the query, and every error. */

#include "core/api_path.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

using rl::api::Error;
using rl::api::Method;
using rl::api::Request;
using rl::api::Route;

/* The request parsed, with the buffers its views point into: on the
 * heap, so that moving the result moves no byte (a short std::string
 * keeps its bytes inside itself, and a move copies them). */
struct Parsed {
    bool ok;
    Request req;
    Error err;
    std::unique_ptr<std::string> path, query;
};

Parsed parse(std::string path, std::string query = "",
             bool decoded = false) {
    Parsed p{false, {}, {0, "", ""},
             std::make_unique<std::string>(std::move(path)),
             std::make_unique<std::string>(std::move(query))};
    p.ok = rl::api::parse(p.path->data(), p.path->size(), p.query->data(),
                          p.query->size(), decoded, &p.req, &p.err);
    return p;
}

TEST(ApiPath, Routes) {
    EXPECT_EQ(parse("/").req.route, Route::Page);
    EXPECT_EQ(parse("/index.html").req.route, Route::Page);
    EXPECT_EQ(parse("/1").req.route, Route::Endpoints);
    EXPECT_EQ(parse("/1/").req.route, Route::Endpoints);
    EXPECT_EQ(parse("/1/zones").req.route, Route::Zones);
    EXPECT_EQ(parse("/1/rules").req.route, Route::Rules);
    Parsed p = parse("/1/rules/per_ip");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Rule);
    EXPECT_EQ(p.req.name, "per_ip");
    EXPECT_EQ(parse("/1/rules/per_ip/top").req.route, Route::Top);
    p = parse("/1/rules/per_ip/keys/10.0.0.1");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Key);
    EXPECT_EQ(p.req.value, "10.0.0.1");
    EXPECT_EQ(parse("/1/rules/a/keys/v/block").req.route, Route::Block);
    EXPECT_EQ(parse("/1/rules/a/keys/v/override").req.route,
              Route::Override);
}

TEST(ApiPath, UnknownPathsAre404) {
    for (const char* path :
         {"", "x", "/2/zones", "/1/zone", "/1/zones/", "/1/zones/a",
          "/1/rules/a/tops", "/1/rules/a/keys", "/1/rules/a/key/v",
          "/1/rules/a/keys/v/blocks", "/1/rules/a/keys/v/block/x",
          "/index.htm", "/1/rules/a/b/c/d/e/f/g/h"}) {
        Parsed p = parse(path);
        EXPECT_FALSE(p.ok) << path;
        EXPECT_EQ(p.err.status, 404) << path;
        EXPECT_STREQ(p.err.code, "PathNotFound") << path;
    }
}

TEST(ApiPath, SegmentsAreCutBeforeTheyAreDecoded) {
    Parsed p = parse("/1/rules/5r%2Fm/keys/a%2Fb%20c%00%ff/block");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Block);
    EXPECT_EQ(p.req.name, "5r/m");
    EXPECT_EQ(p.req.value, std::string("a/b c\0\xff", 7));
    /* decoded by nginx already (a rewrite): taken as it is */
    p = parse("/1/rules/a%41/keys/b%42", "", true);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.name, "a%41");
    EXPECT_EQ(p.req.value, "b%42");
}

TEST(ApiPath, KeyValues) {
    Parsed p = parse("/1/rules/a/keys/%zz");
    EXPECT_FALSE(p.ok);
    EXPECT_EQ(p.err.status, 400);
    EXPECT_STREQ(p.err.code, "KeyInvalid");
    EXPECT_FALSE(parse("/1/rules/a/keys/ab%4").ok);
    EXPECT_FALSE(parse("/1/rules/a/keys/ab%").ok);
    p = parse("/1/rules/a/keys/");
    EXPECT_FALSE(p.ok);
    EXPECT_STREQ(p.err.code, "KeyInvalid");
    /* any length a request line carries */
    EXPECT_TRUE(parse("/1/rules/a/keys/" + std::string(4096, 'x')).ok);
    p = parse("/1/rules/a/keys/" + std::string(20000, 'x'));
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.value.size(), 20000u);
    std::string encoded;
    for (int i = 0; i < 5000; i++) {
        encoded += "%41";
    }
    p = parse("/1/rules/a/keys/" + encoded);
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.value, std::string(5000, 'A'));
    /* an empty VALUE: key= of the query (a NUL byte nginx refuses in a
     * path) */
    p = parse("/1/rules/a/keys//block", "key=a%00b");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Block);
    EXPECT_EQ(p.req.value, std::string("a\0b", 3));
    p = parse("/1/rules/a/keys/", "key=%0");
    EXPECT_FALSE(p.ok);
    EXPECT_STREQ(p.err.code, "KeyInvalid");
    /* a VALUE in the path wins over key= */
    p = parse("/1/rules/a/keys/v", "key=w");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.value, "v");
}

TEST(ApiPath, KeyValuesInTheQuery) {
    /* "." and "..": a path segment cannot carry them (a client resolves
     * them away, %2E too) */
    Parsed p = parse("/1/rules/a/key", "value=..");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Key);
    EXPECT_EQ(p.req.value, "..");
    p = parse("/1/rules/a/key/block", "zone=z&value=%2E");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Block);
    EXPECT_EQ(p.req.value, ".");
    EXPECT_EQ(p.req.zone, "z");
    p = parse("/1/rules/a/key/override", "value=a%2Fb%00c");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Override);
    EXPECT_EQ(p.req.value, std::string("a/b\0c", 5));
    p = parse("/1/rules/a/key", "value=" + std::string(9000, 'v'));
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.value.size(), 9000u);
    /* no value=, an empty one, a bad escape: 400; key= is no value= */
    for (const char* q : {"", "value=", "value=%4", "key=v"}) {
        p = parse("/1/rules/a/key", q);
        EXPECT_FALSE(p.ok) << q;
        EXPECT_EQ(p.err.status, 400) << q;
        EXPECT_STREQ(p.err.code, "KeyInvalid") << q;
    }
    /* a parameter given twice: refused, not read over (it acted on b) */
    for (const char* q : {"value=a&value=b", "value=a&value=a",
                          "value=a&zone=z&value=", "zone=y&value=a&zone=z",
                          "value=a&anchor=2&anchor=3", "value=a&n=1&n=1",
                          "value=a&trial=1&trial=0", "value=a&key=b&key=c"}) {
        p = parse("/1/rules/a/key", q);
        EXPECT_FALSE(p.ok) << q;
        EXPECT_EQ(p.err.status, 400) << q;
        EXPECT_STREQ(p.err.code, "ArgumentInvalid") << q;
    }
    EXPECT_STREQ(parse("/1/rules/a/key", "value=a&value=b").err.text,
                 "value= is given twice");
    /* others (a page's cache buster) are no concern, twice or more */
    p = parse("/1/rules/a/key", "_=1&value=a&_=2&x&x");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.value, "a");
    /* other shapes: 404, as for /keys/ */
    EXPECT_EQ(parse("/1/rules/a/key/v", "value=x").err.status, 404);
    EXPECT_EQ(parse("/1/rules/a/key/block/x", "value=x").err.status, 404);
    EXPECT_EQ(parse("/1/rules/a/key/v").err.status, 404);
}

TEST(ApiPath, TheFleet) {
    Parsed p = parse("/1/fleet");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Fleet);
    EXPECT_EQ(parse("/1/fleet/rules", "zone=z").req.route,
              Route::FleetRules);
    p = parse("/1/fleet/rules/per%2Fip/top", "n=500&trial=1");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::FleetTop);
    EXPECT_EQ(p.req.name, "per/ip");
    EXPECT_EQ(p.req.top, 100u);
    EXPECT_TRUE(p.req.trial);
    EXPECT_FALSE(parse("/1/rules/a/top", "trial=yes").req.trial);
    p = parse("/1/audit");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Audit);
    EXPECT_EQ(p.req.count, 50u);
    EXPECT_EQ(parse("/1/audit", "n=500").req.count, 500u);
    EXPECT_EQ(parse("/1/audit", "n=5000").req.count, 1000u);
    EXPECT_EQ(parse("/1/rules/a/limit").req.route, Route::Limit);
    EXPECT_EQ(parse("/1/rules/a/trial").req.route, Route::Trial);
    for (const char* path : {"/1/fleet/x", "/1/fleet/rules/a",
                             "/1/fleet/rules/a/keys/v", "/1/audit/x",
                             "/1/rules/a/limit/x"}) {
        p = parse(path);
        EXPECT_FALSE(p.ok) << path;
        EXPECT_EQ(p.err.status, 404) << path;
    }
    EXPECT_TRUE(rl::api::allows(Route::Limit, Method::Put));
    EXPECT_TRUE(rl::api::allows(Route::Trial, Method::Delete));
    EXPECT_FALSE(rl::api::allows(Route::Trial, Method::Post));
    EXPECT_FALSE(rl::api::allows(Route::Fleet, Method::Put));
    EXPECT_STREQ(rl::api::allowHeader(Route::Limit), "PUT, DELETE");
}

TEST(ApiPath, RuleNames) {
    Parsed p = parse("/1/rules//top");
    EXPECT_FALSE(p.ok);
    EXPECT_STREQ(p.err.code, "RuleNotFound");
    EXPECT_EQ(p.err.status, 404);
    p = parse("/1/rules/" + std::string(121, 'n'));
    EXPECT_FALSE(p.ok);
    EXPECT_STREQ(p.err.code, "RuleNotFound");
    EXPECT_TRUE(parse("/1/rules/" + std::string(120, 'n')).ok);
    p = parse("/1/rules/a%g0");
    EXPECT_FALSE(p.ok);
    EXPECT_EQ(p.err.status, 400);
}

TEST(ApiPath, Query) {
    EXPECT_EQ(parse("/1/rules/a/top").req.top, 10u);
    EXPECT_EQ(parse("/1/rules/a/top", "n=3").req.top, 3u);
    EXPECT_EQ(parse("/1/rules/a/top", "n=100").req.top, 100u);
    EXPECT_EQ(parse("/1/rules/a/top", "n=5000").req.top, 100u);
    EXPECT_EQ(parse("/1/rules/a/top", "_=17&n=7&x").req.top, 7u);
    for (const char* q : {"n=0", "n=", "n=-1", "n=1x", "n=07", "n=%zz"}) {
        Parsed p = parse("/1/rules/a/top", q);
        EXPECT_FALSE(p.ok) << q;
        EXPECT_STREQ(p.err.code, "ArgumentInvalid") << q;
    }
    Parsed p = parse("/1/rules/a/top", "zone=my%20zone");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.zone, "my zone");
    EXPECT_FALSE(parse("/1/rules/a/top", "zone=").ok);
    EXPECT_FALSE(parse("/1/rules/a/top", "zone=%z").ok);
}

TEST(ApiPath, Methods) {
    EXPECT_TRUE(rl::api::allows(Route::Rules, Method::Get));
    EXPECT_TRUE(rl::api::allows(Route::Page, Method::Head));
    EXPECT_FALSE(rl::api::allows(Route::Zones, Method::Post));
    EXPECT_TRUE(rl::api::allows(Route::Key, Method::Delete));
    EXPECT_FALSE(rl::api::allows(Route::Key, Method::Post));
    EXPECT_TRUE(rl::api::allows(Route::Block, Method::Post));
    EXPECT_TRUE(rl::api::allows(Route::Block, Method::Delete));
    EXPECT_FALSE(rl::api::allows(Route::Block, Method::Get));
    EXPECT_TRUE(rl::api::allows(Route::Override, Method::Put));
    EXPECT_FALSE(rl::api::allows(Route::Override, Method::Post));
    EXPECT_FALSE(rl::api::allows(Route::Top, Method::Other));
    EXPECT_STREQ(rl::api::allowHeader(Route::Block), "POST, DELETE");
    EXPECT_TRUE(rl::api::allows(Route::Credit, Method::Post));
    EXPECT_FALSE(rl::api::allows(Route::Credit, Method::Get));
    EXPECT_STREQ(rl::api::allowHeader(Route::Credit), "POST");
    EXPECT_TRUE(rl::api::isWrite(Method::Delete));
    EXPECT_FALSE(rl::api::isWrite(Method::Head));
}

/* Credits (SPEC section 12) and a key's billing day, in both forms. */
TEST(ApiPath, CreditsAndAnchors) {
    Parsed p = parse("/1/rules/monthly/keys/k1/credit", "anchor=15");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Credit);
    EXPECT_EQ(p.req.value, "k1");
    EXPECT_EQ(p.req.anchor, 15);
    p = parse("/1/rules/monthly/key/credit", "value=..&anchor=1");
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.req.route, Route::Credit);
    EXPECT_EQ(p.req.value, "..");
    EXPECT_EQ(p.req.anchor, 1);
    EXPECT_EQ(parse("/1/rules/monthly/keys/k1").req.anchor, 0);
    for (const char* bad : {"anchor=0", "anchor=29", "anchor=", "anchor=x",
                            "anchor=1x", "anchor=100000000000000"}) {
        p = parse("/1/rules/monthly/keys/k1", bad);
        EXPECT_FALSE(p.ok) << bad;
        EXPECT_EQ(p.err.status, 400) << bad;
    }
    EXPECT_FALSE(parse("/1/rules/monthly/keys/k1/credit/x").ok);
}

TEST(ApiPath, PercentDecode) {
    std::string s = "a%2fb%2F%25";
    long n = rl::api::percentDecode(s.data(), s.size());
    ASSERT_EQ(n, 5);
    EXPECT_EQ(s.substr(0, 5), "a/b/%");
    for (std::string bad : {"%", "%a", "%ag", "x%"}) {
        EXPECT_EQ(rl::api::percentDecode(bad.data(), bad.size()), -1) << bad;
    }
}

}  // namespace
