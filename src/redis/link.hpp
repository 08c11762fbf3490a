/* A Redis zone's store, per worker (src/redis/stores.cpp): one
 * pipelined hiredis connection (a Link: src/redis/connection.cpp makes
 * and keeps its connection, src/redis/link.cpp is its pipeline) per
 * Redis server, or a cluster's links and slot map
 * (src/redis/cluster.cpp). A request's group asks the store for the
 * link that serves its slot, and sends its call there. Where a link
 * connects to, its Locator says (src/redis/locator.hpp). */
#pragma once

#include "batch.hpp"
#include "locator.hpp"
#include "tls.hpp"

namespace rl {

/* A timer (or posted event) of an object of this file's: handler gets
 * it in ev->data. */
inline void initTimer(ngx_event_t *ev, ngx_event_handler_pt handler,
                      void *data, ngx_log_t *log) {
    ngx_memzero(ev, sizeof(ngx_event_t));
    ev->handler = handler;
    ev->data = data;
    ev->log = log;
    ev->cancelable = 1;
}

/* Takes a timer off nginx's tree if it is on it. */
inline void stopTimer(ngx_event_t *ev) {
    if (ev->timer_set) {
        ngx_del_timer(ev);
    }
}

/* nginx stops the worker: its links stop connecting again (a lost
 * connection is not made again, a cluster's map not asked again, the
 * sentinels not watched), at once (ngx_terminate), or, when it lets the
 * worker end gracefully (a reload: ngx_exiting), once nothing is held:
 * until then the running requests' slots are renewed and released, the
 * charges and a lease's returns sent (SPEC section 9). */
inline bool stopping() {
    return ngx_terminate ||
           ((ngx_exiting || ngx_quit) && !ngx_http_rl_worker_busy());
}

class Store {
public:
    virtual ~Store() = default;
    /* the link of the server that serves the slot, NULL if none is
     * known (a single server serves every slot) */
    virtual Link *route(ngx_uint_t slot) = 0;
    /* writes what its connections have queued, now (worker exit: no
     * turn of the event loop is left to do it) */
    virtual void writeNow() = 0;
};

class Link : public Store {
public:
    /* zones[0] gives the connection's parameters, but for the server,
     * which the locator gives; label names the zones in log lines; all
     * three live as long as the cycle; the locator as long as the link
     * (owned: the link's, destroyed with it) */
    Link(ngx_http_rl_zone_t **zones, ngx_uint_t nzones, ngx_str_t label,
         Locator *locator, bool owned, ngx_log_t *log);
    ~Link() override;

    Link *route(ngx_uint_t) override { return this; }
    void writeNow() override;

    /* Requests may queue behind a first handshake (hiredis buffers
     * them, SCRIPT LOAD goes first), not behind one made while an
     * incident is open, nor while a call is overdue. Once Redis answered
     * again, late (a slow Redis), requests go while the incident stays
     * open: the first reply in time closes it (one incident, not one per
     * late reply). */
    bool usable() const {
        return (ac_ != nullptr || locating_) && !stalled_ && !refused_ &&
               (ready_ || !down_);
    }
    /* handshake done, no incident open */
    bool up() const { return ready_ && !down_; }
    bool ready() const { return ac_ != nullptr && ready_ && !stalled_; }
    bool retired() const { return retired_; }
    const ngx_http_rl_server_t &server() const { return server_; }

    /* (not while the worker is stopping()) */
    void connect();
    /* from the locator: where the server is (NULL: nowhere known, why
     * says), for the connect under way */
    void located(const ngx_http_rl_server_t *at, const char *why);
    /* from the locator: the server moved (a failover), the connection
     * goes and is made again where it is now */
    void moved();
    /* a cluster node no slot maps to any more: no connection, no
     * reconnect, until connect() */
    void retire();
    /* asking: the slot is being imported by this node, which takes the
     * call once after ASKING (an ASK redirection) */
    Call *send(ngx_http_rl_group_t *group, bool asking = false);
    Call *refund(ngx_http_rl_group_t *group, int argc, const char **argv,
                 const size_t *len, bool asking = false);
    /* One of the worker's own calls, leaving with the others of its
     * kind of this turn as one call: a refund at group->now_us of
     * group->costs (a lease's returns; a release of slots), a renewal of
     * slots, a charge. */
    Call *queue(ngx_http_rl_group_t *group, CallKind kind);
    /* CLUSTER SLOTS, answered to the cluster */
    bool askSlots();
    /* An operator's command (the operator API, src/api/keys.cpp) as it
     * is, on this connection: fn(ac, reply, data) gets its reply, or
     * NULL when the connection goes first (then it must not touch the
     * link). False when it cannot be sent now. */
    bool operatorCommand(redisCallbackFn *fn, void *data, int argc,
                         const char **argv, const size_t *len);
    /* A reply to one, on connection ac (its callback's), said MOVED:
     * the cluster's map learns it (no request's call goes to the slots
     * of the API's and the fleet's keys: nothing else would). A NULL
     * reply: the connection is going, ac->data with it. */
    static void heardMoved(const redisAsyncContext *ac,
                           const redisReply *reply);
    void timedOut();

    /* callbacks */
    void connected(const redisAsyncContext *ac, int status);
    void disconnected(const redisAsyncContext *ac);
    void handshakeReply(redisAsyncContext *ac, redisReply *reply);
    void named(redisAsyncContext *ac, redisReply *reply);
    void roleReplied(redisAsyncContext *ac, redisReply *reply);
    void scriptLoaded(redisAsyncContext *ac, redisReply *reply);
    void flagsReplied(redisAsyncContext *ac, redisReply *reply);
    void replied(Batch *batch, redisReply *reply);
    void refundsReplied(Batch *batch, const redisReply *reply);
    void refunded(Call *call, const redisReply *reply);
    void probed(const redisAsyncContext *ac, const redisReply *reply);
    void slotsReplied(const redisAsyncContext *ac, const redisReply *reply);
    void flush();
    void reconnectDue() { connect(); }
    void probeDue() {
        if (down_ && ready_ && !stalled_) {
            probe();
        }
    }
    void deadlinePassed();
    /* a reply came: nothing is overdue, unless a probe is still out */
    void stopDeadline() {
        if (!probing_) {
            stopTimer(&deadline_);
        }
    }

    void release(Call *c) {
        c->group = nullptr;
        c->next = free_;
        free_ = c;
    }

private:
    /* the steps of connect(): start() asks the locator, located()
     * opens the connection (open(), startTls()) and sends the handshake
     * (handshake(), loadScript()) */
    void start();
    /* A call comes to a link that stopped connecting as the worker
     * began to exit (it needed nothing then): it connects now, the call
     * queued behind the handshake. */
    void resume();
    bool open();
    bool startTls();
    void handshake();
    void loadScript();
    bool inTlsHandshake() const {
        return !ready_ && tls_.on() && !tls_.done();
    }

    void fail(const char *what, const char *detail);
    void recovered();
    void probe();
    void setUp(bool up);
    /* f(the counters) of each zone on this connection that has them */
    template <typename F>
    void eachStats(F f) {
        for (ngx_uint_t i = 0; i < nzones_; i++) {
            if (zones_[i]->stats != nullptr) {
                f(zones_[i]->stats);
            }
        }
    }
    void drop();
    void schedule();
    bool command(redisCallbackFn *fn, int argc, const char **argv,
                 const size_t *len);
    void answer(Call *call, const redisReply *reply, int64_t clockUs = -1,
                const int64_t *limits = nullptr, int64_t grant = 0);
    void enqueue(Call *call);
    Call *take(ngx_http_rl_group_t *group);
    void sendBatch(Call *first, bool asking,
                   CallKind kind = CallKind::Decide, bool across = false);
    /* node_batch.cpp: a cluster node's calls of a turn, of one kind:
     * across slots where the server took the script's flags (learnt
     * with loadFlags()), else a call per slot */
    void sendCluster(CallQueue *q, CallKind kind);
    void loadFlags();
    /* a call a call across slots did not do: again, on its own slot */
    void againAlone(Call *call, CallKind kind);
    /* what a call across slots of the worker's own calls did, when its
     * reply lists those it did not do (true: the batch is settled) */
    bool ownAcrossReplied(Batch *batch, const redisReply *reply);
    /* the call's part (at `at`) says it was not decided */
    static bool undecided(const redisReply *reply, size_t at,
                          ngx_uint_t rules);
    void notHere(ngx_uint_t calls, CallKind kind);
    bool ownedEmpty() const {
        return ownCalls_[0].empty() && ownCalls_[1].empty() &&
               ownCalls_[2].empty();
    }
    void recycle(Batch *batch) {
        batch->next = freeBatches_;
        freeBatches_ = batch;
    }
    /* The batch goes back to the free list, its calls released; f gets
     * each call's group still waiting (its call cleared), in order. */
    template <typename F>
    void settle(Batch *batch, F f) {
        Call *c = batch->first;
        recycle(batch);
        while (c != nullptr) {
            Call *next = c->next;
            ngx_http_rl_group_t *group = c->group;
            release(c);
            if (group != nullptr) {
                group->call = nullptr;
                f(group);
            }
            c = next;
        }
    }
    /* a MOVED or ASK reply to a batch: its calls go where it says */
    bool redirected(Batch *batch, const redisReply *reply);
    /* An error reply to a call of the slot (its calls get the failure
     * policy): counted; the server refusing every call
     * (src/core/reply_error.hpp) is an incident (refuse(), after the
     * calls are answered: true); a call's own error is logged, at most
     * once a minute. NOSCRIPT, MOVED and ASK are followed, not
     * errors. */
    bool errorReplied(const redisReply *reply, const char *what,
                      ngx_uint_t slot);
    /* The incident: requests get the failure policy at once; a probe
     * that writes (core/script.hpp probeKey) ends it once the server
     * serves; READONLY and NOAUTH connect again first (the locator
     * asked again: a replica's address may lead to the master now). */
    void refuse(const redisReply *reply);
    void probeLater();

    ngx_http_rl_zone_t *zone_;
    ngx_http_rl_zone_t **zones_;
    ngx_uint_t nzones_;
    ngx_str_t label_;           /* rl_zone "a" or rl_zones "a", "b" */
    ngx_http_rl_server_t server_ = {};
    Locator *locator_;
    Slots *cluster_;            /* the cluster this node is of, or NULL */
    ngx_log_t *log_;
    redisAsyncContext *ac_ = nullptr;
    TlsStep tls_;               /* with ac_, for a tls zone */
    ngx_event_t reconnect_;
    ngx_event_t deadline_;
    ngx_event_t flush_;         /* posted while calls are queued */
    ngx_event_t probeTimer_;    /* the next PING while Redis is slow */
    ngx_msec_t backoff_;
    CallQueue queue_;
    CallQueue ownCalls_[3];     /* the worker's own calls, queued: refunds,
                                 * renewals, charges (CallKind - 1) */
    SlotBuckets buckets_;       /* a cluster's flush, by slot */
    BatchCommand command_;
    Call *free_ = nullptr;
    Batch *freeBatches_ = nullptr;
    bool evalNext_ = false;     /* Redis lost the script: send its text */
    bool crossSlot_ = false;    /* the server took the script's flags on
                                   this connection: calls across slots */
    bool flagsLogged_ = false;  /* its refusal of them logged */
    ngx_msec_t notHereAt_[4] = {};  /* calls of a kind not done across
                                       slots, logged then */
    bool ready_ = false;
    bool stalled_ = false;
    bool down_ = false;         /* an incident is open (and was logged) */
    bool up_ = false;           /* as rl_store_up last said */
    bool replyErrors_ = false;  /* no reply of the script's logged,
                                   none good since */
    bool nameRefused_ = false;  /* CLIENT SETNAME refused, logged */
    bool exiting_ = false;
    bool retired_ = false;
    bool owned_;                /* the locator is the link's */
    bool locating_ = false;     /* the locator is asked where to go */
    bool roleRefused_ = false;  /* ROLE refused (an ACL), logged */
    bool lost_ = false;         /* a call died with its connection */
    bool fresh_ = false;        /* a new connection, the worker's slots
                                   not sent on it yet (flush()) */
    bool probing_ = false;      /* a PING is out (probe()) */
    bool probeWrites_ = false;  /* it is the probe that writes */
    bool refused_ = false;      /* the server refuses every call: an
                                   incident until a probe passes */
    int refusedSlot_ = -1;      /* in a cluster: the probe's slot */
    bool asking_ = false;       /* CLUSTER SLOTS is out */
    int64_t probeSentUs_ = 0;
    ngx_msec_t readyAt_ = 0;    /* when the script was loaded */
    ngx_msec_t callErrorAt_ = 0;    /* a call's error logged then */
    ngx_uint_t attempts_ = 0;
};

}  // namespace rl
