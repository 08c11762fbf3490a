/*
 * node_batch.cpp: a Redis Cluster node's calls of one turn of the event
 * loop, as few script calls as its server allows (the Link's part that
 * only a cluster's nodes have; batch.hpp has the batches).
 *
 * A call of declared keys has one slot: Redis refuses declared keys of
 * several slots (CROSSSLOT), whatever the script's flags. So a node
 * whose server took the script with the shebang
 * '#!lua flags=allow-cross-slot-keys' (Redis 7.0 and later, Valkey:
 * learnt as the connection loads its scripts) gets its turn's calls as
 * calls across slots: no key declared, the keys as arguments, one
 * command of the script one slot (lua/rl.lua). A turn of new keys, each
 * its own slot, is then one call per node, as on a single Redis, where
 * it was one per slot. A server that refuses the shebang (Redis 6, a
 * proxy that knows no flags) keeps a call per slot; so do calls after
 * an ASK (ASKING holds for one command of one slot) and calls a call
 * across slots did not do.
 *
 * A call across slots reads each slot's keys first, one MGET a slot
 * through redis.pcall, and writes nothing before: a slot the node does
 * not serve whole (moved; migrating with a key missing here; the
 * cluster down) fails its MGET, and the script decides nothing of it.
 * Its requests' parts say "not decided" (left -1); of the worker's own
 * calls, the reply lists those not done. Those calls go again, each on
 * its own slot with its keys declared, where Redis answers MOVED, ASK
 * or TRYAGAIN as it answers any call (redis/link.cpp follows them, and
 * the map is asked again on MOVED). A request is thus decided by one
 * call or the other, never both: the first did not touch its keys.
 */

#include "link.hpp"

#include "core/reply.hpp"
#include "core/script.hpp"

extern "C" {
/* RL_TEST_SCRIPT_FLAGS=refused (tests only, docs/testing.md): every
 * server refuses the script's flags, as Redis 6 does: calls stay one
 * per slot; set per worker */
ngx_uint_t  ngx_http_rl_script_flags_refused;
}

namespace rl {
namespace {

void onFlags(redisAsyncContext *ac, void *reply, void *) noexcept {
    static_cast<Link *>(ac->data)->flagsReplied(
        ac, static_cast<redisReply *>(reply));
}

/* What RL_TEST_SCRIPT_FLAGS=refused loads instead: a flag no server
 * knows, refused as a server that knows no flags refuses the shebang */
constexpr char kRefusedFlags[] =
    "#!lua flags=allow-cross-slot-keys,rl-test-no-such-flag\nreturn 1";

/* whether the calls from `first` (a slot's calls together) are of one
 * slot: then they go as a call of declared keys, the cheaper */
bool oneSlot(const Call *first) {
    const Call *last = first;
    while (last->next != nullptr) {
        last = last->next;
    }
    return last->slot == first->slot;
}

}  // namespace

/* SCRIPT LOAD of the script with its flags, before the plain one (whose
 * reply makes the link ready): by then the flags' reply has come. */
void Link::loadFlags() {
    std::string_view text = ngx_http_rl_script_flags_refused
                                ? std::string_view(kRefusedFlags,
                                                   sizeof(kRefusedFlags) - 1)
                                : crossSlotScriptText();
    const char *argv[3] = {"SCRIPT", "LOAD", text.data()};
    size_t len[3] = {6, 4, text.size()};
    if (ac_ != nullptr) {
        (void) redisAsyncCommandArgv(ac_, onFlags, nullptr, 3, argv, len);
    }
}

void Link::flagsReplied(redisAsyncContext *ac, redisReply *reply) {
    if (ac != ac_ || reply == nullptr) {
        return;
    }
    std::string_view sha = crossSlotScriptSha();
    crossSlot_ = reply->type == REDIS_REPLY_STRING &&
                 reply->len == sha.size() &&
                 ngx_memcmp(reply->str, sha.data(), sha.size()) == 0;
    if (!crossSlot_ && !flagsLogged_) {
        /* (a handshake's own error, NOAUTH..., fails the next step) */
        flagsLogged_ = true;
        ngx_log_error(NGX_LOG_INFO, log_, 0,
                      "%V: redis %V refused the script's flags (%*s): "
                      "its calls go one per slot, not one per node",
                      &label_, &server_.addr,
                      reply->type == REDIS_REPLY_ERROR
                          ? (reply->len < 120 ? reply->len : 120)
                          : sizeof("bad reply") - 1,
                      reply->type == REDIS_REPLY_ERROR ? reply->str
                                                       : "bad reply");
    }
}

/* A kind's calls of the turn: across slots, in calls of the limits
 * (batch.hpp), where the server takes the flags; by slot the others
 * (out of memory: a call per batch, as valid). */
void Link::sendCluster(CallQueue *q, CallKind kind) {
    bool own = kind != CallKind::Decide;
    if (!buckets_.fill(q, log_)) {
        for (Call *c = q->takeAll(); c != nullptr;) {
            Call *next = c->next;
            c->next = nullptr;
            sendBatch(c, !own && c->asking, kind);
            c = next;
        }
        return;
    }
    if (crossSlot_) {
        CallQueue across;
        buckets_.gather(&across);
        while (!across.empty()) {
            Call *first = across.take();
            sendBatch(first, false, kind, !oneSlot(first));
        }
    }
    while (Call *first = buckets_.next()) {
        sendBatch(first, !own && first->asking, kind);
    }
}

void Link::againAlone(Call *call, CallKind kind) {
    if (call->group == nullptr) {
        release(call);      /* gone meanwhile: nobody waits */
        return;
    }
    call->single = true;
    if (kind == CallKind::Decide) {
        enqueue(call);
        return;
    }
    ownCalls_[static_cast<int>(kind) - 1].push(call);
    if (!flush_.posted) {
        ngx_post_event(&flush_, &ngx_posted_events);
    }
}

bool Link::undecided(const redisReply *reply, size_t at, ngx_uint_t rules) {
    return rules > 0 && reply->len >= at + replyBytes(rules) &&
           doubleAt(reply->str + at, 0) < 0;
}

/* The reply of a call across slots of the worker's own calls that did
 * not do them all: the index of each one not done (among the calls that
 * went), increasing; those go again on their own slot, the others are
 * done. A string that says no such thing: all failed. Any other reply:
 * false (read as any call's). */
bool Link::ownAcrossReplied(Batch *batch, const redisReply *reply) {
    if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
        return false;
    }
    size_t n = reply->len / 8;
    bool valid = reply->len > 0 && reply->len % 8 == 0;
    double last = -1;
    for (size_t i = 0; valid && i < n; i++) {
        double d = doubleAt(reply->str, i);
        valid = d > last && d < 1e9 && d == static_cast<double>(
                                                 static_cast<int64_t>(d));
        last = d;
    }
    if (!valid) {
        settle(batch, [](ngx_http_rl_group_t *group) {
            ngx_http_rl_refund_done(group, NGX_HTTP_RL_REFUND_FAILED);
        });
        return true;
    }
    CallKind kind = batch->kind;
    Call *c = batch->first;
    recycle(batch);
    size_t index = 0, at = 0;
    ngx_uint_t away = 0;
    while (c != nullptr) {
        Call *next = c->next;
        bool went = c->rules > 0;
        if (went && at < n && doubleAt(reply->str, at) == index) {
            at++;
            away++;
            againAlone(c, kind);
        } else {
            ngx_http_rl_group_t *group = c->group;
            release(c);
            if (group != nullptr) {
                group->call = nullptr;
                ngx_http_rl_refund_done(group, NGX_HTTP_RL_RETRY_NONE);
            }
        }
        index += went ? 1 : 0;
        c = next;
    }
    if (away > 0) {
        notHere(away, kind);
    }
    return true;
}

/* at info, once a minute at most for each kind of call: a slot
 * migrating makes one such call a turn until it is done */
void Link::notHere(ngx_uint_t calls, CallKind kind) {
    static const char *const what[] = {"decision", "refund", "renewal",
                                       "charge"};
    auto k = static_cast<size_t>(kind);
    if (k >= sizeof(what) / sizeof(what[0]) ||
        (notHereAt_[k] != 0 && ngx_current_msec - notHereAt_[k] < 60000)) {
        return;
    }
    notHereAt_[k] = ngx_current_msec | 1;
    ngx_log_error(NGX_LOG_INFO, log_, 0,
                  "%V: redis %V does not serve the whole slot of %ui "
                  "%s(s) of a call across slots (it moved, or moves): "
                  "they go again, each on its own slot (such lines at "
                  "most once a minute)", &label_, &server_.addr, calls,
                  what[k]);
}

}  // namespace rl
