/* The master a zone's Redis Sentinels name (src/redis/sentinel.cpp): the
 * locator of a sentinel= zone's link, per worker.
 *
 * Each time the link connects, a sentinel is asked SENTINEL
 * get-master-addr-by-name (the one that answered last first, then the
 * others in turn, each within connect_timeout), on a connection of its
 * own made for the question (TLS and the sentinels' credentials as the
 * zone says). The link checks that the server is the master (ROLE) and
 * asks again, after its backoff, when it is not, or cannot be reached:
 * every second while the master is down. One sentinel, the one that
 * answered, is watched: subscribed to +switch-master (and to
 * +promoted-slave, which the sentinel leading a failover sends first),
 * so a failover moves the link to the new master at once. When no
 * sentinel answers, the last master named is used (a warning, once).
 * Sentinels with announce-hostnames name the master by host name: it is
 * looked up through the http block's resolver before each connect (and
 * without one, the link is told so: there is no blocking lookup). */
#pragma once

#include "locator.hpp"
#include "tls.hpp"

namespace rl {

class Sentinels : public Locator {
public:
    Sentinels(ngx_http_rl_zone_t *zone, ngx_str_t label,
              const Resolving &resolving, ngx_log_t *log);
    ~Sentinels() override;

    void locate(Link *link) override;
    void cancel() override;
    ngx_str_t what() const override { return what_; }
    bool wantsMaster() const override { return true; }
    bool follows() const override { return true; }
    void refused(Link *link) override;

    /* A connection to a sentinel: the question's, or the watch's. */
    struct Conn {
        Sentinels *owner;
        redisAsyncContext *ac;
        TlsStep tls;
        ngx_event_t timer;      /* the question's deadline; the watch's
                                   next attempt */
        ngx_uint_t node;        /* which sentinel */
        bool watch;
    };

    /* callbacks */
    void connected(Conn *c, const redisAsyncContext *ac, int status);
    void disconnected(Conn *c, const redisAsyncContext *ac);
    void authReplied(Conn *c, redisAsyncContext *ac, redisReply *reply);
    void masterReplied(Conn *c, redisAsyncContext *ac, redisReply *reply);
    void message(Conn *c, redisAsyncContext *ac, redisReply *reply);
    void timerDue(Conn *c);
    void looked(Conn *c);
    void masterLooked();

private:
    struct Node {
        NameLookup *lookup;     /* where it is now */
        ServerText text;        /* for logs, and to connect to */
        bool down;              /* logged */
    };

    /* asks the sentinels, node `from` first */
    void ask(ngx_uint_t from);
    void askNode(ngx_uint_t node);
    /* the question's sentinel did not answer it: the next is asked */
    void next(const char *why, bool down);
    void allFailed();
    void answer(const ServerText &master, ngx_uint_t node);
    void give();
    void lookUpMaster();
    /* master_ moved while the link is at (or on its way to) given_ */
    void follow();
    void watch(ngx_uint_t node);
    void watchLater();
    /* connects c to its node's address: false (c closed) when it
     * cannot, with why */
    bool open(Conn *c, const char **why);
    void close(Conn *c);
    void failed(Conn *c, const char *why);
    void nodeDown(ngx_uint_t node, const char *why);
    void nodeUp(ngx_uint_t node);
    bool command(Conn *c, redisCallbackFn *fn, int argc, const char **argv,
                 const size_t *len);
    bool masterOf(const redisReply *reply, ServerText *to);

    ngx_http_rl_zone_t *zone_;
    Resolving resolving_;
    ngx_str_t label_;
    ngx_str_t what_ = {0, nullptr};  /* master "NAME" */
    ngx_log_t *log_;
    Node *nodes_ = nullptr;
    ngx_uint_t nnodes_ = 0;
    Link *link_ = nullptr;      /* the link served */
    bool waiting_ = false;      /* the link waits for an answer */
    Conn ask_;
    Conn watch_;
    ngx_uint_t preferred_ = 0;  /* asked first: answered last */
    ngx_uint_t tried_ = 0;      /* of this question's sentinels */
    ServerText master_;         /* the last master named */
    ServerText given_;          /* the server the link was given (an
                                   address, or a name and port) */
    /* a master named by host name: its lookup (made again for another
       name), the name it looks up, the address given_ resolved to */
    NameLookup *masterLookup_ = nullptr;
    u_char masterName_[NGX_SOCKADDR_STRLEN + 1];
    ServerText resolved_;
    bool resolvingMaster_ = false;
    bool known_ = false;        /* master_ holds one */
    bool switched_ = false;     /* master_ from a +switch-master: the
                                   next locate takes it */
    bool failing_ = false;      /* logged: no sentinel answered */
    bool watching_ = false;     /* subscribed */
    bool rewatch_ = false;      /* the watch was lost: on subscribing
                                   again, the sentinels are asked */
    bool asking_ = false;       /* a question is under way */
    bool exiting_ = false;
    char why_[200] = "";        /* the last sentinel's failure */
    char err_[200] = "";
    char linkWhy_[300] = "";
};

}  // namespace rl
