/*
 * redis/link.cpp: per worker, one pipelined hiredis connection per Redis
 * server, shared by the zones on it (same address, credentials, db, TLS
 * and timeouts); this file is its pipeline. Requests sent during one
 * turn of the event loop leave together, whatever their zone, as one
 * script call, when the turn's posted events run (batch.hpp); each
 * reply is handed out to the calls of its batch, a refusal or a
 * redirection read first.
 *
 * The connection's life (connecting, the handshake, incidents, the
 * end) is in connection.cpp. A Redis Cluster's nodes are links too,
 * each to one master, driven by the cluster's store (cluster.cpp):
 * their batches hold one slot each, or go across the node's slots
 * (node_batch.cpp), and a MOVED or ASK reply sends the calls where it
 * says.
 */

#include "link.hpp"

#include <poll.h>

#include <hiredis/sds.h>

#include "clock.hpp"
#include "core/cluster.hpp"
#include "core/reply.hpp"
#include "core/reply_error.hpp"

namespace rl {
namespace {

/* how long an exiting worker waits for its last calls' replies */
constexpr ngx_msec_t kExitWaitMs = 1000;

void onReply(redisAsyncContext *, void *reply, void *data) noexcept {
    Batch *batch = static_cast<Batch *>(data);
    batch->link->replied(batch, static_cast<redisReply *>(reply));
}

void onRefunds(redisAsyncContext *, void *reply, void *data) noexcept {
    Batch *batch = static_cast<Batch *>(data);
    batch->link->refundsReplied(batch, static_cast<redisReply *>(reply));
}

void onRefunded(redisAsyncContext *, void *reply, void *data) noexcept {
    Call *call = static_cast<Call *>(data);
    call->link->refunded(call, static_cast<redisReply *>(reply));
}

/* What a failed call of the group's tells it: a call of the worker's
 * own (owned_call.hpp) that did not run (TRYAGAIN: its slot migrates)
 * goes again after a while, and its owner hears apart that one got no
 * reply (a release goes again once the link is made again: it is
 * harmless twice; a charge is not); anything else failed (an error;
 * a lease's call, a request's refund: as ever). */
int failure(const ngx_http_rl_group_t *group, const redisReply *reply) {
    if (group->owned_done == nullptr) {
        return NGX_HTTP_RL_REFUND_FAILED;
    }
    if (reply == nullptr) {
        return NGX_HTTP_RL_REFUND_LOST;
    }
    return classifyError({reply->str, reply->len}) == ReplyError::SlotBusy
               ? NGX_HTTP_RL_RETRY_LATER
               : NGX_HTTP_RL_REFUND_FAILED;
}

}  // namespace

bool Link::operatorCommand(redisCallbackFn *fn, void *data, int argc,
                           const char **argv, const size_t *len) {
    return usable() && ac_ != nullptr &&
           redisAsyncCommandArgv(ac_, fn, data, argc, argv, len) == REDIS_OK;
}

void Link::heardMoved(const redisAsyncContext *ac, const redisReply *reply) {
    if (reply == nullptr || ac == nullptr || ac->data == nullptr) {
        return;
    }
    auto *link = static_cast<Link *>(ac->data);
    Redirect to;
    if (link->cluster_ != nullptr && reply->type == REDIS_REPLY_ERROR &&
        parseRedirect({reply->str, reply->len}, &to) && !to.ask) {
        link->cluster_->moved(to, link);
    }
}

/* A call for the group, from the free list. */
Call *Link::take(ngx_http_rl_group_t *group) {
    Call *call = free_;
    if (call != nullptr) {
        free_ = call->next;
    } else {
        call = static_cast<Call *>(ngx_alloc(sizeof(Call), log_));
        if (call == nullptr) {
            return nullptr;
        }
    }
    call->link = this;
    call->group = group;
    call->rules = ngx_http_rl_records(group);
    call->slot = static_cast<uint16_t>(group->slot);
    call->asking = false;
    call->single = false;
    return call;
}

Call *Link::send(ngx_http_rl_group_t *group, bool asking) {
    resume();
    if (!usable()) {
        return nullptr;
    }
    Call *call = take(group);
    if (call != nullptr) {
        call->asking = asking;
        enqueue(call);
    }
    return call;
}

/* A refund leaves at once, on its own; the group hears when Redis took
 * it (or could not), whatever the reply. */
Call *Link::refund(ngx_http_rl_group_t *group, int argc, const char **argv,
                   const size_t *len, bool asking) {
    if (!usable()) {
        return nullptr;
    }
    Call *call = take(group);
    if (call == nullptr) {
        return nullptr;
    }
    if ((asking && redisAsyncCommand(ac_, nullptr, nullptr, "ASKING")
                       != REDIS_OK) ||
        redisAsyncCommandArgv(ac_, onRefunded, call, argc, argv, len)
            != REDIS_OK)
    {
        release(call);
        return nullptr;
    }
    return call;
}

void Link::refunded(Call *call, const redisReply *reply) {
    ngx_http_rl_group_t *group = call->group;
    ngx_uint_t slot = call->slot;
    release(call);
    if (reply == nullptr) {
        lost_ = true;
    }
    bool noScript = isNoScript(reply);
    Redirect to;
    if (cluster_ != nullptr && reply != nullptr &&
        reply->type == REDIS_REPLY_ERROR &&
        parseRedirect({reply->str, reply->len}, &to))
    {
        /* the slot moves: once more where the reply says (an ASK's
         * target is the group's to ask) */
        if (group != nullptr) {
            group->call = nullptr;
            int retry;
            if (to.ask) {
                group->ask = reinterpret_cast<ngx_http_rl_link_t *>(
                    cluster_->asked(to, this));
                retry = group->ask != nullptr ? NGX_HTTP_RL_RETRY_ASK
                                              : NGX_HTTP_RL_REFUND_FAILED;
            } else {
                cluster_->moved(to, this);
                retry = NGX_HTTP_RL_RETRY_MOVED;
            }
            ngx_http_rl_refund_done(group, retry);
        }
        return;
    }
    bool failed = reply == nullptr || reply->type == REDIS_REPLY_ERROR;
    bool refused = failed && reply != nullptr &&
                   errorReplied(reply, "replied to a refund", slot);
    if (group != nullptr) {
        group->call = nullptr;
        ngx_http_rl_refund_done(group, noScript ? NGX_HTTP_RL_RETRY_EVAL
                                       : failed ? failure(group, reply)
                                                : NGX_HTTP_RL_RETRY_NONE);
    }
    if (refused) {
        refuse(reply);
    }
}

/* The call leaves with the others of this turn (flush()). */
void Link::enqueue(Call *call) {
    queue_.push(call);
    if (!flush_.posted) {
        ngx_post_event(&flush_, &ngx_posted_events);
    }
}

Call *Link::queue(ngx_http_rl_group_t *group, CallKind kind) {
    resume();
    if (!usable() || kind == CallKind::Decide) {
        return nullptr;
    }
    Call *call = take(group);
    if (call != nullptr) {
        ownCalls_[static_cast<int>(kind) - 1].push(call);
        if (!flush_.posted) {
            ngx_post_event(&flush_, &ngx_posted_events);
        }
    }
    return call;
}

/* The queued calls leave, as few script calls as the limits allow (in
 * a cluster, a call per slot): the worker's own first, refunds (a
 * lease's return, a release), renewals and charges, then the requests'
 * decisions, so that a decision counts what this turn gave back (a
 * request that finds its group's lease ended gives it back and goes to
 * Redis in the same turn: its figures then read as in exact mode). A
 * release never overtakes the decision that took its slot: that one
 * left in an earlier turn, or, still queued when its request went, it
 * does not leave at all. On a new connection, once it takes calls (its
 * handshake under way, or done if an incident was open), the slots of
 * the worker's running requests go first: put back, if Redis lost them
 * (a restart, a failover), ahead of the decisions queued meanwhile. */
void Link::flush() {
    if (fresh_ && ac_ != nullptr && usable()) {
        fresh_ = false;
        ngx_http_rl_link_connected(
            reinterpret_cast<ngx_http_rl_link_t *>(this));
    }
    if (flush_.posted) {
        /* (posted again by the renewals above; worker exit: writeNow) */
        ngx_delete_posted_event(&flush_);
    }
    if (locating_) {
        return;     /* they leave once the server is located */
    }
    if (cluster_ == nullptr) {
        for (int k = 0; k < 3; k++) {
            while (!ownCalls_[k].empty()) {
                sendBatch(ownCalls_[k].take(), false,
                          static_cast<CallKind>(k + 1));
            }
        }
        while (!queue_.empty()) {
            sendBatch(queue_.take(), false);
        }
    } else {
        for (int k = 0; k < 3; k++) {
            sendCluster(&ownCalls_[k], static_cast<CallKind>(k + 1));
        }
        sendCluster(&queue_, CallKind::Decide);
    }
    evalNext_ = false;
}

/* The worker exits (no turn of the event loop is left): what the link
 * has queued (the leases' returns, the slots' releases) is written now,
 * and their replies read, for kExitWaitMs at most. One write of it, as
 * before, left the rest of a large queue unwritten (80,000 returns of a
 * full lease table: t/057 (e)); and a socket closed with replies unread
 * is reset, which may drop what Redis had not read yet. */
void Link::writeNow() {
    flush();
    redisAsyncContext *ac = ac_;
    if (ac == nullptr) {
        return;
    }
    redisAsyncHandleWrite(ac);
    ngx_msec_t until = ngx_current_msec + kExitWaitMs;
    /* (ac_ is cleared when hiredis drops the connection: a reply's
     * error, or the server's close) */
    while (ac_ == ac && ready_ && ac->replies.head != nullptr) {
        ngx_time_update();
        auto left = static_cast<ngx_msec_int_t>(until - ngx_current_msec);
        if (left <= 0) {
            break;
        }
        struct pollfd p = {ac->c.fd, POLLIN, 0};
        if (sdslen(ac->c.obuf) > 0) {
            p.events |= POLLOUT;
        }
        if (poll(&p, 1, static_cast<int>(left)) <= 0) {
            break;
        }
        if (p.revents & POLLOUT) {
            redisAsyncHandleWrite(ac);
        }
        if (ac_ == ac && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
            redisAsyncHandleRead(ac);
        }
    }
}

void Link::sendBatch(Call *first, bool asking, CallKind kind, bool across) {
    bool own = kind != CallKind::Decide;
    Batch *batch = freeBatches_;
    if (batch != nullptr) {
        freeBatches_ = batch->next;
    } else {
        batch = static_cast<Batch *>(ngx_alloc(sizeof(Batch), log_));
    }
    size_t len = 0;
    if (batch != nullptr && ac_ != nullptr) {
        len = command_.build(first, evalNext_, monotonicUs(), log_, kind,
                             across);
    }
    if (len > 0) {
        batch->link = this;
        batch->first = first;
        batch->kind = kind;
        batch->across = across;
        /* ASKING holds for the next command only: the batch */
        if ((!asking || redisAsyncCommand(ac_, nullptr, nullptr, "ASKING")
                            == REDIS_OK) &&
            redisAsyncFormattedCommand(ac_, own ? onRefunds : onReply,
                                       batch, command_.data(), len)
                == REDIS_OK)
        {
            return;
        }
    }
    /* no connection any more, or no memory: the policy, now */
    if (batch != nullptr) {
        batch->first = first;
        batch->kind = kind;
        batch->across = false;
        if (own) {
            refundsReplied(batch, nullptr);
            return;
        }
        recycle(batch);
    }
    for (Call *c = first; c != nullptr;) {
        Call *next = c->next;
        answer(c, nullptr);
        c = next;
    }
}

/* A batch of refunds (renewals, charges) was answered: 1, or an error
 * for all of them (a lost script, a slot that moved: each goes again on
 * its own). */
void Link::refundsReplied(Batch *batch, const redisReply *reply) {
    if (reply == nullptr) {
        lost_ = true;
    } else if (ready_) {
        stalled_ = false;
        stopDeadline();
    }
    if (batch->across && ownAcrossReplied(batch, reply)) {
        return;
    }
    bool failed = reply == nullptr || reply->type == REDIS_REPLY_ERROR;
    int retry = isNoScript(reply) ? NGX_HTTP_RL_RETRY_EVAL
                : failed          ? NGX_HTTP_RL_REFUND_FAILED
                                  : NGX_HTTP_RL_RETRY_NONE;
    Redirect to;
    bool redirect = cluster_ != nullptr && reply != nullptr &&
                    reply->type == REDIS_REPLY_ERROR &&
                    parseRedirect({reply->str, reply->len}, &to);
    bool refused = false;
    if (redirect && !to.ask) {
        cluster_->moved(to, this);
        retry = NGX_HTTP_RL_RETRY_MOVED;
    } else if (failed && !redirect && reply != nullptr) {
        refused = errorReplied(reply, "replied to refunds",
                               batch->first != nullptr ? batch->first->slot
                                                       : 0);
    }
    settle(batch, [&](ngx_http_rl_group_t *group) {
        int r = retry;
        if (redirect && to.ask) {
            group->ask = reinterpret_cast<ngx_http_rl_link_t *>(
                cluster_->asked(to, this));
            r = group->ask != nullptr ? NGX_HTTP_RL_RETRY_ASK
                                      : NGX_HTTP_RL_REFUND_FAILED;
        } else if (r == NGX_HTTP_RL_REFUND_FAILED) {
            r = failure(group, reply);
        }
        ngx_http_rl_refund_done(group, r);
    });
    if (refused) {
        refuse(reply);
    }
}

/* Hands a call its reply (NULL: none) and frees it. */
void Link::answer(Call *call, const redisReply *reply, int64_t clockUs,
                  const int64_t *limits, int64_t grant) {
    ngx_http_rl_group_t *group = call->group;
    release(call);
    if (group != nullptr) {
        group->call = nullptr;
        ngx_http_rl_group_done(group, reply, clockUs, limits, grant);
    }
}

namespace {

const char *replyType(int type) {
    switch (type) {
    case REDIS_REPLY_STRING:
        return "a string";
    case REDIS_REPLY_ARRAY:
        return "an array";
    case REDIS_REPLY_INTEGER:
        return "an integer";
    case REDIS_REPLY_NIL:
        return "nil";
    case REDIS_REPLY_STATUS:
        return "a status";
    default:
        return "a reply";
    }
}

}  // namespace

void Link::replied(Batch *batch, redisReply *reply) {
    bool refusal = reply != nullptr && reply->type == REDIS_REPLY_ERROR &&
                   classifyError({reply->str, reply->len}) ==
                       ReplyError::Refused;
    if (reply == nullptr) {
        lost_ = true;
        /* the script may have run: inflight.cpp releases the slots it
         * may have taken when the request ends */
        for (Call *c = batch->first; c != nullptr; c = c->next) {
            if (c->group != nullptr) {
                c->group->lost = 1;
            }
        }
    } else if (ready_) {
        stalled_ = false;
        stopDeadline();
        /* a reply in time closes an incident; a late one (every request
         * of the batch got the policy already) only lets requests go
         * again, and a PING says whether Redis answers in time now; a
         * refusal says it answers, not that it serves */
        bool live = false;
        for (Call *c = batch->first; c != nullptr && !live; c = c->next) {
            live = c->group != nullptr;
        }
        if (refusal) {
            /* refuse(), once the calls are answered */
        } else if (live) {
            recovered();
        } else if (down_) {
            probe();
        }
    }

    if (cluster_ != nullptr && reply != nullptr &&
        reply->type == REDIS_REPLY_ERROR && redirected(batch, reply))
    {
        return;
    }

    bool noScript = isNoScript(reply);
    /* Anything but an error or Redis' clock, each call's part and the
     * overrides' trailer is no reply of the script's: its requests get
     * the failure policy. */
    int64_t clock = replyClock(reply);
    size_t want = kClockBytes, rules = 0;
    for (Call *c = batch->first; c != nullptr; c = c->next) {
        want += replyBytes(c->rules);
        rules += c->rules;
    }
    if (reply != nullptr && reply->type == REDIS_REPLY_ERROR) {
        refusal = errorReplied(reply, "replied", batch->first->slot);
    } else if (reply != nullptr) {
        if (reply->type != REDIS_REPLY_STRING || reply->len < want ||
            clock <= 0 ||
            !validTrailer(reply->str + want, reply->len - want, rules))
        {
            clock = -1;
            if (!replyErrors_) {
                replyErrors_ = true;
                ngx_log_error(NGX_LOG_ERR, log_, 0,
                              "%V: redis %V sent no reply of "
                              "the script's: %s of %uz bytes, where %uz "
                              "bytes of figures were due",
                              &label_, &server_.addr,
                              replyType(reply->type),
                              reply->type == REDIS_REPLY_STRING
                                  ? reply->len : 0,
                              want);
            }
        } else {
            replyErrors_ = false;
        }
    }

    size_t at = kClockBytes;
    redisReply slice;
    /* the overrides' and the leases' records (lua/rl.lua), rarely any */
    const char *trailer = nullptr;
    size_t trailerLen = 0, record = 0, rule = 0;
    int64_t limits[kMaxRulesPerCall];
    if (clock > 0 && reply->len > want) {
        trailer = reply->str + want;
        trailerLen = reply->len - want;
    }
    Call *c = batch->first;
    bool across = batch->across;
    recycle(batch);
    ngx_uint_t away = 0;
    while (c != nullptr) {
        Call *next = c->next;
        ngx_http_rl_group_t *group = c->group;
        if (noScript && group != nullptr && !group->retried &&
            ac_ != nullptr)
        {
            /* Redis lost the script (SCRIPT FLUSH, restart): the next
             * call carries its text, the request never notices. */
            group->retried = 1;
            evalNext_ = true;
            enqueue(c);
        } else if (across && clock > 0 && undecided(reply, at, c->rules)) {
            /* its slot moved or moves: nothing of it was read or
             * written; again, on its own slot (node_batch.cpp) */
            at += replyBytes(c->rules);
            rule += c->rules;
            away++;
            againAlone(c, CallKind::Decide);
        } else {
            int64_t grant = 0;
            bool any = trailer != nullptr && c->rules <= kMaxRulesPerCall &&
                       trailerFor(trailer, trailerLen, &record, rule,
                                  c->rules, limits, &grant);
            rule += c->rules;
            answer(c, replyPart(reply, &at, c->rules, &slice), clock,
                   any ? limits : nullptr, grant);
        }
        c = next;
    }
    if (away > 0) {
        notHere(away, CallKind::Decide);
    }
    if (refusal) {
        refuse(reply);
    }
}

bool Link::errorReplied(const redisReply *reply, const char *what,
                       ngx_uint_t slot) {
    std::string_view text(reply->str != nullptr ? reply->str : "",
                          reply->str != nullptr ? reply->len : 0);
    ReplyError kind = classifyError(text);
    if (kind == ReplyError::NoScript || kind == ReplyError::Redirect) {
        return false;
    }
    eachStats([](ngx_http_rl_zone_stats_t *s) {
        (void) ngx_atomic_fetch_add(&s->errors, 1);
    });
    if (kind == ReplyError::Refused) {
        refusedSlot_ = static_cast<int>(slot);
        return true;
    }
    /* a key someone wrote with another type fails every call of it, and
     * of its batch: a line a minute at most, not one a request */
    if (callErrorAt_ == 0 || ngx_current_msec - callErrorAt_ >= 60000) {
        callErrorAt_ = ngx_current_msec | 1;
        std::string_view line = errorSummary(text);
        ngx_log_error(NGX_LOG_ERR, log_, 0,
                      "%V: redis %V %s: %*s (its requests get the failure "
                      "policy; such lines at most once a minute)",
                      &label_, &server_.addr, what, line.size(),
                      line.data());
    }
    return false;
}

/* In a cluster, a batch's slot moved (MOVED: the map says so from now),
 * or is moving (ASK: its keys are on the target, which takes the batch
 * once after ASKING): each call still wanted goes there, in time left
 * of its zone's timeout, a few times at most. Other errors get the
 * failure policy (TRYAGAIN while a slot's keys are split between two
 * nodes: that slot's calls; CLUSTERDOWN: an incident of the node, and
 * the map asked again). */
bool Link::redirected(Batch *batch, const redisReply *reply) {
    Redirect to;
    if (!parseRedirect({reply->str, reply->len}, &to)) {
        return false;
    }
    if (batch->across) {
        /* (a call across slots declares no key, which Redis redirects
         * never: a proxy's answer) each call again on its own slot */
        Call *c = batch->first;
        recycle(batch);
        while (c != nullptr) {
            Call *next = c->next;
            againAlone(c, CallKind::Decide);
            c = next;
        }
        return true;
    }
    settle(batch, [&](ngx_http_rl_group_t *group) {
        if (!cluster_->redirect(group, to, this)) {
            ngx_http_rl_group_done(group, nullptr, -1, nullptr, 0);
        }
    });
    if (!to.ask) {
        cluster_->moved(to, this);      /* even with no call left */
    }
    return true;
}

}  // namespace rl
