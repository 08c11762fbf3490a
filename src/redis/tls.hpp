/* The TLS step of a link's connect (src/redis/tls.cpp): after the TCP
 * connect is started, before AUTH/SELECT and SCRIPT LOAD. An SSL object
 * of the zone's context (made with the configuration), the host name to
 * check and to send as SNI, handed to hiredis (redisInitiateSSL), which
 * drives the handshake on the socket as it reads and writes: on nginx's
 * event loop, within the link's connect_timeout. hiredis' own context
 * does not check host names; this one does. */
#pragma once

#include "ngx.hpp"

struct ssl_st;

namespace rl {

class TlsStep {
public:
    /* Starts TLS on ac's socket (its TCP connect may still be under
     * way), for a node at host (numeric: the name checked when the
     * zone has none); false, with why(), when it cannot. */
    bool start(redisAsyncContext *ac, const ngx_http_rl_tls_t &tls,
               ngx_str_t host);
    /* the context went, and its SSL object with it */
    void end() { ssl_ = nullptr; }
    bool on() const { return ssl_ != nullptr; }
    /* the handshake is complete (on our side) */
    bool done() const;
    /* Why the connection failed, as TLS tells: the certificate's
     * verification error, an alert from the server, a protocol error;
     * given the I/O error of a connection not ready yet (io), a server
     * that closed it as the handshake ended; NULL when TLS has nothing
     * to say. The errors in OpenSSL's queue are this connection's: the
     * event adapter clears the queue before hiredis reads or writes. */
    const char *failure(const char *io);
    const char *why() const { return why_; }

private:
    struct ssl_st *ssl_ = nullptr;
    bool verify_ = false;
    char why_[200] = "";
};

}  // namespace rl
