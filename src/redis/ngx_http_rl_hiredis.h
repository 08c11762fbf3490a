/*
 * A hiredis async adapter for nginx's event loop, written the way hiredis
 * writes its adapters (adapters/libevent.h): the context's socket gets an
 * nginx connection whose events call redisAsyncHandleRead/Write.
 */

#ifndef NGX_HTTP_RL_HIREDIS_H_INCLUDED_
#define NGX_HTTP_RL_HIREDIS_H_INCLUDED_

#include <ngx_config.h>
#include <ngx_core.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>


/* Attaches ac to nginx events; NGX_ERROR if already attached or out of
 * connections. The socket stays hiredis': it is closed by hiredis when
 * the context is freed, after the adapter's cleanup released the nginx
 * connection object without closing it. */
ngx_int_t ngx_http_rl_hiredis_attach(redisAsyncContext *ac, ngx_log_t *log);

#if (NGX_HTTP_RL_TLS)
/* The attached context speaks TLS through ssl (an SSL *, hiredis'):
 * OpenSSL's error queue is cleared before each read and write, so that
 * an error in it is this connection's, and records OpenSSL has read
 * but hiredis not taken are read on the next turn. */
void ngx_http_rl_hiredis_tls(redisAsyncContext *ac, void *ssl);
#endif


#endif /* NGX_HTTP_RL_HIREDIS_H_INCLUDED_ */
