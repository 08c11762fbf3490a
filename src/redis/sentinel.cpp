/*
 * redis/sentinel.cpp: the master a zone's sentinels name (see
 * redis/sentinel.hpp), on hiredis async connections on nginx's event
 * loop, as the links' own: an address, never a name (a sentinel written
 * as a name is looked up again through the http block's resolver, if
 * it has one, before it is asked; so is a master the sentinels name by
 * host name, before the link is given it).
 *
 * Two connections at most: the question's (made for one question,
 * closed with its answer) and the watch's (SUBSCRIBE +switch-master on
 * one sentinel, kept; made again on the next sentinel a second after it
 * is lost, and then the sentinels are asked, a switch having perhaps
 * been missed meanwhile).
 *
 * A +switch-master is believed over a question's answer that was under
 * way when it came: the sentinel that sent it knew of the failover, the
 * one answering may not have yet (sentinels learn a new configuration
 * from each other within seconds, and a demoted master takes writes for
 * a while).
 */

#include "sentinel.hpp"

extern "C" {
#include "ngx_http_rl_hiredis.h"
}

#include <cstdio>
#include <initializer_list>
#include <new>

#include "link.hpp"

namespace rl {
namespace {

constexpr ngx_msec_t kWatchRetry = 1000;

using Conn = Sentinels::Conn;

Conn *connOf(const redisAsyncContext *ac) {
    return static_cast<Conn *>(ac->data);
}

void onConnect(const redisAsyncContext *ac, int status) noexcept {
    Conn *c = connOf(ac);
    c->owner->connected(c, ac, status);
}

void onDisconnect(const redisAsyncContext *ac, int) noexcept {
    Conn *c = connOf(ac);
    c->owner->disconnected(c, ac);
}

void onAuth(redisAsyncContext *ac, void *reply, void *data) noexcept {
    Conn *c = static_cast<Conn *>(data);
    c->owner->authReplied(c, ac, static_cast<redisReply *>(reply));
}

void onMaster(redisAsyncContext *ac, void *reply, void *data) noexcept {
    Conn *c = static_cast<Conn *>(data);
    c->owner->masterReplied(c, ac, static_cast<redisReply *>(reply));
}

void onMessage(redisAsyncContext *ac, void *reply, void *data) noexcept {
    Conn *c = static_cast<Conn *>(data);
    c->owner->message(c, ac, static_cast<redisReply *>(reply));
}

void onTimer(ngx_event_t *ev) noexcept {
    Conn *c = static_cast<Conn *>(ev->data);
    c->owner->timerDue(c);
}

void onLooked(void *data) noexcept {
    Conn *c = static_cast<Conn *>(data);
    c->owner->looked(c);
}

void onMasterLooked(void *data) noexcept {
    static_cast<Sentinels *>(data)->masterLooked();
}

bool isString(const redisReply *r) {
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

bool equals(const redisReply *r, const char *s, size_t len) {
    return isString(r) && r->len == len && ngx_strncmp(r->str, s, len) == 0;
}

/* a port, 1 to 65535, or -1 */
ngx_int_t portOf(const char *p, size_t len) {
    ngx_int_t n = ngx_atoi(reinterpret_cast<u_char *>(const_cast<char *>(p)),
                           len);
    return n >= 1 && n <= 65535 ? n : -1;
}

/* a master's host as a sentinel announces it: an address, or a name
 * (looked up), short enough for a ServerText */
bool announcedHost(ngx_str_t host) {
    return host.len > 0 && host.len <= NGX_SOCKADDR_STRLEN &&
           (numericHost(host) || hostName(host));
}

}  // namespace

Sentinels::Sentinels(ngx_http_rl_zone_t *zone, ngx_str_t label,
                     const Resolving &resolving, ngx_log_t *log)
    : zone_(zone), resolving_(resolving), label_(label), log_(log) {
    for (Conn *c : {&ask_, &watch_}) {
        c->owner = this;
        c->ac = nullptr;
        c->node = 0;
        c->watch = c == &watch_;
        initTimer(&c->timer, onTimer, c, log);
    }
    size_t len = sizeof("master \"\"") - 1 + zone->master.len;
    auto *what = static_cast<u_char *>(ngx_alloc(len, log));
    if (what != nullptr) {
        ngx_sprintf(what, "master \"%V\"", &zone->master);
        what_ = {len, what};
    }
    nodes_ = static_cast<Node *>(
        ngx_alloc(zone->nsentinels * sizeof(Node), log));
    for (ngx_uint_t i = 0; nodes_ != nullptr && i < zone->nsentinels; i++) {
        const ngx_http_rl_server_t &s = zone->sentinels[i];
        void *mem = ngx_alloc(sizeof(NameLookup), log);
        if (mem == nullptr) {
            break;
        }
        Node *n = new (&nodes_[i]) Node();
        n->lookup = new (mem) NameLookup(s.name, s.host, resolving, label,
                                         log);
        n->text.set(s.host, s.port);
        n->down = false;
        nnodes_++;
    }
}

Sentinels::~Sentinels() {
    exiting_ = true;
    cancel();
    close(&watch_);
    stopTimer(&watch_.timer);
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        nodes_[i].lookup->~NameLookup();
        ngx_free(nodes_[i].lookup);
    }
    if (masterLookup_ != nullptr) {
        masterLookup_->~NameLookup();
        ngx_free(masterLookup_);
    }
    ngx_free(nodes_);
    ngx_free(what_.data);
}

/* The link connects: to the master a +switch-master just named, else
 * to what the sentinels say now. A question under way (asked when the
 * watch came back) answers this one too. */
void Sentinels::locate(Link *link) {
    link_ = link;
    waiting_ = true;
    if (switched_ && known_) {
        give();
        return;
    }
    if (nnodes_ == 0) {
        waiting_ = false;
        link->located(nullptr, "out of memory");
        return;
    }
    if (!asking_) {
        ask(preferred_);
    }
}

void Sentinels::cancel() {
    waiting_ = false;
    link_ = nullptr;
    if (resolvingMaster_) {
        resolvingMaster_ = false;
        masterLookup_->cancel();
    }
    if (asking_) {
        asking_ = false;
        nodes_[ask_.node].lookup->cancel();
        close(&ask_);
    }
}

/* The server located was no master (a stale answer): the next question
 * starts at the next sentinel. */
void Sentinels::refused(Link *) {
    if (nnodes_ > 0) {
        preferred_ = (preferred_ + 1) % nnodes_;
    }
}

void Sentinels::ask(ngx_uint_t from) {
    asking_ = true;
    tried_ = 0;
    why_[0] = '\0';
    askNode(from % nnodes_);
}

void Sentinels::askNode(ngx_uint_t node) {
    ask_.node = node;
    NameLookup *lookup = nodes_[node].lookup;
    if (lookup->on()) {
        lookup->start(onLooked, &ask_);     /* looked(), maybe now */
        return;
    }
    looked(&ask_);
}

/* The question's sentinel is where its name says now: connected, asked
 * (after AUTH, with the sentinels' credentials). */
void Sentinels::looked(Conn *c) {
    Node &n = nodes_[c->node];
    if (n.lookup->on()) {
        n.text.set(n.lookup->host(), n.text.port);
    }
    const char *why = nullptr;
    if (!open(c, &why)) {
        next(why, true);
        return;
    }
    const char *argv[3] = {"SENTINEL", "get-master-addr-by-name",
                           reinterpret_cast<char *>(zone_->master.data)};
    size_t len[3] = {8, 23, zone_->master.len};
    if (!command(c, onMaster, 3, argv, len)) {
        close(c);
        next("cannot send", true);
        return;
    }
    ngx_add_timer(&c->timer, zone_->connect_timeout);
}

/* The question's sentinel did not answer it (down: it cannot be asked,
 * as opposed to knowing no such master): the next is asked, until each
 * was. */
void Sentinels::next(const char *why, bool down) {
    ngx_uint_t node = ask_.node;
    if (down) {
        nodeDown(node, why);
    }
    std::snprintf(why_, sizeof(why_), "%.*s: %s",
                  static_cast<int>(nodes_[node].text.addrLen),
                  reinterpret_cast<char *>(nodes_[node].text.addr), why);
    if (++tried_ < nnodes_) {
        askNode((node + 1) % nnodes_);
        return;
    }
    allFailed();
}

void Sentinels::allFailed() {
    asking_ = false;
    if (!waiting_ || link_ == nullptr) {
        return;     /* a question of the watch's: nothing changes */
    }
    if (known_) {
        if (!failing_) {
            failing_ = true;
            ngx_log_error(NGX_LOG_WARN, log_, 0,
                          "%V: no sentinel named the master of \"%V\" "
                          "(%s): the last one named, %*s, is used",
                          &label_, &zone_->master, why_,
                          master_.addrLen, master_.addr);
        }
        give();
        return;
    }
    waiting_ = false;
    std::snprintf(linkWhy_, sizeof(linkWhy_),
                  "no sentinel named the master of \"%.*s\" (%s)",
                  static_cast<int>(zone_->master.len),
                  reinterpret_cast<char *>(zone_->master.data), why_);
    link_->located(nullptr, linkWhy_);
}

/* A sentinel named the master: the link goes there (unless a switch
 * came meanwhile, which is newer), and the watch starts on that
 * sentinel if there is none. */
void Sentinels::answer(const ServerText &master, ngx_uint_t node) {
    asking_ = false;
    preferred_ = node;
    if (failing_) {
        failing_ = false;
        ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                      "%V: sentinel %*s named the master of \"%V\" again",
                      &label_, nodes_[node].text.addrLen,
                      nodes_[node].text.addr, &zone_->master);
    }
    if (!switched_) {
        if (known_ && !master_.same(master)) {
            ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                          "%V: sentinel %*s names %*s the master of "
                          "\"%V\" (was %*s)", &label_,
                          nodes_[node].text.addrLen, nodes_[node].text.addr,
                          master.addrLen, master.addr, &zone_->master,
                          master_.addrLen, master_.addr);
        }
        master_ = master;
        known_ = true;
    }
    if (waiting_ && link_ != nullptr) {
        give();
    } else {
        follow();   /* the watch's question found a move */
    }
    if (!watching_ && watch_.ac == nullptr && !watch_.timer.timer_set) {
        watch(node);
    }
}

void Sentinels::give() {
    waiting_ = false;
    switched_ = false;
    given_ = master_;
    if (numericHost({given_.hostLen, given_.host})) {
        ngx_http_rl_server_t at = given_.server();
        link_->located(&at, nullptr);
        return;
    }
    lookUpMaster();
}

/* The master is named by host name (announce-hostnames yes): its
 * address is asked of the resolver (the name's last address when it
 * does not answer), never of a blocking lookup. */
void Sentinels::lookUpMaster() {
    if (resolving_.resolver == nullptr) {
        std::snprintf(linkWhy_, sizeof(linkWhy_),
                      "the sentinels name the master of \"%.*s\" by host "
                      "name, %.*s (announce-hostnames): following it needs "
                      "a resolver in the http block",
                      static_cast<int>(zone_->master.len),
                      reinterpret_cast<char *>(zone_->master.data),
                      static_cast<int>(given_.addrLen),
                      reinterpret_cast<char *>(given_.addr));
        link_->located(nullptr, linkWhy_);
        return;
    }
    if (masterLookup_ == nullptr ||
        masterLookup_->name().len != given_.hostLen ||
        ngx_memcmp(masterName_, given_.host, given_.hostLen) != 0)
    {
        void *mem = masterLookup_;
        if (mem != nullptr) {
            masterLookup_->~NameLookup();
        } else {
            mem = ngx_alloc(sizeof(NameLookup), log_);
        }
        masterLookup_ = nullptr;
        if (mem == nullptr) {
            link_->located(nullptr, "out of memory");
            return;
        }
        ngx_memcpy(masterName_, given_.host, given_.hostLen + 1);
        masterLookup_ = new (mem) NameLookup(
            {given_.hostLen, masterName_}, {0, masterName_}, resolving_,
            label_, log_);
    }
    resolvingMaster_ = true;
    masterLookup_->start(onMasterLooked, this);     /* maybe at once */
}

void Sentinels::masterLooked() {
    resolvingMaster_ = false;
    if (link_ == nullptr) {
        return;
    }
    ngx_str_t host = masterLookup_->host();
    if (host.len == 0) {
        std::snprintf(linkWhy_, sizeof(linkWhy_),
                      "the resolver did not resolve %s, the master the "
                      "sentinels name (%s)",
                      reinterpret_cast<char *>(given_.host),
                      masterLookup_->why());
        link_->located(nullptr, linkWhy_);
        return;
    }
    resolved_.set(host, given_.port);
    /* logs name the master as the sentinels do */
    ngx_http_rl_server_t at = resolved_.server({given_.hostLen, masterName_});
    at.addr = {given_.addrLen, given_.addr};
    link_->located(&at, nullptr);
}

void Sentinels::follow() {
    if (link_ == nullptr || given_.same(master_)) {
        return;
    }
    switched_ = true;
    if (resolvingMaster_) {
        /* on its way to the old master's name: to the new one */
        resolvingMaster_ = false;
        masterLookup_->cancel();
        give();
        return;
    }
    link_->moved();     /* located again: given master_ */
}

/* SUBSCRIBE +switch-master +promoted-slave on the node, at the address
 * it was asked at last (a name is looked up by the questions only). */
void Sentinels::watch(ngx_uint_t node) {
    watch_.node = node;
    stopTimer(&watch_.timer);
    const char *why = nullptr;
    if (!open(&watch_, &why)) {
        nodeDown(node, why);
        watchLater();
        return;
    }
    const char *argv[3] = {"SUBSCRIBE", "+switch-master", "+promoted-slave"};
    size_t len[3] = {9, 14, 15};
    if (!command(&watch_, onMessage, 3, argv, len)) {
        failed(&watch_, "cannot send");
        return;
    }
    ngx_add_timer(&watch_.timer, zone_->connect_timeout);
}

/* the next sentinel, in a second */
void Sentinels::watchLater() {
    watching_ = false;
    rewatch_ = true;
    if (!exiting_ && !stopping() && !watch_.timer.timer_set) {
        ngx_add_timer(&watch_.timer, kWatchRetry);
    }
}

void Sentinels::timerDue(Conn *c) {
    if (c->ac != nullptr) {
        failed(c, "no answer within connect_timeout");
        return;
    }
    if (c->watch && !exiting_ && !stopping() && nnodes_ > 0) {
        watch((c->node + 1) % nnodes_);
    }
}

/* TCP to the node, TLS for a tls zone, AUTH with the sentinels'
 * credentials */
bool Sentinels::open(Conn *c, const char **why) {
    const ServerText &at = nodes_[c->node].text;
    redisAsyncContext *ac = redisAsyncConnect(
        reinterpret_cast<const char *>(at.host), static_cast<int>(at.port));
    if (ac == nullptr) {
        *why = "out of memory";
        return false;
    }
    if (ac->err) {
        std::snprintf(err_, sizeof(err_), "%s", ac->errstr);
        redisAsyncFree(ac);
        *why = err_;
        return false;
    }
    if (ngx_http_rl_hiredis_attach(ac, log_) != NGX_OK) {
        redisAsyncFree(ac);
        *why = "no free nginx connection";
        return false;
    }
    ac->data = c;
    c->ac = ac;
    c->tls.end();
    redisAsyncSetConnectCallback(ac, onConnect);
    redisAsyncSetDisconnectCallback(ac, onDisconnect);
    if (zone_->tls.enabled &&
        !c->tls.start(ac, zone_->tls,
                      {at.hostLen, const_cast<u_char *>(at.host)}))
    {
        std::snprintf(err_, sizeof(err_), "TLS handshake failed: %.150s",
                      c->tls.why());
        close(c);
        *why = err_;
        return false;
    }
    if (zone_->sentinel_password.len) {
        const char *argv[3];
        size_t len[3];
        int n = 0;
        argv[n] = "AUTH";
        len[n++] = 4;
        if (zone_->sentinel_username.len) {
            argv[n] = reinterpret_cast<char *>(zone_->sentinel_username.data);
            len[n++] = zone_->sentinel_username.len;
        }
        argv[n] = reinterpret_cast<char *>(zone_->sentinel_password.data);
        len[n++] = zone_->sentinel_password.len;
        if (!command(c, onAuth, n, argv, len)) {
            close(c);
            *why = "cannot send";
            return false;
        }
    }
    /* named as the links are, for CLIENT LIST; a refusal changes
     * nothing */
    const char *argv[3] = {"CLIENT", "SETNAME", NGX_HTTP_RL_CLIENT_NAME};
    size_t len[3] = {6, 7, sizeof(NGX_HTTP_RL_CLIENT_NAME) - 1};
    if (!command(c, nullptr, 3, argv, len)) {
        close(c);
        *why = "cannot send";
        return false;
    }
    return true;
}

bool Sentinels::command(Conn *c, redisCallbackFn *fn, int argc,
                        const char **argv, const size_t *len) {
    return c->ac != nullptr &&
           redisAsyncCommandArgv(c->ac, fn, c, argc, argv, len) == REDIS_OK;
}

void Sentinels::close(Conn *c) {
    redisAsyncContext *ac = c->ac;
    c->ac = nullptr;
    c->tls.end();
    stopTimer(&c->timer);
    if (ac != nullptr) {
        /* its callbacks run with no reply, and are not this context's
         * any more: they do nothing */
        redisAsyncFree(ac);
    }
}

/* The connection failed: the question goes to the next sentinel, the
 * watch to the next in a second. */
void Sentinels::failed(Conn *c, const char *why) {
    char text[160];
    std::snprintf(text, sizeof(text), "%s", why);   /* why may be c's */
    close(c);
    if (exiting_) {
        return;
    }
    if (c->watch) {
        nodeDown(c->node, text);
        watchLater();
    } else if (asking_) {
        next(text, true);
    }
}

void Sentinels::connected(Conn *c, const redisAsyncContext *ac,
                          int status) {
    if (ac != c->ac || status == REDIS_OK) {
        return;
    }
    /* hiredis frees the context after this callback */
    const char *tls = c->tls.on() ? c->tls.failure(ac->errstr) : nullptr;
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s",
                  tls != nullptr ? "TLS handshake failed: " : "",
                  tls != nullptr ? tls : ac->errstr);
    c->ac = nullptr;
    c->tls.end();
    failed(c, text);
}

void Sentinels::disconnected(Conn *c, const redisAsyncContext *ac) {
    if (ac != c->ac) {
        return;     /* closed by us */
    }
    const char *tls = c->tls.on() ? c->tls.failure(ac->errstr) : nullptr;
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s",
                  tls != nullptr ? "TLS: " : "connection closed: ",
                  tls != nullptr ? tls
                  : ac->errstr[0] ? ac->errstr : "by peer");
    c->ac = nullptr;
    c->tls.end();
    failed(c, text);
}

void Sentinels::authReplied(Conn *c, redisAsyncContext *ac,
                            redisReply *reply) {
    if (ac != c->ac || reply == nullptr ||
        reply->type != REDIS_REPLY_ERROR)
    {
        return;
    }
    failed(c, reply->str);
}

void Sentinels::masterReplied(Conn *c, redisAsyncContext *ac,
                              redisReply *reply) {
    if (ac != c->ac || reply == nullptr) {
        return;
    }
    ServerText master;
    if (masterOf(reply, &master)) {
        close(c);
        nodeUp(c->node);
        answer(master, c->node);
        return;
    }
    char text[160];
    bool down = reply->type == REDIS_REPLY_ERROR;
    if (down) {
        std::snprintf(text, sizeof(text), "%s", reply->str);
    } else if (reply->type == REDIS_REPLY_NIL) {
        std::snprintf(text, sizeof(text), "knows no master \"%.*s\"",
                      static_cast<int>(zone_->master.len),
                      reinterpret_cast<char *>(zone_->master.data));
    } else {
        std::snprintf(text, sizeof(text), "named no address or host name "
                      "and port");
    }
    close(c);
    nodeUp(c->node);
    if (down) {
        nodeDown(c->node, text);
    }
    next(text, false);
}

/* [ip, port], or [host name, port] from sentinels that announce host
 * names */
bool Sentinels::masterOf(const redisReply *reply, ServerText *to) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        !isString(reply->element[0]) || !isString(reply->element[1]))
    {
        return false;
    }
    ngx_str_t host = {reply->element[0]->len,
                      reinterpret_cast<u_char *>(reply->element[0]->str)};
    ngx_int_t port = portOf(reply->element[1]->str, reply->element[1]->len);
    if (port < 0 || !announcedHost(host)) {
        return false;
    }
    to->set(host, port);
    return true;
}

/* The watch: its subscription confirmed, then the messages: a switch,
 * "+switch-master NAME OLD-IP OLD-PORT NEW-IP NEW-PORT", which every
 * sentinel sends as it learns of it, and, from the sentinel leading a
 * failover, as soon as the replica it promoted says it is the master
 * (when that sentinel starts naming it; its +switch-master comes once
 * the other replicas follow the new master, which may take a while),
 * "+promoted-slave slave IP:PORT IP PORT @ NAME OLD-IP OLD-PORT". */
void Sentinels::message(Conn *c, redisAsyncContext *ac, redisReply *reply) {
    if (ac != c->ac || reply == nullptr) {
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        failed(c, reply->str);      /* NOAUTH, say */
        return;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 3) {
        return;
    }
    const redisReply *kind = reply->element[0];
    if (equals(kind, "subscribe", 9)) {
        stopTimer(&c->timer);
        watching_ = true;
        nodeUp(c->node);
        if (rewatch_) {
            rewatch_ = false;   /* a switch may have been missed */
            if (!asking_ && link_ != nullptr) {
                ask(c->node);
            }
        }
        return;
    }
    const redisReply *text = reply->element[2];
    if (!equals(kind, "message", 7) || !isString(text)) {
        return;
    }
    ngx_str_t w[8];
    const u_char *p = reinterpret_cast<u_char *>(text->str);
    const u_char *end = p + text->len;
    ngx_uint_t n = 0;
    while (n < 8 && p < end) {
        const u_char *sp = ngx_strlchr(const_cast<u_char *>(p),
                                       const_cast<u_char *>(end), ' ');
        const u_char *stop = sp != nullptr ? sp : end;
        w[n++] = {static_cast<size_t>(stop - p), const_cast<u_char *>(p)};
        p = stop + 1;
    }
    /* the master's name, the new address's words */
    ngx_uint_t name, host;
    if (equals(reply->element[1], "+switch-master", 14) && n >= 5) {
        name = 0;
        host = 3;
    } else if (equals(reply->element[1], "+promoted-slave", 15) && n >= 8) {
        name = 5;
        host = 2;
    } else {
        return;
    }
    ngx_int_t port = portOf(reinterpret_cast<char *>(w[host + 1].data),
                            w[host + 1].len);
    if (w[name].len != zone_->master.len ||
        ngx_memcmp(w[name].data, zone_->master.data, w[name].len) != 0 ||
        port < 0 || !announcedHost(w[host]))
    {
        return;     /* another master's */
    }
    ServerText to;
    to.set(w[host], port);
    preferred_ = c->node;
    if (known_ && master_.same(to)) {
        return;     /* known: the switch after the promotion */
    }
    ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                  "%V: sentinel %*s: the master of \"%V\" switched to %*s "
                  "(was %*s)", &label_, nodes_[c->node].text.addrLen,
                  nodes_[c->node].text.addr, &zone_->master, to.addrLen,
                  to.addr, known_ ? master_.addrLen : 1,
                  known_ ? master_.addr : (u_char *) "-");
    master_ = to;
    known_ = true;
    if (waiting_) {
        switched_ = true;   /* the question under way gives it */
    } else {
        follow();
    }
}

void Sentinels::nodeDown(ngx_uint_t node, const char *why) {
    if (nodes_[node].down || exiting_) {
        return;
    }
    nodes_[node].down = true;
    ngx_log_error(NGX_LOG_WARN, log_, 0,
                  "%V: sentinel %*s unavailable: %s", &label_,
                  nodes_[node].text.addrLen, nodes_[node].text.addr, why);
}

void Sentinels::nodeUp(ngx_uint_t node) {
    if (!nodes_[node].down) {
        return;
    }
    nodes_[node].down = false;
    ngx_log_error(NGX_LOG_NOTICE, log_, 0,
                  "%V: sentinel %*s is available again", &label_,
                  nodes_[node].text.addrLen, nodes_[node].text.addr);
}

}  // namespace rl
