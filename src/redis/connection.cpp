/*
 * redis/connection.cpp: a link's connection (link.cpp has its
 * pipeline), from its making to its end.
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
 * ends it. A probe unanswered within connect_timeout drops the
 * connection, as a stalled call does. Incidents are logged once, when
 * the link goes down, and once when it is back.
 *
 * Where a link connects to, its locator says (locator.hpp), each time
 * it connects: a fixed address, a name looked up again, the master
 * sentinels name (checked with ROLE), a cluster's node. The locator
 * also tells when the server moved (a sentinel's +switch-master).
 *
 * When nginx stops the worker gracefully (a reload), a link goes on
 * connecting as long as the worker needs it (slots held, its own calls
 * out: stopping(), link.hpp); then it stops, and connects again only if
 * a call comes (resume()).
 */

#include "link.hpp"

extern "C" {
#include "ngx_http_rl_hiredis.h"
}

#include <initializer_list>

#include "clock.hpp"
#include "core/reply.hpp"
#include "core/reply_error.hpp"
#include "core/state_key.hpp"

namespace rl {
namespace {

constexpr ngx_msec_t kFirstBackoff = 50;
constexpr ngx_msec_t kMaxBackoff = 1000;
constexpr ngx_msec_t kProbeInterval = 1000;

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
 * the server is located, as behind the handshake. A connect under way
 * goes on when the worker begins to exit. */
void Link::connect() {
    retired_ = false;
    if (!stopping()) {
        start();
    }
}

void Link::start() {
    if (exiting_ || ngx_terminate || ac_ != nullptr || locating_) {
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
    if (exiting_ || retired_ || ngx_terminate) {
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

void Link::resume() {
    if ((ngx_exiting || ngx_quit) && ac_ == nullptr && !locating_ &&
        !retired_ && !reconnect_.timer_set) {
        start();
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
    if (refused_) {
        /* connected again: does it serve now? (its refusals may make
         * it again: the back-off goes on until it serves, or a replica
         * at the address is probed every 60 ms or so) */
        probe();
    } else {
        backoff_ = kFirstBackoff;
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
    backoff_ = kFirstBackoff;
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
        return;
    }
    /* a probe is a call: unanswered within connect_timeout, the
     * connection is made again (its handshake probes). Without this, a
     * refused link whose probe got no reply (a reply lost, a network
     * that drops without a reset) sent nothing more, ever. */
    if (!deadline_.timer_set) {
        ngx_add_timer(&deadline_, zone_->connect_timeout);
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
    if (reply != nullptr && !stalled_) {
        stopDeadline();
    }
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
    /* (a probe's deadline, set earlier, would cut the call's short) */
    if (!deadline_.timer_set || probing_) {
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
    if (exiting_ || retired_ || stopping() || reconnect_.timer_set) {
        return;
    }
    ngx_add_timer(&reconnect_, backoff_);
    backoff_ = backoff_ * 2 > kMaxBackoff ? kMaxBackoff : backoff_ * 2;
}

}  // namespace rl
