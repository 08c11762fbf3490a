/*
 * redis/cluster.cpp: a Redis Cluster zone's store (see redis/cluster.hpp).
 * Nodes are reached by the addresses the cluster gives (CLUSTER SLOTS,
 * MOVED, ASK): numbers, never names, so nothing is resolved while
 * serving; a node the cluster names by host name is logged and its
 * slots get the failure policy.
 */

#include "cluster.hpp"

#include <new>

#include "core/cluster.hpp"

namespace rl {
namespace {

/* while the map is in doubt or a master cannot be reached */
constexpr ngx_msec_t kRefreshInterval = 1000;
/* between two CLUSTER SLOTS, however many MOVED come */
constexpr ngx_msec_t kMinRefreshGap = 100;
constexpr ngx_uint_t kMaxRedirects = 3;     /* group->redirects:2 */
constexpr ngx_uint_t kMaxNodes = 1000;

void onRefresh(ngx_event_t *ev) noexcept {
    static_cast<Cluster *>(ev->data)->refreshDue();
}

void onAskTimeout(ngx_event_t *ev) noexcept {
    static_cast<Cluster *>(ev->data)->askTimedOut();
}

bool integer(const redisReply *r, long long lo, long long hi) {
    return r->type == REDIS_REPLY_INTEGER && r->integer >= lo &&
           r->integer <= hi;
}

}  // namespace

Cluster::Node::Node(Cluster *c, ngx_str_t h, ngx_int_t p, ngx_str_t n,
                    const Resolving &resolving)
    : NodeText(h, p, n),
      AddressLocator(text.server(name), true, resolving, c->label_,
                     c->log_),
      cluster(c) {}

Cluster::Cluster(ngx_http_rl_zone_t **zones, ngx_uint_t nzones,
                 ngx_str_t label, const Resolving &resolving, ngx_log_t *log)
    : zone_(zones[0]), zones_(zones), nzones_(nzones), label_(label),
      resolving_(resolving), log_(log) {
    initTimer(&refresh_, onRefresh, this, log);
    initTimer(&askTimer_, onAskTimeout, this, log);
}

Cluster::~Cluster() {
    exiting_ = true;
    stopTimer(&refresh_);
    stopTimer(&askTimer_);
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        nodes_[i]->link->~Link();
        ngx_free(nodes_[i]->link);
        nodes_[i]->~Node();
        ngx_free(nodes_[i]);
    }
    ngx_free(nodes_);
    ngx_free(slots_);
    ngx_free(next_);
}

bool Cluster::start() {
    size_t size = kClusterSlots * sizeof(uint16_t);
    slots_ = static_cast<uint16_t *>(ngx_alloc(size, log_));
    next_ = static_cast<uint16_t *>(ngx_alloc(size, log_));
    if (slots_ == nullptr || next_ == nullptr) {
        return false;
    }
    ngx_memzero(slots_, size);
    for (ngx_uint_t i = 0; i < zone_->nseeds; i++) {
        Node *n = node(zone_->seeds[i].host, zone_->seeds[i].port,
                       zone_->seeds[i].name);
        if (n == nullptr) {
            return false;
        }
        n->seed = true;
    }
    return true;
}

Cluster::Node *Cluster::node(ngx_str_t host, ngx_int_t port,
                             ngx_str_t name) {
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        Node *n = nodes_[i];
        const ngx_http_rl_server_t &at = n->server();
        if (at.port == port && at.host.len == host.len &&
            ngx_memcmp(at.host.data, host.data, host.len) == 0)
        {
            return n;
        }
    }
    if (host.len > NGX_SOCKADDR_STRLEN || !numericHost(host)) {
        if (!hostnames_) {
            hostnames_ = true;
            ngx_log_error(NGX_LOG_WARN, log_, 0,
                          "%V: redis cluster node \"%*s:%i\" is not "
                          "an IP address: its slots get the failure "
                          "policy (nodes must announce addresses)",
                          &label_, host.len, host.data, port);
        }
        return nullptr;
    }
    if (nnodes_ == capNodes_) {
        if (nnodes_ == kMaxNodes) {
            return nullptr;
        }
        ngx_uint_t cap = capNodes_ ? capNodes_ * 2 : 8;
        auto **a = static_cast<Node **>(ngx_alloc(cap * sizeof(Node *), log_));
        if (a == nullptr) {
            return nullptr;
        }
        if (nnodes_ > 0) {
            ngx_memcpy(a, nodes_, nnodes_ * sizeof(Node *));
        }
        ngx_free(nodes_);
        nodes_ = a;
        capNodes_ = cap;
    }
    void *at = ngx_alloc(sizeof(Node), log_);
    void *mem = ngx_alloc(sizeof(Link), log_);
    if (at == nullptr || mem == nullptr) {
        ngx_free(at);
        ngx_free(mem);
        return nullptr;
    }
    Node *n = new (at) Node(this, host, port, name, resolving_);
    n->link = new (mem) Link(zones_, nzones_, label_, n, false, log_);
    n->index = static_cast<uint16_t>(nnodes_ + 1);
    nodes_[nnodes_++] = n;
    n->link->connect();
    return n;
}

Cluster::Node *Cluster::node(const Redirect &to, Link *from) {
    ngx_str_t host = {to.host.size(),
                      reinterpret_cast<u_char *>(
                          const_cast<char *>(to.host.data()))};
    if (host.len == 0) {
        host = from->server().host;     /* "the node you asked" */
    }
    Node *n = node(host, to.port);
    if (n != nullptr && n->link->retired()) {
        n->link->connect();
    }
    return n;
}

/* A slot's master; before a map is read (a worker's first moments), a
 * seed that can take calls: they wait there for its handshake, as a
 * single Redis's wait for its connection, and a MOVED sends them on (and
 * maps the slot). Once a map is read, a slot it leaves unknown gets the
 * failure policy. */
Link *Cluster::route(ngx_uint_t slot) {
    ngx_uint_t i = slots_[slot];
    if (i != 0) {
        return nodes_[i - 1]->link;
    }
    stale_ = true;
    refresh(false);
    if (known_) {
        return nullptr;
    }
    for (ngx_uint_t k = 0; k < nnodes_; k++) {
        if (nodes_[k]->seed && nodes_[k]->link->usable()) {
            return nodes_[k]->link;
        }
    }
    return nullptr;
}

/* CLUSTER SLOTS, to a node whose connection is ready (a master first,
 * the one after the node asked last: a node that does not answer within
 * connect_timeout is not asked twice in a row); when none is, the seeds
 * connect again, on the timer only (not once per request), and the
 * first ready asks */
void Cluster::refresh(bool timer) {
    if (exiting_ || askLink_ != nullptr) {
        return;
    }
    if (askedAt_ != 0 && ngx_current_msec - askedAt_ < kMinRefreshGap) {
        later(kMinRefreshGap);
        return;
    }
    Link *ask = nullptr;
    ngx_uint_t at = 0;
    for (ngx_uint_t k = 1; k <= nnodes_; k++) {
        ngx_uint_t i = (lastAsked_ + k) % nnodes_;
        Node *n = nodes_[i];
        if (n->link->ready() && (ask == nullptr || n->mapped)) {
            ask = n->link;
            at = i;
            if (n->mapped) {
                break;
            }
        }
    }
    if (ask == nullptr) {
        if (timer) {
            for (ngx_uint_t i = 0; i < nnodes_; i++) {
                if (nodes_[i]->seed && nodes_[i]->link->retired()) {
                    nodes_[i]->link->connect();
                }
            }
        }
        later(kRefreshInterval);
        return;
    }
    if (ask->askSlots()) {
        askLink_ = ask;
        movedMeanwhile_ = false;
        lastAsked_ = at;
        askedAt_ = ngx_current_msec;
        ngx_add_timer(&askTimer_, zone_->connect_timeout);
    } else {
        later(kRefreshInterval);
    }
}

/* the node asked did not answer: another is asked, its connection
 * counts as stalled (a request's timeout would say as much) */
void Cluster::askTimedOut() {
    askLink_->timedOut();
    askLink_ = nullptr;
    later(kMinRefreshGap);
}

void Cluster::later(ngx_msec_t ms) {
    if (!refresh_.timer_set && !exiting_ && !stopping()) {
        ngx_add_timer(&refresh_, ms);
    }
}

void Cluster::refreshDue() {
    refresh(true);
    nodeChanged();
}

void Cluster::nodeReady(Link *) {
    if (stale_) {
        refresh(false);
    }
    nodeChanged();
}

/* rl_store_up: the map is known and every master in it is up; while
 * one is not, the map is asked again each second (a failover shows) */
void Cluster::nodeChanged() {
    if (exiting_) {
        return;
    }
    bool up = known_;
    bool any = false;
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        if (nodes_[i]->mapped) {
            any = true;
            up = up && nodes_[i]->link->up();
        }
    }
    up = up && any;
    for (ngx_uint_t i = 0; i < nzones_; i++) {
        if (zones_[i]->stats != nullptr) {
            zones_[i]->stats->up = up ? 1 : 0;
        }
    }
    if (!up) {
        later(kRefreshInterval);
    }
}

bool Cluster::redirect(ngx_http_rl_group_t *group, const Redirect &to,
                       Link *from) {
    if (static_cast<ngx_uint_t>(group->redirects) >= kMaxRedirects) {
        return false;
    }
    group->redirects = group->redirects + 1;
    Node *n = node(to, from);
    if (n == nullptr) {
        return false;
    }
    if (!to.ask) {
        assign(to.slot, n);
    }
    Call *call = n->link->send(group, to.ask);
    group->call = reinterpret_cast<ngx_http_rl_call_t *>(call);
    return call != nullptr;
}

void Cluster::writeNow() {
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        nodes_[i]->link->writeNow();
    }
}

void Cluster::moved(const Redirect &to, Link *from) {
    Node *n = node(to, from);
    if (n != nullptr) {
        assign(to.slot, n);
    }
}

void Cluster::assign(uint16_t slot, Node *n) {
    slots_[slot] = n->index;
    n->mapped = true;
    movedMeanwhile_ = true;     /* a map asked before may not know it */
    doubt();
}

Link *Cluster::asked(const Redirect &to, Link *from) {
    Node *n = node(to, from);
    return n != nullptr ? n->link : nullptr;
}

void Cluster::doubt() {
    stale_ = true;
    refresh(false);
}

void Cluster::slotsReplied(Link *link, const redisReply *reply) {
    if (exiting_ || link != askLink_) {
        return;     /* late: another node was asked since */
    }
    askLink_ = nullptr;
    stopTimer(&askTimer_);
    if (movedMeanwhile_ && known_) {
        /* older than a MOVED that came since: asked again */
        later(kMinRefreshGap);
    } else if (reply != nullptr && apply(link, reply)) {
        /* the first map goes in even so, and is asked again: until one
         * does, calls go to a seed (route()), whose MOVED replies would
         * keep coming while each map is asked, and keep every map out */
        stale_ = movedMeanwhile_;
        mapErrors_ = false;
    } else if (reply != nullptr && !mapErrors_) {
        mapErrors_ = true;      /* once, until a map is read */
        ngx_log_error(NGX_LOG_ERR, log_, 0,
                      "%V: redis %V sent no slot map: %s", &label_,
                      &link->server().addr,
                      reply->type == REDIS_REPLY_ERROR ? reply->str
                                                       : "bad reply");
    }
    if (stale_) {
        later(kRefreshInterval);
    }
    nodeChanged();
}

/* CLUSTER SLOTS: [start, end, [host, port, id...], replicas...]... */
bool Cluster::apply(Link *link, const redisReply *reply) {
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
        return false;
    }
    ngx_memzero(next_, kClusterSlots * sizeof(uint16_t));
    for (size_t e = 0; e < reply->elements; e++) {
        const redisReply *r = reply->element[e];
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
            !integer(r->element[0], 0, kClusterSlots - 1) ||
            !integer(r->element[1], r->element[0]->integer,
                     kClusterSlots - 1))
        {
            return false;
        }
        const redisReply *m = r->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            (m->element[0]->type != REDIS_REPLY_STRING &&
             m->element[0]->type != REDIS_REPLY_NIL) ||
            !integer(m->element[1], 1, 65535))
        {
            return false;
        }
        /* nil or empty: the node asked; "?": not known (its slots stay
         * unknown: the failure policy) */
        ngx_str_t host = link->server().host;
        if (m->element[0]->type == REDIS_REPLY_STRING &&
            m->element[0]->len > 0)
        {
            host = {m->element[0]->len,
                    reinterpret_cast<u_char *>(m->element[0]->str)};
        }
        if (host.len == 1 && host.data[0] == '?') {
            continue;
        }
        Node *n = node(host, static_cast<ngx_int_t>(m->element[1]->integer));
        if (n == nullptr) {
            continue;   /* its slots stay unknown: the failure policy */
        }
        for (long long s = r->element[0]->integer;
             s <= r->element[1]->integer; s++)
        {
            next_[s] = n->index;
        }
    }
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        nodes_[i]->mapped = false;
    }
    for (size_t s = 0; s < kClusterSlots; s++) {
        if (next_[s] != 0) {
            nodes_[next_[s] - 1]->mapped = true;
        }
    }
    for (ngx_uint_t i = 0; i < nnodes_; i++) {
        Link *l = nodes_[i]->link;
        if (nodes_[i]->mapped && l->retired()) {
            l->connect();
        } else if (!nodes_[i]->mapped && !l->retired()) {
            l->retire();    /* a replica, or a node gone */
        }
    }
    uint16_t *t = slots_;
    slots_ = next_;
    next_ = t;
    known_ = true;
    return true;
}

}  // namespace rl
