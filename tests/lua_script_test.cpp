/* The embedded script run by a real redis-server, with the test-only
 * `now` argument (ARGV[2], microseconds) so window edges are exact.
 *
 * The fixture starts `redis-server --port 0 --unixsocket DIR/r.sock`
 * once per test suite, polls for readiness with a deadline and kills it
 * afterwards; each test starts from FLUSHALL. Without redis-server on
 * PATH the tests are skipped.
 *
 * Keys expire on Redis' real clock while the script sees the test's
 * clock, so the tests keep state TTLs long (seconds), and the long walk
 * persists its keys. */

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/outcome.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"

namespace {

using namespace std::string_literals;
using rl::ReplyStatus;
using rl::RuleOutcome;

constexpr uint64_t kMs = 1000;
constexpr uint64_t kSec = 1000 * kMs;

/* A fixed instant in 2023; tests align it to their windows. */
constexpr uint64_t kEpochUs = 1700000000ULL * kSec;

uint64_t windowStart(uint64_t windowUs) {
    return (kEpochUs / windowUs + 1) * windowUs;
}

std::string findInPath(const char* name) {
    const char* path = std::getenv("PATH");
    std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin";
    std::istringstream in(dirs);
    std::string dir;
    while (std::getline(in, dir, ':')) {
        std::string file = (dir.empty() ? "." : dir) + "/" + name;
        if (access(file.c_str(), X_OK) == 0) {
            return file;
        }
    }
    return {};
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct ReplyDeleter {
    void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

/* One rule of a call: its state key and constant arguments. */
struct Rule {
    std::string key;
    std::string algorithm;
    uint64_t limit;
    uint64_t windowUs;
};

struct Decision {
    ReplyStatus status = ReplyStatus::Malformed;
    bool allowed = false;
    std::vector<RuleOutcome> out;
    int64_t nowUs = -1;
    std::string error;
};

std::string describe(const Decision& d) {
    std::ostringstream s;
    s << (d.allowed ? "allowed" : "rejected");
    for (const RuleOutcome& o : d.out) {
        s << " {remaining " << o.remaining << ", reset_ms " << o.resetMs
          << ", retry_ms " << o.retryMs << "}";
    }
    return s.str();
}

class LuaScript : public testing::Test {
protected:
    static void SetUpTestSuite() {
        std::string server = findInPath("redis-server");
        if (server.empty()) {
            missing_ = true;
            return;
        }
        char dir[] = "/tmp/rl_lua_test.XXXXXX";
        if (mkdtemp(dir) == nullptr) {
            startError_ = "mkdtemp failed";
            return;
        }
        dir_ = dir;
        socket_ = dir_ + "/r.sock";
        std::string log = dir_ + "/redis.log";

        /* Everything the child needs is built before fork. */
        std::vector<std::string> args = {
            server, "--port", "0", "--unixsocket", socket_,
            "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
            "--dir", dir_, "--daemonize", "no", "--loglevel", "warning",
            "--logfile", ""};
        std::vector<char*> argv;
        for (std::string& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);

        pid_t parent = getpid();
        pid_ = fork();
        if (pid_ < 0) {
            startError_ = "fork failed";
            return;
        }
        if (pid_ == 0) {
            /* Dies with the test binary, even if it crashes. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) {
                _exit(126);
            }
            int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            int in = open("/dev/null", O_RDONLY);
            if (out >= 0 && in >= 0) {
                dup2(in, 0);
                dup2(out, 1);
                dup2(out, 2);
            }
            execv(argv[0], argv.data());
            _exit(127);
        }

        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            int status;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                startError_ = "redis-server exited (status " +
                              std::to_string(status) + "):\n" +
                              readFile(log);
                return;
            }
            if (ping()) {
                return;
            }
            timespec poll = {0, 2 * 1000 * 1000};
            nanosleep(&poll, nullptr);
        }
        startError_ = "redis-server not ready within 10 s:\n" + readFile(log);
    }

    static void TearDownTestSuite() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            int status;
            waitpid(pid_, &status, 0);
            pid_ = -1;
        }
        if (!dir_.empty()) {
            std::error_code ignored;
            std::filesystem::remove_all(dir_, ignored);
            dir_.clear();
        }
        missing_ = false;
        startError_.clear();
    }

    static bool ping() {
        timeval tv = {1, 0};
        redisContext* c = redisConnectUnixWithTimeout(socket_.c_str(), tv);
        bool ok = false;
        if (c != nullptr && c->err == 0) {
            auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
            ok = r != nullptr && r->type == REDIS_REPLY_STATUS &&
                 std::string_view(r->str, r->len) == "PONG";
            if (r != nullptr) {
                freeReplyObject(r);
            }
        }
        if (c != nullptr) {
            redisFree(c);
        }
        return ok;
    }

    void SetUp() override {
        if (missing_) {
            GTEST_SKIP() << "redis-server is not installed";
        }
        ASSERT_TRUE(startError_.empty()) << startError_;
        timeval tv = {5, 0};
        c_ = redisConnectUnixWithTimeout(socket_.c_str(), tv);
        ASSERT_NE(c_, nullptr);
        ASSERT_EQ(c_->err, 0) << c_->errstr;
        ASSERT_EQ(redisSetTimeout(c_, tv), REDIS_OK);
        command({"FLUSHALL"});
    }

    void TearDown() override {
        if (c_ != nullptr) {
            redisFree(c_);
            c_ = nullptr;
        }
    }

    ReplyPtr command(const std::vector<std::string>& args) {
        std::vector<const char*> argv;
        std::vector<size_t> lens;
        for (const std::string& a : args) {
            argv.push_back(a.data());
            lens.push_back(a.size());
        }
        return commandArgv(argv, lens);
    }

    ReplyPtr commandArgv(const std::vector<const char*>& argv,
                         const std::vector<size_t>& lens) {
        auto* r = static_cast<redisReply*>(redisCommandArgv(
            c_, static_cast<int>(argv.size()),
            const_cast<const char**>(argv.data()), lens.data()));
        EXPECT_NE(r, nullptr) << "connection error: " << c_->errstr;
        return ReplyPtr(r);
    }

    /* One call of the script for these rules: EVAL (or EVALSHA) with
     * fillArgv's layout, `now` nowUs ("" if 0), maybe a refund. */
    ReplyPtr run(const std::vector<Rule>& rules, uint64_t nowUs, bool sha,
                 bool refund) {
        size_t n = rules.size();
        std::string count = std::to_string(n);
        std::string now = nowUs == 0 ? "" : std::to_string(nowUs);
        std::vector<std::string> text;
        text.reserve(2 * n);
        std::vector<std::string_view> keys;
        std::vector<rl::RuleArgs> args;
        for (const Rule& r : rules) {
            keys.push_back(r.key);
            text.push_back(std::to_string(r.limit));
            text.push_back(std::to_string(r.windowUs));
            args.push_back({r.algorithm, text[text.size() - 2],
                            text[text.size() - 1], "0", "1"});
        }
        std::vector<const char*> argv(rl::argvCount(n, refund));
        std::vector<size_t> lens(rl::argvCount(n, refund));
        rl::fillArgv(argv.data(), lens.data(), sha ? "EVALSHA" : "EVAL",
                     sha ? rl::scriptSha() : rl::scriptText(), count,
                     keys.data(), args.data(), n, now, refund);
        return commandArgv(argv, lens);
    }

    Decision call(const std::vector<Rule>& rules, uint64_t nowUs,
                  bool sha = false) {
        size_t n = rules.size();
        ReplyPtr reply = run(rules, nowUs, sha, false);
        Decision d;
        d.out.assign(n, RuleOutcome{-1, -1, -1});
        d.status = rl::decodeReply(reply.get(), n, &d.allowed, d.out.data(),
                                   &d.nowUs);
        if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
            d.error.assign(reply->str, reply->len);
        }
        if (d.status == ReplyStatus::Ok && nowUs != 0) {
            EXPECT_EQ(d.nowUs, static_cast<int64_t>(nowUs))
                << "the reply's time is not the time given";
        }
        return d;
    }

    /* Gives back what a decision at thenUs counted; the reply is 1. */
    void refund(const std::vector<Rule>& rules, uint64_t thenUs) {
        ReplyPtr reply = run(rules, thenUs, false, true);
        ASSERT_NE(reply, nullptr);
        EXPECT_EQ(reply->type, REDIS_REPLY_INTEGER)
            << std::string(reply->str != nullptr ? reply->str : "",
                           reply->len);
        EXPECT_EQ(reply->integer, 1);
    }

    /* A call that must decode; its decision. */
    Decision decide(const std::vector<Rule>& rules, uint64_t nowUs) {
        Decision d = call(rules, nowUs);
        EXPECT_EQ(d.status, ReplyStatus::Ok) << d.error;
        return d;
    }

    bool admits(const Rule& rule, uint64_t nowUs) {
        return decide({rule}, nowUs).allowed;
    }

    /* Would this call be admitted at nowUs? Runs it on copies of the
     * keys, leaving the real state untouched. */
    Decision probe(const std::vector<Rule>& rules, uint64_t nowUs) {
        std::vector<Rule> copies = rules;
        for (size_t i = 0; i < copies.size(); i++) {
            copies[i].key += ":probe";
            command({"DEL", copies[i].key});
            command({"COPY", rules[i].key, copies[i].key});
        }
        Decision d = decide(copies, nowUs);
        for (const Rule& r : copies) {
            command({"DEL", r.key});
        }
        return d;
    }

    std::map<std::string, std::string> hgetall(const std::string& key) {
        std::map<std::string, std::string> h;
        ReplyPtr r = command({"HGETALL", key});
        if (r == nullptr || r->type != REDIS_REPLY_ARRAY) {
            ADD_FAILURE() << "HGETALL " << key << " failed";
            return h;
        }
        for (size_t i = 0; i + 1 < r->elements; i += 2) {
            h[std::string(r->element[i]->str, r->element[i]->len)] =
                std::string(r->element[i + 1]->str, r->element[i + 1]->len);
        }
        return h;
    }

    long long integerCommand(const std::vector<std::string>& args) {
        ReplyPtr r = command(args);
        if (r == nullptr || r->type != REDIS_REPLY_INTEGER) {
            ADD_FAILURE() << args[0] << " did not return an integer";
            return -100;
        }
        return r->integer;
    }

    long long pttl(const std::string& key) {
        return integerCommand({"PTTL", key});
    }

    int64_t redisTimeUs() {
        ReplyPtr r = command({"TIME"});
        if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            ADD_FAILURE() << "TIME failed";
            return -1;
        }
        return std::stoll(std::string(r->element[0]->str,
                                      r->element[0]->len)) * 1000000 +
               std::stoll(std::string(r->element[1]->str,
                                      r->element[1]->len));
    }

    /* A state key as the module builds it. */
    static std::string stateKey(std::string_view value, std::string_view rule,
                                std::string_view algorithm,
                                uint64_t windowUs) {
        std::string id = rl::ruleId("test", rule, algorithm, windowUs,
                                    "$remote_addr");
        std::string key(rl::stateKeyLength(3, value), '\0');
        rl::writeStateKey(key.data(), "rl:", value, id);
        return key;
    }

    static Rule fixed(std::string_view value, uint64_t limit,
                      uint64_t windowUs) {
        return {stateKey(value, "f", "fixed_window", windowUs),
                "fixed_window", limit, windowUs};
    }

    static Rule sliding(std::string_view value, uint64_t limit,
                        uint64_t windowUs) {
        return {stateKey(value, "s", "sliding_window", windowUs),
                "sliding_window", limit, windowUs};
    }

    static inline bool missing_ = false;
    static inline std::string startError_;
    static inline pid_t pid_ = -1;
    static inline std::string dir_;
    static inline std::string socket_;

    redisContext* c_ = nullptr;
};

/* ------------------------------------------------------------------ */
/* The script's name and the EVALSHA / EVAL protocol                   */

TEST_F(LuaScript, ScriptLoadAgreesWithScriptSha) {
    ReplyPtr r = command({"SCRIPT", "LOAD", std::string(rl::scriptText())});
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << std::string(r->str != nullptr ? r->str : "", r->len);
    EXPECT_EQ(std::string_view(r->str, r->len), rl::scriptSha());
}

TEST_F(LuaScript, EvalshaBeforeLoadIsNoScriptThenWorksAfterEval) {
    command({"SCRIPT", "FLUSH"});
    Rule rule = fixed("10.0.0.1", 5, 10 * kSec);
    uint64_t t = windowStart(10 * kSec);

    Decision d = call({rule}, t, true);
    EXPECT_EQ(d.status, ReplyStatus::NoScript) << d.error;
    EXPECT_EQ(integerCommand({"EXISTS", rule.key}), 0);

    d = call({rule}, t, false);
    ASSERT_EQ(d.status, ReplyStatus::Ok) << d.error;
    EXPECT_TRUE(d.allowed);

    /* EVAL cached the script under scriptSha(). */
    d = call({rule}, t, true);
    ASSERT_EQ(d.status, ReplyStatus::Ok) << d.error;
    EXPECT_TRUE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 3);
}

TEST_F(LuaScript, UnknownAlgorithmIsAnErrorReply) {
    Rule rule = fixed("10.0.0.1", 5, 10 * kSec);
    rule.algorithm = "token_bucket";
    Decision d = call({rule}, windowStart(10 * kSec));
    EXPECT_EQ(d.status, ReplyStatus::Error);
    EXPECT_NE(d.error.find("unknown algorithm token_bucket"),
              std::string::npos)
        << d.error;
    EXPECT_EQ(integerCommand({"EXISTS", rule.key}), 0);
}

/* The module sends no `now`: the script reads Redis' TIME, and says
 * which time it used. */
TEST_F(LuaScript, EmptyNowUsesRedisTime) {
    Rule f = fixed("10.0.0.1", 2, 10 * kSec);
    Rule s = sliding("10.0.0.1", 2, 10 * kSec);
    int64_t before = redisTimeUs();
    Decision d = decide({f, s}, 0);
    int64_t after = redisTimeUs();
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_GE(d.nowUs, before);
    EXPECT_LE(d.nowUs, after);
    EXPECT_EQ(d.out[0].remaining, 1);
    EXPECT_GT(d.out[0].resetMs, 0);
    EXPECT_LE(d.out[0].resetMs, 10000);
    EXPECT_EQ(d.out[1].remaining, 1);
    EXPECT_GT(d.out[1].resetMs, 10000);
    EXPECT_LE(d.out[1].resetMs, 20000);
    EXPECT_GT(pttl(f.key), 0);
    EXPECT_GT(pttl(s.key), 0);
}

/* Keys built by the core, NUL bytes included, reach Redis intact. */
TEST_F(LuaScript, BinaryKeyValues) {
    Rule a = fixed("\x7f\0\0\x01"s, 1, 10 * kSec);
    Rule b = fixed("\x7f\0\0\x02"s, 1, 10 * kSec);
    uint64_t t = windowStart(10 * kSec);
    EXPECT_TRUE(admits(a, t));
    EXPECT_FALSE(admits(a, t));
    EXPECT_TRUE(admits(b, t));
    EXPECT_EQ(hgetall(a.key).at("c"), "1");
}

/* ------------------------------------------------------------------ */
/* fixed_window                                                        */

TEST_F(LuaScript, FixedWindowAdmitsLimitThenRejectsUntilNextWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 3, w);
    uint64_t w0 = windowStart(w);
    uint64_t t = w0 + 2 * kSec;

    for (int64_t i = 0; i < 3; i++) {
        Decision d = decide({rule}, t);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 2 - i);
        EXPECT_EQ(d.out[0].resetMs, 8000);
        EXPECT_EQ(d.out[0].retryMs, 0);
    }
    Decision d = decide({rule}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 0);
    EXPECT_EQ(d.out[0].resetMs, 8000);
    EXPECT_EQ(d.out[0].retryMs, 8000);

    /* The window's last microsecond still counts the three. */
    d = decide({rule}, w0 + w - 1);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 1);

    /* The next window starts from zero. */
    for (int64_t i = 0; i < 3; i++) {
        d = decide({rule}, w0 + w + i * kSec);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 2 - i);
        EXPECT_EQ(d.out[0].resetMs, 10000 - i * 1000);
    }
    EXPECT_FALSE(admits(rule, w0 + w + 9 * kSec));
    EXPECT_EQ(hgetall(rule.key),
              (std::map<std::string, std::string>{
                  {"w", std::to_string(w0 / w + 1)}, {"c", "3"}}));
}

/* A window without requests does not carry anything over. */
TEST_F(LuaScript, FixedWindowSkippedWindows) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t w0 = windowStart(w);
    EXPECT_TRUE(admits(rule, w0));
    EXPECT_TRUE(admits(rule, w0));
    EXPECT_FALSE(admits(rule, w0));
    EXPECT_TRUE(admits(rule, w0 + 3 * w + 5 * kSec));
    EXPECT_TRUE(admits(rule, w0 + 3 * w + 5 * kSec));
    EXPECT_FALSE(admits(rule, w0 + 3 * w + 5 * kSec));
}

TEST_F(LuaScript, FixedWindowRetryIsExact) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 1, w);
    uint64_t w0 = windowStart(w);
    uint64_t t = w0 + 2 * kSec + 500 * kMs + 500; /* 2.5005 s in */
    EXPECT_TRUE(admits(rule, t));
    Decision d = decide({rule}, t);
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 7500); /* 7.4995 s, rounded up */

    uint64_t retry = static_cast<uint64_t>(d.out[0].retryMs) * kMs;
    EXPECT_TRUE(probe({rule}, t + retry).allowed);
    EXPECT_FALSE(probe({rule}, t + retry - kMs).allowed);
}

TEST_F(LuaScript, FixedWindowTtlEndsWithTheWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 5, w);
    uint64_t t = windowStart(w) + 2 * kSec;
    ASSERT_TRUE(admits(rule, t));
    long long ttl = pttl(rule.key);
    EXPECT_GT(ttl, 7000); /* 8 s less the test's own running time */
    EXPECT_LE(ttl, 8000);

    /* A rejection writes nothing, the TTL included. */
    rule.limit = 1;
    ASSERT_FALSE(admits(rule, t + 5 * kSec));
    EXPECT_LE(pttl(rule.key), ttl);
}

/* ------------------------------------------------------------------ */
/* sliding_window: estimate = prev * (window - elapsed) / window + cur  */

/* limit 10 per 60 s: 10 requests at 59 s into window 0; 30 s into
 * window 1 the estimate is 10 * 30 / 60 = 5, so 5 more fit. */
TEST_F(LuaScript, SlidingWindowWeightsThePreviousWindow) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    uint64_t w0 = windowStart(w);

    for (int64_t i = 0; i < 10; i++) {
        Decision d = decide({rule}, w0 + 59 * kSec);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 9 - i);
        EXPECT_EQ(d.out[0].resetMs, 61000); /* when window 1 ends */
        EXPECT_EQ(d.out[0].retryMs, 0);
    }
    EXPECT_FALSE(admits(rule, w0 + 59 * kSec));

    /* Window 1, 0 s in: all 10 still weigh. */
    Decision d = probe({rule}, w0 + w);
    EXPECT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].retryMs, 6000); /* 10 * 54 / 60 = 9 */

    uint64_t t = w0 + w + 30 * kSec;
    for (int64_t i = 0; i < 5; i++) {
        d = decide({rule}, t);
        ASSERT_TRUE(d.allowed) << "request " << i << ": " << describe(d);
        EXPECT_EQ(d.out[0].remaining, 4 - i); /* 10 - (5 + i + 1) */
        EXPECT_EQ(d.out[0].resetMs, 90000);   /* when window 2 ends */
    }
    d = decide({rule}, t);
    EXPECT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].remaining, 0);
    /* 10 * (60 - x) / 60 + 5 + 1 <= 10 from x = 36 s: 6 s from now */
    EXPECT_EQ(d.out[0].retryMs, 6000);
    EXPECT_FALSE(probe({rule}, t + 6 * kSec - 1).allowed);
    EXPECT_TRUE(probe({rule}, t + 6 * kSec).allowed);

    /* Window 2, 0 s in: window 1's 5 weigh fully, so 5 fit. */
    int admitted = 0;
    while (admits(rule, w0 + 2 * w) && admitted < 20) {
        admitted++;
    }
    EXPECT_EQ(admitted, 5);

    /* Window 4: nothing weighs any more. */
    admitted = 0;
    while (admits(rule, w0 + 4 * w) && admitted < 20) {
        admitted++;
    }
    EXPECT_EQ(admitted, 10);
}

/* How many fit at `elapsed` into window 1 after `limit` in window 0:
 * floor(limit * elapsed / window) (the 1 of the request itself). */
TEST_F(LuaScript, SlidingWindowEstimateAtExactPoints) {
    const uint64_t w = 10 * kSec;
    const uint64_t w0 = windowStart(w);
    struct Point {
        uint64_t elapsed;
        int admitted;
    };
    for (Point p : {Point{0, 0}, Point{1, 0}, Point{1 * kMs, 0},
                    Point{100 * kMs, 1}, Point{2500 * kMs, 25},
                    Point{5 * kSec, 50}, Point{7490 * kMs, 74},
                    Point{9999 * kMs, 99}, Point{w - 1, 99}}) {
        Rule rule = sliding("p" + std::to_string(p.elapsed), 100, w);
        for (int i = 0; i < 100; i++) {
            ASSERT_TRUE(admits(rule, w0 + 3 * kSec)) << i;
        }
        int admitted = 0;
        while (admits(rule, w0 + w + p.elapsed) && admitted < 200) {
            admitted++;
        }
        EXPECT_EQ(admitted, p.admitted) << "at " << p.elapsed << " us";
    }
}

/* Full at the start of a window: the next request fits when the
 * window's count, weighed in the next window, leaves room for it. */
TEST_F(LuaScript, SlidingWindowRetryLooksIntoTheNextWindow) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    uint64_t w0 = windowStart(w);
    for (int i = 0; i < 10; i++) {
        ASSERT_TRUE(admits(rule, w0));
    }
    Decision d = decide({rule}, w0);
    ASSERT_FALSE(d.allowed);
    EXPECT_EQ(d.out[0].retryMs, 66000); /* 60 s + 6 s: 10 * 54 / 60 = 9 */
    EXPECT_EQ(d.out[0].resetMs, 120000);
    EXPECT_FALSE(probe({rule}, w0 + 66 * kSec - 1).allowed);

    d = decide({rule}, w0 + 66 * kSec);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 0);
    EXPECT_FALSE(admits(rule, w0 + 66 * kSec));
}

TEST_F(LuaScript, SlidingWindowTtlLastsUntilTheCountStopsWeighing) {
    const uint64_t w = 60 * kSec;
    Rule rule = sliding("10.0.0.1", 10, w);
    ASSERT_TRUE(admits(rule, windowStart(w) + 59 * kSec));
    /* Counted in window 0, it weighs until window 1 ends: 61 s. */
    long long ttl = pttl(rule.key);
    EXPECT_GT(ttl, 60000);
    EXPECT_LE(ttl, 61000);
}

/* ------------------------------------------------------------------ */
/* Several rules in one call                                          */

TEST_F(LuaScript, AdmissionCountsInEveryRule) {
    const uint64_t w = 10 * kSec;
    Rule a = fixed("10.0.0.1", 5, w);
    Rule b = sliding("10.0.0.1", 3, w);
    uint64_t t = windowStart(w) + kSec;
    Decision d = decide({a, b}, t);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].remaining, 4);
    EXPECT_EQ(d.out[1].remaining, 2);
    EXPECT_EQ(hgetall(a.key).at("c"), "1");
    EXPECT_EQ(hgetall(b.key).at("c"), "1");
    EXPECT_EQ(rl::bindingRule(d.out.data(), 2, true), 1u);
}

/* One rule rejects: neither rule counts the request, and no key is
 * created or has its TTL refreshed. */
TEST_F(LuaScript, RejectionConsumesNothingInAnyRule) {
    const uint64_t w = 10 * kSec;
    uint64_t t = windowStart(w) + kSec;

    /* the second rule rejects */
    Rule a = fixed("10.0.0.1", 5, w);
    Rule b = sliding("10.0.0.1", 2, w);
    ASSERT_TRUE(decide({a, b}, t).allowed);
    ASSERT_TRUE(decide({a, b}, t).allowed);
    auto beforeA = hgetall(a.key);
    auto beforeB = hgetall(b.key);
    long long ttlA = pttl(a.key);
    Decision d = decide({a, b}, t + kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(d.out[0].retryMs, 0);
    EXPECT_GT(d.out[1].retryMs, 0);
    EXPECT_EQ(d.out[0].remaining, 3) << "not counted: 5 - 2 still admitted";
    EXPECT_EQ(hgetall(a.key), beforeA);
    EXPECT_EQ(hgetall(b.key), beforeB);
    EXPECT_LE(pttl(a.key), ttlA);
    EXPECT_EQ(beforeA.at("c"), "2");

    /* the first rule rejects */
    Rule c = fixed("10.0.0.2", 1, w);
    Rule e = sliding("10.0.0.2", 5, w);
    ASSERT_TRUE(decide({c, e}, t).allowed);
    auto beforeC = hgetall(c.key);
    auto beforeE = hgetall(e.key);
    d = decide({c, e}, t + kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_GT(d.out[0].retryMs, 0);
    EXPECT_EQ(d.out[1].retryMs, 0);
    EXPECT_EQ(d.out[1].remaining, 4) << "not counted: 5 - 1 still admitted";
    EXPECT_EQ(hgetall(c.key), beforeC);
    EXPECT_EQ(hgetall(e.key), beforeE);

    /* a rule without state yet stays without */
    Rule fresh = sliding("10.0.0.3", 5, w);
    d = decide({c, fresh}, t + 2 * kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(integerCommand({"EXISTS", fresh.key}), 0);
    d = decide({fresh, c}, t + 2 * kMs);
    ASSERT_FALSE(d.allowed) << describe(d);
    EXPECT_EQ(integerCommand({"EXISTS", fresh.key}), 0);
    EXPECT_EQ(rl::bindingRule(d.out.data(), 2, false), 1u);
}

/* ------------------------------------------------------------------ */
/* Refunds: another zone rejected the request, give back what this
 * zone's decision counted, by the time that decision used.           */

TEST_F(LuaScript, RefundFixedWindowInTheSameWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t t = windowStart(w) + kSec;
    ASSERT_TRUE(admits(rule, t));
    ASSERT_TRUE(admits(rule, t));
    ASSERT_FALSE(admits(rule, t + kSec));
    long long ttl = pttl(rule.key);

    refund({rule}, t);
    EXPECT_EQ(hgetall(rule.key).at("c"), "1");
    EXPECT_GT(pttl(rule.key), 0);
    EXPECT_LE(pttl(rule.key), ttl);
    EXPECT_TRUE(admits(rule, t + 2 * kSec));
    EXPECT_FALSE(admits(rule, t + 2 * kSec));
}

TEST_F(LuaScript, RefundFixedWindowAfterTheWindowEnded) {
    const uint64_t w = 10 * kSec;
    Rule rule = fixed("10.0.0.1", 2, w);
    uint64_t w0 = windowStart(w);
    ASSERT_TRUE(admits(rule, w0 + kSec));
    ASSERT_TRUE(admits(rule, w0 + w + kSec));
    auto before = hgetall(rule.key);
    refund({rule}, w0 + kSec); /* window 0's count is gone already */
    EXPECT_EQ(hgetall(rule.key), before);
    EXPECT_EQ(before.at("c"), "1");
}

TEST_F(LuaScript, RefundSlidingWindowInTheSameWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = sliding("10.0.0.1", 3, w);
    uint64_t t = windowStart(w) + kSec;
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(admits(rule, t));
    }
    ASSERT_FALSE(admits(rule, t));
    refund({rule}, t);
    EXPECT_EQ(hgetall(rule.key).at("c"), "2");
    EXPECT_TRUE(admits(rule, t + kMs));
    EXPECT_FALSE(admits(rule, t + kMs));
}

/* Counted in window 0, refunded once window 1 has begun: window 0's
 * count now weighs as the previous window's. */
TEST_F(LuaScript, RefundSlidingWindowFromThePreviousWindow) {
    const uint64_t w = 10 * kSec;
    Rule rule = sliding("10.0.0.1", 3, w);
    uint64_t w0 = windowStart(w);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(admits(rule, w0 + kSec));
    }
    /* 5 s into window 1: 3 * 0.5 + 0 + 1 <= 3 */
    ASSERT_TRUE(admits(rule, w0 + w + 5 * kSec));
    ASSERT_FALSE(admits(rule, w0 + w + 5 * kSec));
    refund({rule}, w0 + kSec);
    EXPECT_EQ(hgetall(rule.key),
              (std::map<std::string, std::string>{
                  {"w", std::to_string(w0 / w + 1)}, {"c", "1"}, {"p", "2"}}));
    /* 2 * 0.5 + 1 + 1 <= 3 */
    EXPECT_TRUE(admits(rule, w0 + w + 5 * kSec));

    /* Two windows on, window 0 weighs nothing: nothing to refund. */
    ASSERT_TRUE(admits(rule, w0 + 2 * w + kSec));
    auto before = hgetall(rule.key);
    refund({rule}, w0 + kSec);
    EXPECT_EQ(hgetall(rule.key), before);
}

TEST_F(LuaScript, RefundNeverGoesBelowZeroNorCreatesState) {
    const uint64_t w = 10 * kSec;
    Rule f = fixed("10.0.0.1", 2, w);
    Rule s = sliding("10.0.0.1", 2, w);
    uint64_t t = windowStart(w) + kSec;
    ASSERT_TRUE(decide({f, s}, t).allowed);
    refund({f, s}, t);
    refund({f, s}, t);
    EXPECT_EQ(hgetall(f.key).at("c"), "0");
    EXPECT_EQ(hgetall(s.key).at("c"), "0");

    Rule freshF = fixed("10.0.0.9", 2, w);
    Rule freshS = sliding("10.0.0.9", 2, w);
    refund({freshF, freshS}, t);
    EXPECT_EQ(integerCommand({"EXISTS", freshF.key, freshS.key}), 0);
}

/* The module's sequence: decide on Redis' TIME, refund with the time
 * the reply gave, and every rule of the call is whole again. */
TEST_F(LuaScript, RefundWithTheDecisionsTime) {
    const uint64_t w = 30 * 86400 * kSec; /* no window ends meanwhile */
    Rule f = fixed("10.0.0.1", 1, w);
    Rule s = sliding("10.0.0.1", 1, w);
    Decision d = decide({f, s}, 0);
    ASSERT_TRUE(d.allowed) << describe(d);
    EXPECT_FALSE(decide({f, s}, 0).allowed);
    ASSERT_GT(d.nowUs, 0);
    refund({f, s}, static_cast<uint64_t>(d.nowUs));
    EXPECT_EQ(hgetall(f.key).at("c"), "0");
    EXPECT_EQ(hgetall(s.key).at("c"), "0");
    EXPECT_TRUE(decide({f, s}, 0).allowed);
}

/* ------------------------------------------------------------------ */
/* retry_ms, over a long deterministic walk                            */

/* Requests at pseudo-random times (sub-millisecond parts included) for
 * one fixed and one sliding rule, alone and together. Each rejection's
 * binding retry_ms is checked on copies of the state: a request that
 * much later is admitted, one millisecond earlier it is not. */
TEST_F(LuaScript, RetryAdmitsAndIsTight) {
    const uint64_t wf = 3 * kSec;
    const uint64_t ws = 10 * kSec;
    const std::vector<std::vector<Rule>> calls = {
        {fixed("walk", 5, wf)},
        {sliding("walk", 7, ws)},
        {fixed("both", 5, wf), sliding("both", 7, ws)}};

    int rejections = 0;
    for (const std::vector<Rule>& rules : calls) {
        uint64_t t = windowStart(30 * kSec);
        uint32_t seed = 12345;
        for (int step = 0; step < 150; step++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly bursts, now and then a long gap */
            uint64_t gap = (seed >> 8) % (step % 10 == 9 ? 4000000 : 700000);
            t += gap;
            Decision d = decide(rules, t);
            /* Fake time runs ahead of Redis' clock: keep the state. */
            for (const Rule& r : rules) {
                command({"PERSIST", r.key});
            }
            for (size_t i = 0; i < rules.size(); i++) {
                EXPECT_LE(d.out[i].remaining,
                          static_cast<int64_t>(rules[i].limit));
                if (d.allowed) {
                    EXPECT_EQ(d.out[i].retryMs, 0);
                }
            }
            if (d.allowed) {
                continue;
            }
            rejections++;
            size_t b = rl::bindingRule(d.out.data(), d.out.size(), false);
            uint64_t retry = static_cast<uint64_t>(d.out[b].retryMs) * kMs;
            ASSERT_GT(retry, 0u);
            Decision later = probe(rules, t + retry);
            EXPECT_TRUE(later.allowed)
                << "step " << step << " at " << t << ": " << describe(d)
                << "; at +retry " << describe(later);
            if (retry > kMs) {
                Decision early = probe(rules, t + retry - kMs);
                EXPECT_FALSE(early.allowed)
                    << "step " << step << " at " << t << ": " << describe(d)
                    << "; 1 ms before retry " << describe(early);
            }
        }
    }
    EXPECT_GT(rejections, 50); /* the walk does reach the limits */
}

}  // namespace
