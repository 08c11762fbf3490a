/* What an error reply says (src/core/reply_error.hpp), from the texts
 * Redis 7.0 sends (a script's call's, and the same commands' own), and
 * the probe that tells when a server that refused serves again
 * (src/core/script.hpp), run against a real redis-server driven into
 * refusing (tests/redis_fixture.hpp). */

#include "core/reply_error.hpp"

#include <string>

#include "core/cluster.hpp"
#include "redis_fixture.hpp"

namespace {

using rl::ReplyError;
using rl::classifyError;

TEST(ReplyError, TheServerCannotServe) {
    for (const char *text : {
             "OOM command not allowed when used memory > 'maxmemory'. "
             "script: 7389571d7572e01e0dd01f1392fb2b813e89e061, on "
             "@user_script:1.",
             "MISCONF Redis is configured to save RDB snapshots, but it's "
             "currently unable to persist to disk.",
             "BUSY Redis is busy running a script. You can only call "
             "SCRIPT KILL or SHUTDOWN NOSAVE.",
             "LOADING Redis is loading the dataset in memory",
             "NOPERM this user has no permissions to run the 'evalsha' "
             "command",
             "NOPERM No permissions to access a key",
             "NOAUTH Authentication required.",
             "READONLY You can't write against a read only replica. "
             "script: 7389571d7572e01e0dd01f1392fb2b813e89e061, on "
             "@user_script:1.",
             "MASTERDOWN Link with MASTER is down and "
             "replica-serve-stale-data is set to 'no'.",
             "NOREPLICAS Not enough good replicas to write.",
             "CLUSTERDOWN The cluster is down",
             "CLUSTERDOWN Hash slot not served",
         }) {
        EXPECT_EQ(classifyError(text), ReplyError::Refused) << text;
    }
}

TEST(ReplyError, OneCallsOwn) {
    for (const char *text : {
             "WRONGTYPE Operation against a key holding the wrong kind of "
             "value script: 6b0335800fca87da66b2ad47d902c49071af2932, on "
             "@user_script:1.",
             "ERR user_script:12: Script attempted to access nonexistent "
             "global variable 'x' script: 6b03..., on @user_script:12.",
             "ERR Error running script (call to f_abc): @user_script:1: "
             "user_script:1: attempt to compare nil with number",
             "ERR unknown command 'EVALSHA'",
             "BUSYKEY Target key name already exists.",
             "OOMX not a code we know",
             "",
             "oom lowercase is no code",
         }) {
        EXPECT_EQ(classifyError(text), ReplyError::Call) << text;
    }
}

TEST(ReplyError, FollowedByTheModule) {
    EXPECT_EQ(classifyError("NOSCRIPT No matching script. Please use EVAL."),
              ReplyError::NoScript);
    EXPECT_EQ(classifyError("MOVED 3999 127.0.0.1:6381"),
              ReplyError::Redirect);
    EXPECT_EQ(classifyError("ASK 3999 127.0.0.1:6381"), ReplyError::Redirect);
    EXPECT_EQ(classifyError("TRYAGAIN Multiple keys request during "
                            "rehashing of slot"),
              ReplyError::SlotBusy);
}

/* Redis 6 wrapped a script's call error: the code inside counts */
TEST(ReplyError, WrappedByOlderRedis) {
    EXPECT_EQ(classifyError("ERR Error running script (call to f_123): "
                            "@user_script:9: @user_script: 9: -OOM "
                            "command not allowed when used memory > "
                            "'maxmemory'."),
              ReplyError::Refused);
    EXPECT_EQ(classifyError("ERR Error running script (call to f_123): "
                            "@user_script:9: @user_script: 9: -READONLY "
                            "You can't write against a read only replica."),
              ReplyError::Refused);
    EXPECT_EQ(classifyError("ERR Error running script (call to f_123): "
                            "@user_script:9: @user_script: 9: -WRONGTYPE "
                            "Operation against a key"),
              ReplyError::Call);
}

TEST(ReplyError, WhatANewConnectionMayEnd) {
    EXPECT_TRUE(rl::refusalReconnects("READONLY You can't write against a "
                                      "read only replica."));
    EXPECT_TRUE(rl::refusalReconnects("NOAUTH Authentication required."));
    EXPECT_FALSE(rl::refusalReconnects("OOM command not allowed"));
    EXPECT_FALSE(rl::refusalReconnects("NOPERM this user has no "
                                       "permissions"));
}

TEST(ReplyError, Summary) {
    EXPECT_EQ(rl::errorSummary("OOM command not allowed when used memory "
                               "> 'maxmemory'. script: 73895, on "
                               "@user_script:1."),
              "OOM command not allowed when used memory > 'maxmemory'.");
    EXPECT_EQ(rl::errorSummary("LOADING Redis is loading\r\nmore"),
              "LOADING Redis is loading");
    EXPECT_EQ(rl::errorSummary(std::string(300, 'x'), 160).size(), 160u);
}

TEST(ProbeKey, LandsOnTheSlotAskedUnderThePrefix) {
    char key[64];
    size_t len = rl::probeKey(key, "rl:", -1);
    EXPECT_EQ(std::string(key, len), "rl:{~probe}:ffffffffffffffff");
    for (int slot : {0, 1, 749, 5000, 12182, 16383}) {
        len = rl::probeKey(key, "rl:", slot);
        std::string k(key, len);
        EXPECT_EQ(rl::keySlot(k), slot) << k;
        EXPECT_EQ(k.substr(0, 10), "rl:{~probe");
        EXPECT_LE(len, 3 + rl::kProbeKeyExtra);
    }
    for (int slot = 0; slot < 16384; slot += 97) {
        len = rl::probeKey(key, "", slot);
        EXPECT_EQ(rl::keySlot(std::string_view(key, len)), slot);
    }
}

using Probe = rltest::ScriptFixture;

/* The probe writes: a server that refuses writes refuses it (a script
 * that only reads passes, as PING does), and it passes again once the
 * server serves. */
TEST_F(Probe, RefusedWhileTheServerRefusesWrites) {
    char key[64];
    size_t len = rl::probeKey(key, "rl:", -1);
    auto probe = [&]() {
        return command({"EVAL", std::string(rl::scriptText()), "2",
                        std::string(key, len),
                        std::string(key, rl::blockKeyLength(len)),
                        std::string(rl::probeHead()),
                        std::string(rl::probeSpec())});
    };
    rltest::ReplyPtr r = probe();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->type, REDIS_REPLY_STRING);
    EXPECT_GT(integerCommand({"PTTL", std::string(key, len)}), 0);
    EXPECT_LE(integerCommand({"PTTL", std::string(key, len)}), 1001);

    command({"CONFIG", "SET", "maxmemory", "1"});
    r = probe();
    command({"CONFIG", "SET", "maxmemory", "0"});
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(classifyError(std::string_view(r->str, r->len)),
              ReplyError::Refused) << r->str;
    r = probe();
    EXPECT_EQ(r->type, REDIS_REPLY_STRING);
}

}  // namespace
