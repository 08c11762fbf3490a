/*
 * redis/link.cpp: per worker, one pipelined hiredis connection per Redis
 * server, shared by the zones on it (same address, credentials, db, TLS
 * and timeouts). Requests sent during one turn of the event loop leave
 * together, whatever their zone, as one script call, when the turn's
 * posted events run (batch.hpp).
 *
 * States: idle (a reconnect timer is armed), connecting (TCP, TLS for
 * a tls zone, and the handshake: AUTH, SELECT, CLIENT SETNAME, SCRIPT
 * LOAD, bounded by connect_timeout) and ready. A ready link whose
 * request timed out with no reply since is "stalled": new requests get
 * the failure policy at once; a reply clears it, and if none comes
 * within connect_timeout the connection is dropped and made again.
 * A server that answers but refuses every call (OOM, READONLY, BUSY...:
 * src/core/reply_error.hpp) is "refused": an incident too, requests get
 * the failure policy at once, and a probe that writes, once a second,
 * ends it. Incidents are logged once, when the link goes down, and once
 * when it is back.
 *
 * Where a link connects to, its locator says (locator.hpp), each time
 * it connects: a fixed address, a name looked up again, the master
 * sentinels name (checked with ROLE), a cluster's node. The locator
 * also tells when the server moved (a sentinel's +switch-master).
 *
 * A Redis Cluster's nodes are links too, each to one master, driven by
 * the cluster's store (redis/cluster.cpp): their batches hold one slot
 * each, and a MOVED or ASK reply sends the calls where it says.
 */

#include "link.hpp"

extern "C" {
#include "ngx_http_rl_hiredis.h"
}

#include <initializer_list>

#include <poll.h>

#include <hiredis/sds.h>

#include "clock.hpp"
#include "core/cluster.hpp"
#include "core/reply.hpp"
#include "core/reply_error.hpp"
#include "core/script.hpp"
#include "core/state_key.hpp"

namespace rl {
namespace {

constexpr ngx_msec_t kFirstBackoff = 50;
constexpr ngx_msec_t kMaxBackoff = 1000;
constexpr ngx_msec_t kProbeInterval = 1000;
/* how long an exiting worker waits for its last calls' replies */
constexpr ngx_msec_t kExitWaitMs = 1000;

void onConnect(const redisAsyncContext *ac, int status) noexcept;
void onDisconnect(const redisAsyncContext *ac, int status) noexcept;
void onHandshake(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onNamed(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onRole(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onScriptLoaded(redisAsyncContext *ac, void *reply,
                    void *data) noexcept;
void onReply(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onRefunds(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onRefunded(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onProbe(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onSlots(redisAsyncContext *ac, void *reply, void *data) noexcept;
void onFlush(ngx_event_t *ev) noexcept;
void onReconnectTimer(ngx_event_t *ev) noexcept;
void onDeadlineTimer(ngx_event_t *ev) noexcept;
void onProbeTimer(ngx_event_t *ev) noexcept;

}  // namespace

namespace {

Link *linkOf(const redisAsyncContext *ac) {
    return static_cast<Link *>(ac->data);
}

void onConnect(const redisAsyncContext *ac, int status) noexcept {
    linkOf(ac)->connected(ac, status);
}

void onDisconnect(const redisAsyncContext *ac, int) noexcept {
    linkOf(ac)->disconnected(ac);
}

void onHandshake(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->handshakeReply(ac, static_cast<redisReply *>(reply));
}

void onNamed(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->named(ac, static_cast<redisReply *>(reply));
}

void onRole(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->roleReplied(ac, static_cast<redisReply *>(reply));
}

void onScriptLoaded(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->scriptLoaded(ac, static_cast<redisReply *>(reply));
}

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

void onProbe(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->probed(ac, static_cast<redisReply *>(reply));
}

void onSlots(redisAsyncContext *ac, void *reply, void *) noexcept {
    linkOf(ac)->slotsReplied(ac, static_cast<redisReply *>(reply));
}

void onFlush(ngx_event_t *ev) noexcept {
    static_cast<Link *>(ev->data)->flush();
}

void onReconnectTimer(ngx_event_t *ev) noexcept {
    static_cast<Link *>(ev->data)->reconnectDue();
}

void onDeadlineTimer(ngx_event_t *ev) noexcept {
    static_cast<Link *>(ev->data)->deadlinePassed();
}

void onProbeTimer(ngx_event_t *ev) noexcept {
    static_cast<Link *>(ev->data)->probeDue();
}

}  // namespace

Link::Link(ngx_http_rl_zone_t **zones, ngx_uint_t nzones, ngx_str_t label,
           Locator *locator, bool owned, ngx_log_t *log)
    : zone_(zones[0]), zones_(zones), nzones_(nzones), label_(label),
      locator_(locator), cluster_(locator->slots()), log_(log),
      backoff_(kFirstBackoff), owned_(owned) {
    server_.addr = locator->what();
    initTimer(&reconnect_, onReconnectTimer, this, log_);
    initTimer(&deadline_, onDeadlineTimer, this, log_);
    initTimer(&flush_, onFlush, this, log_);
    initTimer(&probeTimer_, onProbeTimer, this, log_);
}

Link::~Link() {
    exiting_ = true;
    locator_->cancel();     /* no answer comes any more */
    locating_ = false;
    stopTimer(&reconnect_);
    stopTimer(&deadline_);
    stopTimer(&probeTimer_);
    if (flush_.posted) {
        ngx_delete_posted_event(&flush_);
    }
    for (CallQueue *q :
         {&queue_, &ownCalls_[0], &ownCalls_[1], &ownCalls_[2]}) {
        while (!q->empty()) {  /* the worker exits: nobody waits */
            for (Call *c = q->take(); c != nullptr;) {
                Call *next = c->next;
                release(c);
                c = next;
            }
        }
    }
    drop();
    while (free_ != nullptr) {
        Call *c = free_;
        free_ = c->next;
        ngx_free(c);
    }
    while (freeBatches_ != nullptr) {
        Batch *b = freeBatches_;
        freeBatches_ = b->next;
        ngx_free(b);
    }
    if (owned_) {
        locator_->~Locator();
        ngx_free(locator_);
    }
}

/* Connecting: the locator says where the server is (located(), now or
 * after a lookup, bounded by the locator), then four steps, each
 * pipelined behind the one before and all bounded by connect_timeout
 * (deadline_): the TCP connect (open()), TLS (startTls(), for a tls
 * zone), AUTH/SELECT/CLIENT SETNAME (and ROLE, where the locator wants
 * a master: handshake()) and SCRIPT LOAD (loadScript()), whose reply
 * makes the link ready. A step that fails at once has logged, dropped
 * the connection and scheduled the next attempt. Requests queue while
 * the server is located, as behind the handshake. */
void Link::connect() {
    retired_ = false;
    if (exiting_ || ngx_exiting || ngx_terminate || ngx_quit ||
        ac_ != nullptr || locating_)
    {
        return;
    }
    stopTimer(&reconnect_);
    if (attempts_++ > 0) {
        eachStats([](ngx_http_rl_zone_stats_t *s) {
            (void) ngx_atomic_fetch_add(&s->reconnects, 1);
        });
    }
    locating_ = true;
    locator_->locate(this);     /* located(), now or later */
}

void Link::located(const ngx_http_rl_server_t *at, const char *why) {
    if (!locating_) {
        return;
    }
    locating_ = false;
    if (exiting_ || retired_ || ngx_exiting || ngx_terminate || ngx_quit) {
        flush();    /* queued calls: the policy */
        return;
    }
    if (at == nullptr) {
        fail("cannot connect", why);
        schedule();
        flush();
        return;
    }
    server_ = *at;
    if (!open() || (zone_->tls.enabled && !startTls())) {
        flush();
        return;
    }
    handshake();
    loadScript();
    if (ac_ == nullptr) {
        flush();
        return;
    }
    ngx_add_timer(&deadline_, zone_->connect_timeout);
    fresh_ = true;
    if (!flush_.posted) {
        ngx_post_event(&flush_, &ngx_posted_events);
    }
}

/* A failover: the calls in flight get the policy, requests queue behind
 * the new connection (no incident unless it fails). */
void Link::moved() {
    if (exiting_ || retired_ || locating_) {
        return;     /* locating: the answer to come knows */
    }
    drop();
    backoff_ = kFirstBackoff;
    stopTimer(&reconnect_);
    connect();
}

/* TCP: a non-blocking connect to an address (never a name), the socket
 * on nginx's event loop */
bool Link::open() {
    redisAsyncContext *ac;
    if (server_.port == 0) {
        ac = redisAsyncConnectUnix(
            reinterpret_cast<char *>(server_.host.data));
    } else {
        ac = redisAsyncConnect(reinterpret_cast<char *>(server_.host.data),
                               static_cast<int>(server_.port));
    }
    if (ac == nullptr) {
        fail("cannot connect", "out of memory");
        schedule();
        return false;
    }
    if (ac->err) {
        fail("cannot connect", ac->errstr);
        redisAsyncFree(ac);
        schedule();
        return false;
    }
    if (ngx_http_rl_hiredis_attach(ac, log_) != NGX_OK) {
        fail("cannot connect", "no free nginx connection");
        redisAsyncFree(ac);
        schedule();
        return false;
    }

    ac->data = this;
    ac_ = ac;
    ready_ = false;
    stalled_ = false;
    lost_ = false;
    probing_ = false;
    crossSlot_ = false;     /* until this server takes the flags */
    tls_.end();
    redisAsyncSetConnectCallback(ac, onConnect);
    redisAsyncSetDisconnectCallback(ac, onDisconnect);
    return true;
}

/* TLS (redis/tls.cpp): the handshake starts now and goes on as hiredis
 * reads and writes, ahead of the commands queued behind it */
bool Link::startTls() {
    if (tls_.start(ac_, zone_->tls, server_.host)) {
        return true;
    }
    fail("TLS handshake failed", tls_.why());
    drop();
    schedule();
    return false;
}

/* AUTH, SELECT, CLIENT SETNAME: their replies come before the script's */
void Link::handshake() {
    const char *argv[3];
    size_t len[3];
    if (zone_->password.len) {
        int n = 0;
        argv[n] = "AUTH";
        len[n++] = 4;
        if (zone_->username.len) {
            argv[n] = reinterpret_cast<char *>(zone_->username.data);
            len[n++] = zone_->username.len;
        }
        argv[n] = reinterpret_cast<char *>(zone_->password.data);
        len[n++] = zone_->password.len;
        command(onHandshake, n, argv, len);
    }
    if (zone_->db > 0) {
        char db[NGX_INT_T_LEN];
        argv[0] = "SELECT";
        len[0] = 6;
        argv[1] = db;
        len[1] = ngx_sprintf(reinterpret_cast<u_char *>(db), "%i",
                             zone_->db) - reinterpret_cast<u_char *>(db);
        command(onHandshake, 2, argv, len);
    }
    argv[0] = "CLIENT";
    len[0] = 6;
    argv[1] = "SETNAME";
    len[1] = 7;
    argv[2] = NGX_HTTP_RL_CLIENT_NAME;
    len[2] = sizeof(NGX_HTTP_RL_CLIENT_NAME) - 1;
    command(onNamed, 3, argv, len);
    if (locator_->wantsMaster()) {
        argv[0] = "ROLE";
        len[0] = 4;
        command(onRole, 1, argv, len);
    }
}

/* SCRIPT LOAD: its reply (scriptLoaded()) makes the link ready; a
 * cluster node's link first loads the script with its flags, whose
 * reply says whether calls may go across slots (node_batch.cpp) */
void Link::loadScript() {
    if (cluster_ != nullptr) {
        loadFlags();
    }
    const char *argv[3];
    size_t len[3];
    size_t scriptLen;
    argv[0] = "SCRIPT";
    len[0] = 6;
    argv[1] = "LOAD";
    len[1] = 4;
    argv[2] = rl_script_text(&scriptLen);
    len[2] = scriptLen;
    command(onScriptLoaded, 3, argv, len);
}

bool Link::command(redisCallbackFn *fn, int argc, const char **argv,
                   const size_t *len) {
    if (ac_ == nullptr) {
        return false;
    }
    if (redisAsyncCommandArgv(ac_, fn, nullptr, argc, argv, len)
        != REDIS_OK)
    {
        fail("cannot send", ac_->errstr[0] ? ac_->errstr : "error");
        drop();
        schedule();
        return false;
    }
    return true;
}

void Link::connected(const redisAsyncContext *ac, int status) {
    if (ac != ac_ || status == REDIS_OK) {
        return;
    }
    /* hiredis frees the context after this callback; TLS, if started,
     * may know better why it failed */
    const char *tls = tls_.on() ? tls_.failure(ac->errstr) : nullptr;
    ac_ = nullptr;
    tls_.end();
    ready_ = false;
    fail(tls != nullptr ? "TLS handshake failed" : "cannot connect",
         tls != nullptr ? tls : ac->errstr);
    stopTimer(&deadline_);
    schedule();
}

void Link::disconnected(const redisAsyncContext *ac) {
    if (ac != ac_) {
        return; /* dropped by us */
    }
    /* Redis closed a connection that had been up a while with nothing
     * in flight (its `timeout` setting, CLIENT KILL): no request lost
     * anything, so no incident; connect again at once, requests queue
     * behind the handshake (an incident opens if that fails) */
    bool quiet = ready_ && !stalled_ && !lost_ && !down_ &&
                 ngx_current_msec - readyAt_ >= 1000;
    /* a TLS failure (a certificate not verified, the server's alert) is
     * named as TLS tells it, before the context and its SSL go */
    const char *tls = !tls_.on() ? nullptr
                      : tls_.failure(ready_ ? nullptr : ac->errstr);
    const char *why = tls != nullptr     ? tls
                      : ac->errstr[0]    ? ac->errstr
                                         : "by peer";
    bool handshaking = !ready_;
    ac_ = nullptr;
    tls_.end();
    ready_ = false;
    stopTimer(&deadline_);
    if (quiet && !exiting_) {
        ngx_log_error(NGX_LOG_INFO, log_, 0,
                      "%V: redis %V closed an idle connection "
                      "(%s): connecting again", &label_, &server_.addr,
                      why);
        connect();
        return;
    }
    fail(tls != nullptr && handshaking ? "TLS handshake failed"
                                       : "connection closed", why);
    schedule();
}

void Link::handshakeReply(redisAsyncContext *ac, redisReply *reply) {
    if (ac != ac_ || reply == nullptr) {
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        fail("handshake failed", reply->str);
        drop();
        schedule();
    }
}

/* The connection's name is for CLIENT LIST only: a user without the
 * CLIENT command (an ACL user, a managed Redis) still decides. */
void Link::named(redisAsyncContext *ac, redisReply *reply) {
    if (ac != ac_ || reply == nullptr || reply->type != REDIS_REPLY_ERROR ||
        nameRefused_) {
        return;
    }
    if (ngx_strncmp(reply->str, "NOAUTH", 6) == 0) {
        /* Redis wants a password= the zone does not give: say so, not
         * what the rest of the handshake then meets */
        fail("handshake failed", reply->str);
        drop();
        schedule();
        return;
    }
    nameRefused_ = true;
    ngx_log_error(NGX_LOG_INFO, log_, 0,
                  "%V: redis %V refused CLIENT SETNAME (%s): "
                  "its connections go unnamed", &label_, &server_.addr,
                  reply->str);
}

/* A master, as the locator wants: a replica is never used, the locator
 * is asked again (after the backoff). A Redis that refuses ROLE (an ACL
 * without it) is taken at the locator's word. */
void Link::roleReplied(redisAsyncContext *ac, redisReply *reply) {
    if (ac != ac_ || reply == nullptr) {
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        if (ngx_strncmp(reply->str, "NOAUTH", 6) == 0) {
            fail("handshake failed", reply->str);
            drop();
            schedule();
        } else if (!roleRefused_) {
            roleRefused_ = true;
            ngx_log_error(NGX_LOG_INFO, log_, 0,
                          "%V: redis %V refused ROLE (%s): it is taken "
                          "for the master", &label_, &server_.addr,
                          reply->str);
        }
        return;
    }
    const redisReply *role =
        reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
            ? reply->element[0] : nullptr;
    if (role != nullptr && role->type == REDIS_REPLY_STRING &&
        role->len == 6 && ngx_strncmp(role->str, "master", 6) == 0)
    {
        return;
    }
    char why[64];
    if (role != nullptr && role->type == REDIS_REPLY_STRING) {
        ngx_snprintf(reinterpret_cast<u_char *>(why), sizeof(why) - 1,
                     "ROLE says %*s%Z",
                     role->len < 20 ? role->len : static_cast<size_t>(20),
                     role->str);
    } else {
        ngx_snprintf(reinterpret_cast<u_char *>(why), sizeof(why) - 1,
                     "no reply to ROLE%Z");
    }
    fail("not the master", why);
    locator_->refused(this);
    drop();
    schedule();
}

void Link::scriptLoaded(redisAsyncContext *ac, redisReply *reply) {
    if (ac != ac_ || reply == nullptr) {
        return;
    }
    if (reply->type != REDIS_REPLY_STRING || reply->len != RL_SHA_LEN ||
        ngx_strncmp(reply->str, rl_script_sha(), RL_SHA_LEN) != 0)
    {
        fail("SCRIPT LOAD failed",
             reply->type == REDIS_REPLY_ERROR ? reply->str : "bad reply");
        drop();
        schedule();
        return;
    }
    stopTimer(&deadline_);
    ready_ = true;
    stalled_ = false;
    readyAt_ = ngx_current_msec;
    backoff_ = kFirstBackoff;
    if (refused_) {
        probe();    /* connected again: does it serve now? */
    } else {
        setUp(true);
        recovered();
        if (fresh_ && !flush_.posted) {
            ngx_post_event(&flush_, &ngx_posted_events);
        }
    }
    locator_->ready(this);
}

void Link::recovered() {
    refused_ = false;
    if (down_) {
        down_ = false;
        setUp(true);    /* a reply after a timeout: no reconnect says so */
        for (ngx_uint_t i = 0; i < nzones_; i++) {
            ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                          "rl_zone \"%V\": redis %V is available again",
                          &zones_[i]->name, &server_.addr);
        }
    }
}

/* Whether Redis answers within the zone's timeout (after a late reply,
 * with no request to tell): a PING; or, while it refuses calls, whether
 * it serves again: a call of the script that writes, on a key of its own
 * (core/script.hpp probeKey; in a cluster, on the slot refused). */
void Link::probe() {
    if (probing_ || ac_ == nullptr) {
        return;
    }
    probing_ = true;
    probeWrites_ = refused_;
    probeSentUs_ = monotonicUs();
    bool sent;
    if (refused_) {
        char key[NGX_HTTP_RL_MAX_PREFIX + kProbeKeyExtra];
        std::string_view head = probeHead();
        std::string_view spec = probeSpec();
        size_t keyLen = probeKey(key, {reinterpret_cast<char *>(
                                           zone_->prefix.data),
                                       zone_->prefix.len},
                                 cluster_ != nullptr ? refusedSlot_ : -1);
        /* its key, and its block key (the key's first bytes) */
        const char *argv[7] = {"EVALSHA", rl_script_sha(), "2", key, key,
                               head.data(), spec.data()};
        size_t len[7] = {7, RL_SHA_LEN, 1, keyLen, blockKeyLength(keyLen),
                         head.size(), spec.size()};
        sent = command(onProbe, 7, argv, len);
    } else {
        const char *argv[1] = {"PING"};
        size_t len[1] = {4};
        sent = command(onProbe, 1, argv, len);
    }
    if (!sent) {
        probing_ = false;
    }
}

void Link::probeLater() {
    if (!probeTimer_.timer_set && !exiting_) {
        ngx_add_timer(&probeTimer_, kProbeInterval);
    }
}

void Link::probed(const redisAsyncContext *ac, const redisReply *reply) {
    if (ac != ac_) {
        return;
    }
    probing_ = false;
    if (refused_) {
        if (reply == nullptr) {
            return;     /* the connection went: connecting again probes */
        }
        if (!probeWrites_) {
            probeLater();   /* a PING of before: the write probe next */
        } else if (reply->type == REDIS_REPLY_ERROR &&
                   classifyError({reply->str, reply->len}) ==
                       ReplyError::Refused) {
            refuse(reply);
        } else {
            /* served (or a reply that only a serving server gives:
             * NOSCRIPT, MOVED, a key of another type) */
            evalNext_ = evalNext_ || isNoScript(reply);
            recovered();
        }
        return;
    }
    if (reply != nullptr && reply->type != REDIS_REPLY_ERROR &&
        monotonicUs() - probeSentUs_ <=
            static_cast<int64_t>(zone_->timeout) * 1000)
    {
        recovered();
        return;
    }
    /* still slow: ask again in a second, so a zone without traffic (or
     * whose requests the deny cache answers) still sees Redis recover */
    if (reply != nullptr && down_) {
        probeLater();
    }
}

bool Link::operatorCommand(redisCallbackFn *fn, void *data, int argc,
                           const char **argv, const size_t *len) {
    return usable() && ac_ != nullptr &&
           redisAsyncCommandArgv(ac_, fn, data, argc, argv, len) == REDIS_OK;
}

void Link::heardMoved(const redisReply *reply) {
    Redirect to;
    if (cluster_ != nullptr && reply != nullptr &&
        reply->type == REDIS_REPLY_ERROR &&
        parseRedirect({reply->str, reply->len}, &to) && !to.ask) {
        cluster_->moved(to, this);
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
                                       : failed ? NGX_HTTP_RL_REFUND_FAILED
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
        stopTimer(&deadline_);
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
    } else if (ready_) {
        stalled_ = false;
        stopTimer(&deadline_);
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

void Link::refuse(const redisReply *reply) {
    if (exiting_ || retired_) {
        return;
    }
    std::string_view text(reply->str, reply->len);
    refused_ = true;
    char detail[200];
    std::string_view line = errorSummary(text, sizeof(detail) - 1);
    ngx_memcpy(detail, line.data(), line.size());
    detail[line.size()] = '\0';
    bool readonly = text.substr(0, 8) == "READONLY";
    fail(readonly ? "not the master" : "error reply", detail);
    if (cluster_ != nullptr && text.substr(0, 11) == "CLUSTERDOWN") {
        cluster_->doubt();  /* the map may say where the slots are now */
    }
    if (refusalReconnects(text) && ac_ != nullptr) {
        if (readonly) {
            locator_->refused(this);    /* a sentinel's stale answer */
        }
        drop();
        schedule();
        return;
    }
    probeLater();
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

void Link::timedOut() {
    if (stalled_ || ac_ == nullptr) {
        return;
    }
    stalled_ = true;
    if (inTlsHandshake()) {
        /* TLS to a port that does not speak it answers nothing */
        fail("TLS handshake failed", "no answer within the zone's timeout");
    } else {
        fail("no reply", "within the zone's timeout");
    }
    if (!deadline_.timer_set) {
        ngx_add_timer(&deadline_, zone_->connect_timeout);
    }
}

void Link::deadlinePassed() {
    if (ac_ == nullptr) {
        return;
    }
    if (inTlsHandshake()) {
        fail("TLS handshake failed", "no answer within connect_timeout");
    } else {
        fail(ready_ ? "no reply" : "cannot connect",
             ready_ ? "dropping the connection" : "connect_timeout expired");
    }
    drop();
    schedule();
}

void Link::setUp(bool up) {
    up_ = up;
    if (locator_->upChanged(this)) {
        return;     /* a cluster: up when all its masters are */
    }
    eachStats([up](ngx_http_rl_zone_stats_t *s) { s->up = up ? 1 : 0; });
}

void Link::fail(const char *what, const char *detail) {
    if (exiting_ || retired_) {
        return;
    }
    bool was = down_;
    down_ = true;   /* before setUp(): a cluster reads it */
    setUp(false);
    if (was) {
        return;
    }
    static const char *const policy[] = {"open", "closed", "local"};
    for (ngx_uint_t i = 0; i < nzones_; i++) {
        ngx_log_error(NGX_LOG_ERR, log_, 0,
                      "rl_zone \"%V\": redis %V unavailable: %s: %s; "
                      "requests get failure=%s",
                      &zones_[i]->name, &server_.addr, what,
                      detail != nullptr ? detail : "",
                      policy[zones_[i]->failure]);
    }
}

void Link::drop() {
    redisAsyncContext *ac = ac_;
    ac_ = nullptr;
    tls_.end();
    ready_ = false;
    stalled_ = false;
    stopTimer(&deadline_);
    stopTimer(&probeTimer_);
    if (ac != nullptr) {
        /* pending callbacks run now (or when hiredis leaves its own
         * callback) with a NULL reply: their requests get the policy */
        redisAsyncFree(ac);
    }
}

void Link::retire() {
    retired_ = true;
    refused_ = false;
    if (locating_) {
        locating_ = false;
        locator_->cancel();
    }
    if (down_) {    /* its incident ends: the cluster serves its slots */
        for (ngx_uint_t i = 0; i < nzones_; i++) {
            ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                          "rl_zone \"%V\": redis %V serves no slot any "
                          "more: the cluster's other masters decide",
                          &zones_[i]->name, &server_.addr);
        }
    }
    down_ = false;
    stopTimer(&reconnect_);
    drop();
}

bool Link::askSlots() {
    if (asking_ || !ready()) {
        return false;
    }
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    size_t len[2] = {7, 5};
    asking_ = command(onSlots, 2, argv, len);
    return asking_;
}

void Link::slotsReplied(const redisAsyncContext *, const redisReply *reply) {
    /* the context it was asked on may be gone: the cluster still waits */
    asking_ = false;
    if (cluster_ != nullptr) {
        cluster_->slotsReplied(this, reply);
    }
}

void Link::schedule() {
    if (exiting_ || retired_ || ngx_exiting || ngx_terminate || ngx_quit ||
        reconnect_.timer_set)
    {
        return;
    }
    ngx_add_timer(&reconnect_, backoff_);
    backoff_ = backoff_ * 2 > kMaxBackoff ? kMaxBackoff : backoff_ * 2;
}

}  // namespace rl
