/*
 * hiredis on nginx's event loop. Events are registered level-triggered:
 * hiredis reads at most 16 KiB per redisAsyncHandleRead call, and with
 * edge-triggered epoll the rest of a pipelined burst would wait for the
 * next packet.
 *
 * Writes: on a connected context, commands queued during a turn of the
 * loop are written when its posted events run (the write event is
 * posted, not registered), in the same turn and with no epoll_ctl; only
 * a write the socket cannot take at once waits for epoll.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_event.h>

#include "ngx_http_rl_hiredis.h"

#if (NGX_HTTP_RL_TLS)
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif


typedef struct {
    redisAsyncContext   *ac;
    ngx_connection_t    *conn;
#if (NGX_HTTP_RL_TLS)
    SSL                 *ssl;
    unsigned             reading:1;  /* in redisAsyncHandleRead */
    unsigned             freed:1;    /* cleanup came meanwhile */
#endif
} ngx_http_rl_hiredis_events_t;


static void ngx_http_rl_hiredis_read(ngx_event_t *ev);
#if (NGX_HTTP_RL_TLS)
static void ngx_http_rl_hiredis_read_tls(ngx_http_rl_hiredis_events_t *e);
#endif
static void ngx_http_rl_hiredis_write(ngx_event_t *ev);
static void ngx_http_rl_hiredis_add_read(void *privdata);
static void ngx_http_rl_hiredis_del_read(void *privdata);
static void ngx_http_rl_hiredis_add_write(void *privdata);
static void ngx_http_rl_hiredis_del_write(void *privdata);
static void ngx_http_rl_hiredis_cleanup(void *privdata);


/* inside redisAsyncHandleWrite: hiredis asks to write again only when
 * the socket took less than it had */
static ngx_uint_t  ngx_http_rl_hiredis_writing;


ngx_int_t
ngx_http_rl_hiredis_attach(redisAsyncContext *ac, ngx_log_t *log)
{
    ngx_connection_t              *c;
    ngx_http_rl_hiredis_events_t  *e;

    if (ac->ev.data != NULL) {
        return NGX_ERROR;
    }

    e = ngx_calloc(sizeof(ngx_http_rl_hiredis_events_t), log);
    if (e == NULL) {
        return NGX_ERROR;
    }

    c = ngx_get_connection(ac->c.fd, log);
    if (c == NULL) {
        ngx_free(e);
        return NGX_ERROR;
    }

    /*
     * TCP keepalive (hiredis': 15 s idle, then 3 probes 5 s apart): a
     * peer gone without a reset (a NAT's or a firewall's idle timeout, a
     * host powered off) is noticed within about 30 s on a connection
     * that carries nothing meanwhile, such as a sentinel's watch or a
     * zone without traffic; its failure then makes it again.
     */
    if (ac->c.connection_type == REDIS_CONN_TCP
        && redisEnableKeepAlive(&ac->c) != REDIS_OK)
    {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "rl: no TCP keepalive on a redis connection: %s",
                      ac->c.errstr);
        ac->c.err = 0;      /* the connection itself is fine */
        ac->c.errstr[0] = '\0';
    }

    c->data = e;
    c->log = log;
    c->read->log = log;
    c->write->log = log;
    c->read->handler = ngx_http_rl_hiredis_read;
    c->write->handler = ngx_http_rl_hiredis_write;

    e->ac = ac;
    e->conn = c;

    ac->ev.data = e;
    ac->ev.addRead = ngx_http_rl_hiredis_add_read;
    ac->ev.delRead = ngx_http_rl_hiredis_del_read;
    ac->ev.addWrite = ngx_http_rl_hiredis_add_write;
    ac->ev.delWrite = ngx_http_rl_hiredis_del_write;
    ac->ev.cleanup = ngx_http_rl_hiredis_cleanup;

    return NGX_OK;
}


#if (NGX_HTTP_RL_TLS)

void
ngx_http_rl_hiredis_tls(redisAsyncContext *ac, void *ssl)
{
    ngx_http_rl_hiredis_events_t  *e = ac->ev.data;

    e->ssl = ssl;
}

#endif


static void
ngx_http_rl_hiredis_read(ngx_event_t *ev)
{
    ngx_connection_t              *c = ev->data;
    ngx_http_rl_hiredis_events_t  *e = c->data;

#if (NGX_HTTP_RL_TLS)
    if (e->ssl != NULL) {
        ngx_http_rl_hiredis_read_tls(e);
        return;
    }
#endif

    /* may free the context, and e with it: nothing after this call */
    redisAsyncHandleRead(e->ac);
}


#if (NGX_HTTP_RL_TLS)

/* hiredis takes at most 16 KiB per read: what OpenSSL decrypted beyond
 * that is in no socket buffer any more, so epoll would not say so */

static void
ngx_http_rl_hiredis_read_tls(ngx_http_rl_hiredis_events_t *e)
{
    ngx_event_t  *rev;

    ERR_clear_error();

    e->reading = 1;
    redisAsyncHandleRead(e->ac);

    if (e->freed) {
        ngx_free(e);
        return;
    }

    e->reading = 0;
    rev = e->conn->read;

    if (SSL_pending(e->ssl) > 0 && !rev->posted) {
        ngx_post_event(rev, &ngx_posted_events);
    }
}

#endif


static void
ngx_http_rl_hiredis_write(ngx_event_t *ev)
{
    ngx_connection_t              *c = ev->data;
    ngx_http_rl_hiredis_events_t  *e = c->data;

    /* may free the context, and e with it: nothing after this call
     * touches e */
#if (NGX_HTTP_RL_TLS)
    if (e->ssl != NULL) {
        ERR_clear_error();
    }
#endif
    ngx_http_rl_hiredis_writing = 1;
    redisAsyncHandleWrite(e->ac);
    ngx_http_rl_hiredis_writing = 0;
}


static void
ngx_http_rl_hiredis_add_read(void *privdata)
{
    ngx_http_rl_hiredis_events_t  *e = privdata;

    if (!e->conn->read->active) {
        (void) ngx_add_event(e->conn->read, NGX_READ_EVENT, NGX_LEVEL_EVENT);
    }
}


static void
ngx_http_rl_hiredis_del_read(void *privdata)
{
    ngx_http_rl_hiredis_events_t  *e = privdata;

    if (e->conn->read->active) {
        (void) ngx_del_event(e->conn->read, NGX_READ_EVENT, 0);
    }
}


static void
ngx_http_rl_hiredis_add_write(void *privdata)
{
    ngx_http_rl_hiredis_events_t  *e = privdata;
    ngx_event_t                   *wev = e->conn->write;

    if (wev->active) {
        return;
    }

    if ((e->ac->c.flags & REDIS_CONNECTED) && !ngx_http_rl_hiredis_writing) {
        ngx_post_event(wev, &ngx_posted_events);
        return;
    }

    /* connecting (hiredis learns of it by writability), or the socket
     * is full */
    (void) ngx_add_event(wev, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);
}


static void
ngx_http_rl_hiredis_del_write(void *privdata)
{
    ngx_http_rl_hiredis_events_t  *e = privdata;

    if (e->conn->write->posted) {
        ngx_delete_posted_event(e->conn->write);
    }

    if (e->conn->write->active) {
        (void) ngx_del_event(e->conn->write, NGX_WRITE_EVENT, 0);
    }
}


static void
ngx_http_rl_hiredis_cleanup(void *privdata)
{
    ngx_connection_t              *c;
    ngx_http_rl_hiredis_events_t  *e = privdata;

    if (e == NULL) {
        return;
    }

    c = e->conn;
    e->ac->ev.data = NULL;

    ngx_http_rl_hiredis_del_read(e);
    ngx_http_rl_hiredis_del_write(e);

    if (c->read->posted) {
        ngx_delete_posted_event(c->read);
    }

    if (c->write->posted) {
        ngx_delete_posted_event(c->write);
    }

    /* hiredis closes the socket; stale epoll events see fd == -1 */
    ngx_free_connection(c);
    c->fd = (ngx_socket_t) -1;

#if (NGX_HTTP_RL_TLS)
    if (e->reading) {
        e->freed = 1;   /* ngx_http_rl_hiredis_read_tls() frees it */
        return;
    }
#endif

    ngx_free(e);
}
