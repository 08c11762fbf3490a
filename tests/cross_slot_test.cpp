/* A Redis Cluster node's call across slots (lua/rl.lua, src/redis/node_batch.cpp)
 * on a real node: a redis-server with cluster-enabled that serves half
 * the slots (0-8191; cluster-require-full-coverage no), so that a call
 * may carry requests of slots the node does not serve, as one does when
 * a slot moved away or is moving.
 *
 * - Redis refuses a call whose declared keys are of several slots,
 *   flags or not (CROSSSLOT): the premise of calls across slots, which
 *   declare none.
 * - A call across slots decides the requests of the slots it serves as
 *   a call per slot would, and nothing of the others: their parts read
 *   left -1, no key of theirs is read or written.
 * - The worker's own calls (a refund) across slots do what they can and
 *   list the requests they did not do.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cluster.hpp"
#include "redis_fixture.hpp"

namespace {

using namespace rltest;

constexpr uint64_t kDay = 86400 * kSec;
constexpr uint16_t kServedBelow = 8192;

/* a TCP port nothing listens on now, for the node's cluster bus (its
 * default, the client port + 10000, is 10000 for --port 0: one node at
 * a time on the host) */
int freePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

class CrossSlot : public ScriptFixture {
protected:
    static void SetUpTestSuite() {
        startServer({"--cluster-enabled", "yes", "--cluster-config-file",
                     "nodes.conf", "--cluster-require-full-coverage", "no",
                     "--cluster-port", std::to_string(freePort())});
    }

    void SetUp() override {
        ScriptFixture::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        /* (once per suite: a second time says the slots are busy) */
        command({"CLUSTER", "ADDSLOTSRANGE", "0",
                 std::to_string(kServedBelow - 1)});
        bool ok = false;
        for (int i = 0; i < 500 && !ok; i++) {
            ReplyPtr r = command({"CLUSTER", "INFO"});
            ok = r != nullptr && r->type == REDIS_REPLY_STRING &&
                 std::string(r->str, r->len).find("cluster_state:ok") !=
                     std::string::npos;
            if (!ok) {
                timespec pause = {0, 10 * 1000 * 1000};
                nanosleep(&pause, nullptr);
            }
        }
        ASSERT_TRUE(ok) << "the node's cluster state is not ok";
    }

    /* a key value whose slot the node serves (or not), not `avoid`'s */
    static std::string value(bool served, const std::string& avoid = "") {
        for (int i = 0;; i++) {
            std::string v = "v" + std::to_string(i);
            uint16_t slot = rl::valueSlot(v);
            if ((slot < kServedBelow) == served && v != avoid &&
                (avoid.empty() || slot != rl::valueSlot(avoid))) {
                return v;
            }
        }
    }

    /* the call's reply as a string of figures */
    ReplyPtr across(const std::vector<Request>& requests,
                    rl::CallKind kind = rl::CallKind::Decide) {
        ReplyPtr r = command(callArgv(requests, false, false, {}, kind,
                                      true));
        EXPECT_NE(r, nullptr);
        return r;
    }

    long long dbsize() { return integerCommand({"DBSIZE"}); }
};

TEST_F(CrossSlot, DeclaredKeysOfSeveralSlotsAreRefusedWhateverTheFlags) {
    std::string here = value(true);
    Rule a = fixed(here, 5, kDay);
    Rule b = fixed(value(true, here), 5, kDay);
    ASSERT_NE(rl::keySlot(a.key), rl::keySlot(b.key));
    std::vector<std::string> argv =
        callArgv({{{a}, 0}, {{b}, 0}}, false, false);
    argv[1] = std::string(rl::crossSlotScriptText());
    ReplyPtr r = command(argv);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
    EXPECT_EQ(std::string(r->str, r->len).substr(0, 9), "CROSSSLOT");
    EXPECT_EQ(dbsize(), 0);
}

TEST_F(CrossSlot, DecidesTheSlotsItServesAndNothingOfTheOthers) {
    std::string here = value(true), there = value(false);
    std::string also = value(true, here);
    Rule a = fixed(here, 5, kDay);
    Rule b = fixed(there, 5, kDay);
    Rule c1 = fixed(also, 5, kDay);
    Rule c2 = sliding(also, 3, kDay);
    std::vector<Request> calls{{{a}, 0}, {{b}, 0}, {{c1, c2}, 0},
                               {{a}, 0}, {{b}, 0}};
    ReplyPtr r = across(calls);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << std::string(r->str != nullptr ? r->str : "", r->len);
    ASSERT_GT(rl::replyClock(r.get()), 0);
    ASSERT_EQ(r->len, rl::kClockBytes + rl::replyBytes(6));

    Decision d0 = part(r.get(), 0, calls[0]);
    ASSERT_EQ(d0.status, ReplyStatus::Ok);
    EXPECT_TRUE(d0.allowed);
    EXPECT_EQ(d0.out[0].remaining, 4);
    /* not decided: left -1, the module's mark (node_batch.cpp) */
    size_t at = rl::kClockBytes + rl::replyBytes(1);
    EXPECT_EQ(rl::doubleAt(r->str + at, 0), -1);
    Decision dc = part(r.get(), rl::replyBytes(2), calls[2]);
    ASSERT_EQ(dc.status, ReplyStatus::Ok);
    EXPECT_TRUE(dc.allowed);
    EXPECT_EQ(dc.out[0].remaining, 4);
    EXPECT_EQ(dc.out[1].remaining, 2);
    Decision d3 = part(r.get(), rl::replyBytes(4), calls[3]);
    ASSERT_EQ(d3.status, ReplyStatus::Ok);
    EXPECT_EQ(d3.out[0].remaining, 3);
    at = rl::kClockBytes + rl::replyBytes(5);
    EXPECT_EQ(rl::doubleAt(r->str + at, 0), -1);

    /* a's and c's states, and nothing else */
    EXPECT_EQ(state(a).at("c"), "2");
    EXPECT_EQ(state(c1).at("c"), "1");
    EXPECT_EQ(dbsize(), 3);
}

TEST_F(CrossSlot, NoSlotServedNothingWritten) {
    /* every request's slot elsewhere: all parts marked, nothing read
     * or written, yet a reply of the script's (its clock) */
    std::string there = value(false);
    Rule b = fixed(there, 5, kDay);
    Rule e = fixed(value(false, there), 5, kDay);
    ASSERT_NE(rl::keySlot(b.key), rl::keySlot(e.key));
    ReplyPtr r = across({{{b}, 0}, {{e}, 0}});
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    EXPECT_GT(rl::replyClock(r.get()), 0);
    EXPECT_EQ(rl::doubleAt(r->str + rl::kClockBytes, 0), -1);
    EXPECT_EQ(rl::doubleAt(r->str + rl::kClockBytes + rl::replyBytes(1), 0),
              -1);
    EXPECT_EQ(dbsize(), 0);
}

TEST_F(CrossSlot, OwnCallsListWhatTheyDidNotDo) {
    std::string here = value(true), there = value(false);
    Rule a = fixed(here, 5, kDay);
    Rule b = fixed(there, 5, kDay);
    int64_t t = redisTimeUs();
    ASSERT_TRUE(admits(a, static_cast<uint64_t>(t)));
    ASSERT_TRUE(admits(a, static_cast<uint64_t>(t)));
    ASSERT_EQ(state(a).at("c"), "2");

    ReplyPtr r = across({{{b}, t}, {{a}, t}, {{b}, t}},
                        rl::CallKind::Refund);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING)
        << (r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer)
                                           : std::string(r->str, r->len));
    ASSERT_EQ(r->len, 16u);
    EXPECT_EQ(rl::doubleAt(r->str, 0), 0);  /* the first request */
    EXPECT_EQ(rl::doubleAt(r->str, 1), 2);  /* and the third */
    EXPECT_EQ(state(a).at("c"), "1");       /* the second was given back */

    /* all done: 1, as a call per slot replies */
    r = across({{{a}, t}}, rl::CallKind::Refund);
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(r->integer, 1);
    EXPECT_EQ(state(a).at("c"), "0");
}

}  // namespace
