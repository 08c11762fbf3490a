/* A real redis-server for the script's tests (lua_script_test.cpp,
 * differential_test.cpp): the embedded script run with requests at given
 * times (src/core/script.hpp: t > 0, microseconds) so edges are exact.
 *
 * The fixture starts `redis-server --port 0 --unixsocket DIR/r.sock`
 * once per test suite, polls for readiness with a deadline and kills it
 * afterwards; each test starts from FLUSHALL. Without redis-server on
 * PATH the tests are skipped.
 *
 * Keys expire on Redis' real clock while the script sees the test's
 * clock, so tests keep state TTLs long (seconds), or persist keys. */
#pragma once

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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/cluster.hpp"
#include "core/reply.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"

namespace rltest {

using rl::ReplyStatus;
using rl::RuleOutcome;

inline constexpr uint64_t kMs = 1000;
inline constexpr uint64_t kSec = 1000 * kMs;

/* A fixed instant in 2023; tests align it to their windows. */
inline constexpr uint64_t kEpochUs = 1700000000ULL * kSec;

inline uint64_t windowStart(uint64_t windowUs) {
    return (kEpochUs / windowUs + 1) * windowUs;
}

inline std::string findInPath(const char* name) {
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

inline std::string readFile(const std::string& path) {
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
    uint64_t burst = 0;
    uint64_t cost = 1;
    uint64_t delay = 0;
    bool dryRun = false;
    std::string name = "r";     /* what an override names */
    bool burstFollows = false;  /* burst is the limit's default */
    uint64_t slot = 0;          /* concurrency: the request's slot */
    int64_t charge = 0;         /* a charge (or credit) call's units */
    /* a calendar rule's bounds (src/core/calendar.hpp), us; 0: none */
    int64_t bounds[3] = {0, 0, 0};
    /* a trial (SPEC section 11, a dry run too): 1 + the index among its
     * request's rules of the rule whose place it takes; 0: none */
    size_t place = 0;

    bool calendar() const { return bounds[2] > 0; }
};

struct Decision {
    ReplyStatus status = ReplyStatus::Malformed;
    bool allowed = false;
    std::vector<RuleOutcome> out;
    int64_t nowUs = -1;
    std::string error;
    int64_t grant = 0;  /* units granted to the request's lease */
};

inline std::string describe(const Decision& d) {
    std::ostringstream s;
    s << (d.allowed ? "allowed" : "rejected");
    for (const RuleOutcome& o : d.out) {
        s << " {remaining " << o.remaining << ", reset_ms " << o.resetMs
          << ", retry_ms " << o.retryMs << ", delay_ms " << o.delayMs << "}";
    }
    return s.str();
}

/* RL_TEST_ACROSS=1 (a second run of the script's tests, CMakeLists.txt):
 * every call is sent as a Cluster node's call across slots is (the
 * script with its flags, no key declared, the map of the keys' slots
 * last: src/core/script.hpp), on the same server; the script must
 * decide, reply and write as it does for declared keys. */
inline bool acrossSlots() {
    static const bool on = [] {
        const char* v = std::getenv("RL_TEST_ACROSS");
        return v != nullptr && std::string_view(v) == "1";
    }();
    return on;
}

/* The script a call names (its text for EVAL, else its SHA). */
inline std::string scriptOf(bool sha) {
    if (acrossSlots()) {
        return std::string(sha ? rl::crossSlotScriptSha()
                               : rl::crossSlotScriptText());
    }
    return std::string(sha ? rl::scriptSha() : rl::scriptText());
}

class ScriptFixture : public testing::Test {
protected:
    static void SetUpTestSuite() { startServer({}); }

    /* redis-server with these arguments besides the fixture's own */
    static void startServer(const std::vector<std::string>& extra) {
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
        args.insert(args.end(), extra.begin(), extra.end());
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
     * src/core/script.hpp's layout, at time nowUs (0: Redis' TIME),
     * maybe a refund. */
    ReplyPtr run(const std::vector<Rule>& rules, uint64_t nowUs, bool sha,
                 bool refund) {
        return command(argvOf(rules, nowUs, sha, refund));
    }

    /* A rule's spec, as the module makes it (src/core/script.hpp). */
    static std::string specOf(const Rule& r) {
        std::string spec(rl::specBytes(r.algorithm, r.name), '\0');
        auto* p = reinterpret_cast<unsigned char*>(spec.data());
        rl::writeSpec(p, r.algorithm, r.name, r.limit, r.windowUs, r.burst,
                      r.delay, r.dryRun, r.burstFollows, r.calendar(),
                      r.place > 0);
        return spec;
    }

    /* One request of a call: its rules, its time t (src/core/script.hpp:
     * 0 Redis' TIME, -A A us before it, else that time). */
    using Request = std::pair<std::vector<Rule>, int64_t>;

    /* The argument vector of a call of these requests, keys (then their
     * block keys) and specs each once, as the module makes it; across
     * slots (RL_TEST_ACROSS=1, or `across`) as a Cluster node's call of
     * several slots is made, its keys by slot. */
    static std::vector<std::string> callArgv(
        const std::vector<Request>& requests, bool sha, bool refund,
        const std::vector<uint64_t>& asks = {},
        rl::CallKind kind = rl::CallKind::Decide, bool across = false) {
        across = across || acrossSlots();
        if (refund && kind == rl::CallKind::Decide) {
            kind = rl::CallKind::Refund;
        }
        std::vector<std::string> keys, specs;
        std::map<std::string, size_t> keyIndex, specIndex;
        auto index = [](std::map<std::string, size_t>& seen,
                        std::vector<std::string>& list, std::string s) {
            auto [it, added] = seen.emplace(s, list.size() + 1);
            if (added) {
                list.push_back(s);
            }
            return it->second;
        };
        std::string map;
        if (across) {
            /* the keys first, then a slot's keys together (the slots
             * in the order they come, each slot's keys in theirs),
             * the map a byte a key: 1 where a slot starts */
            for (const auto& q : requests) {
                for (const Rule& r : q.first) {
                    index(keyIndex, keys, r.key);
                }
            }
            std::map<uint16_t, size_t> rank;
            for (const std::string& k : keys) {
                rank.emplace(rl::keySlot(k), rank.size());
            }
            std::stable_sort(keys.begin(), keys.end(),
                             [&](const std::string& a, const std::string& b) {
                                 return rank[rl::keySlot(a)] <
                                        rank[rl::keySlot(b)];
                             });
            keyIndex.clear();
            for (size_t i = 0; i < keys.size(); i++) {
                keyIndex[keys[i]] = i + 1;
                bool first = i == 0 ||
                             rl::keySlot(keys[i]) != rl::keySlot(keys[i - 1]);
                map.push_back(first ? '\1' : '\0');
            }
        }
        std::string head;
        size_t q = 0;
        for (const auto& [rules, t] : requests) {
            size_t extra = 0;
            for (const Rule& r : rules) {
                extra += r.calendar() ? rl::kBoundsBytes : 0;
                extra += r.place > 0 ? rl::kPlaceBytes : 0;
            }
            std::string part(rl::requestBytes(rules.size()) + extra, '\0');
            auto* p = reinterpret_cast<unsigned char*>(part.data());
            p = rl::requestHead(p, rules.size(), t,
                                q < asks.size() ? asks[q] : 0);
            q++;
            for (const Rule& r : rules) {
                size_t k = index(keyIndex, keys, r.key);
                size_t s = index(specIndex, specs, specOf(r));
                if (r.algorithm == "concurrency") {
                    p = rl::slotRecord(p, k, s, r.slot);
                } else if (kind == rl::CallKind::Charge ||
                           kind == rl::CallKind::Credit) {
                    p = rl::chargeRecord(p, k, s, r.charge);
                } else {
                    p = rl::ruleRecord(p, k, s, r.cost);
                }
                if (r.calendar()) {
                    p = rl::boundsRecord(p, r.bounds);
                }
                if (r.place > 0) {
                    p = rl::placeRecord(p, r.place);
                }
            }
            head += part;
        }
        std::vector<std::string> argv{sha ? "EVALSHA" : "EVAL"};
        if (across) {
            argv.push_back(std::string(sha ? rl::crossSlotScriptSha()
                                           : rl::crossSlotScriptText()));
            argv.push_back("0");
        } else {
            argv.push_back(std::string(sha ? rl::scriptSha()
                                           : rl::scriptText()));
            argv.push_back(std::to_string(2 * keys.size()));
        }
        argv.insert(argv.end(), keys.begin(), keys.end());
        for (const std::string& key : keys) {
            argv.push_back(key.substr(0, rl::blockKeyLength(key.size())));
        }
        argv.push_back(head);
        argv.insert(argv.end(), specs.begin(), specs.end());
        if (kind != rl::CallKind::Decide) {
            argv.emplace_back(rl::callWord(kind));
        }
        if (across) {
            argv.push_back(map);
        }
        return argv;
    }

    /* Where a call's head is among its arguments, for `keys` keys. */
    static size_t headArg(size_t keys) { return 3 + 2 * keys; }

    /* The argument vector of one request's call, as strings. */
    static std::vector<std::string> argvOf(const std::vector<Rule>& rules,
                                           uint64_t nowUs, bool sha,
                                           bool refund) {
        return callArgv({{rules, static_cast<int64_t>(nowUs)}}, sha, refund);
    }

    /* One request's part of a call's reply, `at` bytes after its clock,
     * decoded as the module decodes it (with each rule's cost and dry
     * run); its time as the module works it out: t > 0 that time, else
     * the reply's clock less -t. */
    static Decision decodePart(const redisReply* reply, size_t at,
                               const std::vector<Rule>& rules, int64_t t) {
        size_t n = rules.size();
        Decision d;
        d.out.assign(n, RuleOutcome{-1, -1, -1, -1, -1});
        std::vector<rl::RuleAsked> asked;
        for (const Rule& r : rules) {
            asked.push_back({r.cost, r.dryRun});
        }
        const int64_t clock = rl::replyClock(reply);
        redisReply slice{};
        const redisReply* part = reply;
        if (clock >= 0 && rl::kClockBytes + at + rl::replyBytes(n) <=
                              reply->len) {
            slice.type = REDIS_REPLY_STRING;
            slice.len = rl::replyBytes(n);
            slice.str = reply->str + rl::kClockBytes + at;
            part = &slice;
        }
        d.status = rl::decodeReply(part, n, asked.data(), &d.allowed,
                                   d.out.data());
        d.nowUs = t > 0 ? t : clock + t;
        if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
            d.error.assign(reply->str, reply->len);
        }
        return d;
    }

    /* The overrides' limits of a call's rules [from, from + n) and its
     * lease's grant from its reply's trailer, after `parts` bytes of
     * parts, as the module reads them (src/redis/link.cpp), into d;
     * *next as rl::trailerFor() keeps it. */
    static void readTrailer(const redisReply* reply, size_t parts,
                            size_t rules, size_t* next, size_t from,
                            Decision* d) {
        size_t want = rl::kClockBytes + parts;
        ASSERT_GE(reply->len, want);
        const char* trailer = reply->str + want;
        size_t len = reply->len - want;
        ASSERT_TRUE(rl::validTrailer(trailer, len, rules))
            << "the trailer: " << len << " bytes";
        int64_t limits[rl::kMaxRulesPerCall];
        size_t n = d->out.size();
        if (rl::trailerFor(trailer, len, next, from, n, limits, &d->grant)) {
            for (size_t i = 0; i < n; i++) {
                d->out[i].limit = limits[i];
            }
        }
    }

    Decision call(const std::vector<Rule>& rules, uint64_t nowUs,
                  bool sha = false) {
        ReplyPtr reply = run(rules, nowUs, sha, false);
        Decision d = decodePart(reply.get(), 0, rules,
                                static_cast<int64_t>(nowUs));
        if (d.status == ReplyStatus::Ok) {
            /* a call of one request replies with its clock and part, and
             * the overrides that decided it */
            size_t next = 0;
            readTrailer(reply.get(), rl::replyBytes(rules.size()),
                        rules.size(), &next, 0, &d);
            EXPECT_GT(rl::replyClock(reply.get()), 0);
        }
        return d;
    }

    /* One call carrying requests as the module's batches do, each with
     * its time t (-A: A us before Redis' TIME). */
    ReplyPtr batch(const std::vector<Request>& requests,
                   const std::vector<uint64_t>& asks = {}) {
        /* EVALSHA, as the module calls; a test may start with a batch,
         * before any EVAL loaded the script */
        ReplyPtr r = command(callArgv(requests, true, false, asks));
        if (rl::isNoScript(r.get())) {
            r = command(callArgv(requests, false, false, asks));
        }
        return r;
    }

    /* The part of a batch's reply for one request, `at` bytes after the
     * clock, decoded as the module decodes it. */
    static Decision part(const redisReply* reply, size_t at,
                         const Request& request) {
        return decodePart(reply, at, request.first, request.second);
    }

    /* One batch of these requests and each one's decision, in order: the
     * reply must be the script's, every part must decode. */
    void decideBatch(const std::vector<Request>& requests,
                     std::vector<Decision>* out,
                     const std::vector<uint64_t>& asks = {}) {
        ReplyPtr r = batch(requests, asks);
        ASSERT_NE(r, nullptr);
        ASSERT_EQ(r->type, REDIS_REPLY_STRING)
            << std::string(r->str != nullptr ? r->str : "", r->len);
        size_t at = 0, rules = 0;
        for (const Request& q : requests) {
            out->push_back(part(r.get(), at, q));
            ASSERT_EQ(out->back().status, ReplyStatus::Ok);
            at += rl::replyBytes(q.first.size());
            rules += q.first.size();
        }
        size_t next = 0, from = 0, base = out->size() - requests.size();
        for (size_t i = 0; i < requests.size(); i++) {
            ASSERT_NO_FATAL_FAILURE(readTrailer(r.get(), at, rules, &next,
                                                from, &(*out)[base + i]));
            from += requests[i].first.size();
        }
    }

    /* Gives back what a decision at thenUs counted (releases its slots;
     * another kind of the module's own calls: renews them, charges
     * each rule's `charge`); the reply is 1. */
    void refund(const std::vector<Rule>& rules, uint64_t thenUs,
                rl::CallKind kind = rl::CallKind::Refund) {
        ReplyPtr reply = command(callArgv(
            {{rules, static_cast<int64_t>(thenUs)}}, false, false, {}, kind));
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

    /* A rule's state as the script keeps it (lua/meter.lua: packed
     * little-endian doubles), field by field, each number in decimal; an
     * absent key gives no fields. */
    std::map<std::string, std::string> state(const Rule& rule) {
        static const std::map<std::string, std::vector<std::string>> names{
            {"fixed_window", {"w", "c"}},
            {"sliding_window", {"w", "c", "p"}},
            {"token_bucket", {"t", "x", "u"}},
            {"leaky_bucket", {"t", "x", "u"}},
            {"gcra", {"t", "f"}}};
        std::map<std::string, std::string> h;
        const std::vector<std::string>& fields = names.at(rule.algorithm);
        ReplyPtr r = command({"GET", rule.key});
        if (r == nullptr || r->type == REDIS_REPLY_NIL) {
            return h;
        }
        if (r->type != REDIS_REPLY_STRING || r->len != 8 * fields.size()) {
            ADD_FAILURE() << "GET " << rule.key << ": not a packed state";
            return h;
        }
        for (size_t i = 0; i < fields.size(); i++) {
            char text[32];
            std::snprintf(text, sizeof text, "%.0f",
                          rl::doubleAt(r->str, i));
            h[fields[i]] = text;
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

    /* A concurrency rule's slots (lua/concurrency.lua): each member's 8
     * bytes as the slot id, and its score, when it expires. */
    std::map<uint64_t, long long> slots(const std::string& key) {
        std::map<uint64_t, long long> m;
        ReplyPtr r = command({"ZRANGE", key, "0", "-1", "WITHSCORES"});
        for (size_t i = 0; r && i + 1 < r->elements; i += 2) {
            const redisReply* member = r->element[i];
            EXPECT_EQ(member->len, 8u) << key;
            uint64_t id = 0;
            for (size_t k = member->len; k-- > 0;) {
                id = id << 8 | static_cast<unsigned char>(member->str[k]);
            }
            m[id] = std::stoll(std::string(r->element[i + 1]->str,
                                           r->element[i + 1]->len));
        }
        return m;
    }

    /* How many times Redis ran `name` (lowercase; scripts' commands
     * included) since the last CONFIG RESETSTAT, from INFO commandstats. */
    long long commandCalls(const std::string& name) {
        ReplyPtr r = command({"INFO", "commandstats"});
        if (r == nullptr || r->type != REDIS_REPLY_STRING) {
            ADD_FAILURE() << "INFO commandstats failed";
            return -1;
        }
        std::string info(r->str, r->len);
        std::string tag = "cmdstat_" + name + ":calls=";
        size_t at = info.find(tag);
        if (at == std::string::npos) {
            return 0;
        }
        return std::stoll(info.substr(at + tag.size()));
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

public:
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

    static Rule log(std::string_view value, uint64_t limit,
                    uint64_t windowUs) {
        return {stateKey(value, "l", "sliding_log", windowUs),
                "sliding_log", limit, windowUs};
    }

    static Rule token(std::string_view value, uint64_t limit,
                      uint64_t windowUs, uint64_t burst) {
        return {stateKey(value, "t", "token_bucket", windowUs),
                "token_bucket", limit, windowUs, burst};
    }

    /* delay = burst: nodelay */
    static Rule leaky(std::string_view value, uint64_t limit,
                      uint64_t windowUs, uint64_t burst, uint64_t delay) {
        return {stateKey(value, "b", "leaky_bucket", windowUs),
                "leaky_bucket", limit, windowUs, burst, 1, delay};
    }

    static Rule gcra(std::string_view value, uint64_t limit,
                     uint64_t windowUs, uint64_t burst, uint64_t delay) {
        return {stateKey(value, "g", "gcra", windowUs), "gcra", limit,
                windowUs, burst, 1, delay};
    }

    /* concurrency=limit hold=holdUs, the request's slot */
    static Rule inflight(std::string_view value, uint64_t limit,
                         uint64_t holdUs, uint64_t slot) {
        Rule r{stateKey(value, "c", "concurrency", 0), "concurrency", limit,
               holdUs};
        r.slot = slot;
        return r;
    }

protected:
    static inline bool missing_ = false;
    static inline std::string startError_;
    static inline pid_t pid_ = -1;
    static inline std::string dir_;
    static inline std::string socket_;

    redisContext* c_ = nullptr;
};

}  // namespace rltest
