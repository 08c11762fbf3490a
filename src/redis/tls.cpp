/*
 * redis/tls.cpp: TLS to Redis (see redis/tls.hpp). A zone's SSL_CTX is
 * made once, with the configuration (nginx -t reads its files and names
 * what it cannot load), and freed with the configuration's pool: in the
 * master on reload, in a worker when it exits. Each connection gets an
 * SSL object of it with the host name to check and SNI.
 *
 * Built without a hiredis that has TLS (hiredis 0.14), rl_zone refuses
 * "tls" (ngx_http_rl_directives.c) and nothing here is reached.
 */

#include "tls.hpp"

extern "C" {
#include "ngx_http_rl_hiredis.h"
}

#include <cstdio>

#if (NGX_HTTP_RL_TLS)

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

extern "C" {
#include <hiredis/hiredis_ssl.h>
}

namespace rl {
namespace {

void freeContext(void *data) noexcept {
    SSL_CTX_free(static_cast<SSL_CTX *>(data));
}

/* OpenSSL's last error in its own words, for a configuration message */
const char *sslError(char *buf, size_t len) {
    unsigned long e = ERR_peek_last_error();
    if (e == 0) {
        std::snprintf(buf, len, "no error given");
    } else {
        ERR_error_string_n(e, buf, len);
    }
    ERR_clear_error();
    return buf;
}

bool numeric(const char *name) {
    size_t len = ngx_strlen(name);
    if (ngx_inet_addr((u_char *) name, len) != INADDR_NONE) {
        return true;
    }
#if (NGX_HAVE_INET6)
    u_char a[16];
    return ngx_inet6_addr((u_char *) name, len, a) == NGX_OK;
#else
    return false;
#endif
}

/* The CA certificates: tls_ca=, else (when verifying) the system's
 * bundle, read now rather than looked up in a directory while a
 * handshake waits */
bool loadCa(ngx_conf_t *cf, ngx_http_rl_zone_t *zone, SSL_CTX *ctx) {
    const ngx_http_rl_tls_t &tls = zone->tls;
    char err[256];
    if (tls.ca.len) {
        if (SSL_CTX_load_verify_locations(
                ctx, reinterpret_cast<char *>(tls.ca.data), nullptr) != 1)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "rl_zone \"%V\": cannot load tls_ca \"%V\" "
                               "(SSL: %s)", &zone->name, &tls.ca,
                               sslError(err, sizeof(err)));
            return false;
        }
        return true;
    }
    if (!tls.verify) {
        return true;
    }
    const char *file = getenv(X509_get_default_cert_file_env());
    if (file == nullptr) {
        file = X509_get_default_cert_file();
    }
    if (SSL_CTX_load_verify_locations(ctx, file, nullptr) != 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl_zone \"%V\": cannot load the system's CA "
                           "certificates \"%s\" (SSL: %s); give tls_ca=",
                           &zone->name, file, sslError(err, sizeof(err)));
        return false;
    }
    return true;
}

bool loadCertificate(ngx_conf_t *cf, ngx_http_rl_zone_t *zone,
                     SSL_CTX *ctx) {
    const ngx_http_rl_tls_t &tls = zone->tls;
    char err[256];
    if (tls.cert.len == 0) {
        return true;
    }
    if (SSL_CTX_use_certificate_chain_file(
            ctx, reinterpret_cast<char *>(tls.cert.data)) != 1)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl_zone \"%V\": cannot load tls_cert \"%V\" "
                           "(SSL: %s)", &zone->name, &tls.cert,
                           sslError(err, sizeof(err)));
        return false;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx,
                                    reinterpret_cast<char *>(tls.key.data),
                                    SSL_FILETYPE_PEM) != 1)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl_zone \"%V\": cannot load tls_key \"%V\" "
                           "(SSL: %s)", &zone->name, &tls.key,
                           sslError(err, sizeof(err)));
        return false;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl_zone \"%V\": tls_key \"%V\" is not the key "
                           "of tls_cert \"%V\" (SSL: %s)", &zone->name,
                           &tls.key, &tls.cert, sslError(err, sizeof(err)));
        return false;
    }
    return true;
}

}  // namespace

bool TlsStep::start(redisAsyncContext *ac, const ngx_http_rl_tls_t &tls,
                    ngx_str_t host) {
    ssl_ = nullptr;
    verify_ = tls.verify != 0;
    why_[0] = '\0';
    ERR_clear_error();

    SSL *ssl = SSL_new(static_cast<SSL_CTX *>(tls.ctx));
    if (ssl == nullptr) {
        sslError(why_, sizeof(why_));
        return false;
    }
    const char *name = reinterpret_cast<const char *>(
        tls.server_name.len ? tls.server_name.data : host.data);
    bool ip = numeric(name);
    bool ok = true;
    if (verify_) {
        ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
                  == 1
                : SSL_set1_host(ssl, name) == 1;
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    if (ok && !ip) {     /* SNI is a name, never an address */
        ok = SSL_set_tlsext_host_name(ssl, name) == 1;
    }
    if (!ok) {
        sslError(why_, sizeof(why_));
        SSL_free(ssl);
        return false;
    }
    /* hiredis owns the SSL object from here, and frees it with ac; its
     * first SSL_connect may meet the server's answer already */
    ssl_ = ssl;
    if (redisInitiateSSL(&ac->c, ssl) != REDIS_OK) {
        if (failure(nullptr) == nullptr) {
            std::snprintf(why_, sizeof(why_), "%s",
                          ac->c.errstr[0] ? ac->c.errstr : "error");
        }
        ssl_ = nullptr;
        SSL_free(ssl);
        return false;
    }
    ngx_http_rl_hiredis_tls(ac, ssl);
    return true;
}

bool TlsStep::done() const {
    return ssl_ != nullptr && SSL_is_init_finished(ssl_);
}

const char *TlsStep::failure(const char *io) {
    if (ssl_ == nullptr) {
        return nullptr;
    }
    long verified = SSL_get_verify_result(ssl_);
    unsigned long e = ERR_peek_last_error();
    if (io != nullptr && e == 0 && (!verify_ || verified == X509_V_OK)) {
        /* The server's last word may be waiting, unread: an alert sent
         * as it closed (a client certificate it wanted). One read, on a
         * socket that is closing anyway. */
        char buf[64];
        (void) SSL_read(ssl_, buf, sizeof(buf));
        e = ERR_peek_last_error();
    }
    ERR_clear_error();
    if (verify_ && verified != X509_V_OK) {
        std::snprintf(why_, sizeof(why_), "certificate verify failed: %s",
                      X509_verify_cert_error_string(verified));
    } else if (e != 0) {
        const char *reason = ERR_reason_error_string(e);
        std::snprintf(why_, sizeof(why_), "%s",
                      reason != nullptr ? reason : "TLS error");
    } else if (io != nullptr && done()) {
        /* done on our side, refused on the server's, whose alert a
         * reset overtook */
        std::snprintf(why_, sizeof(why_), "the server closed the "
                      "connection as the handshake ended (%s)",
                      io[0] ? io : "closed");
    } else {
        return nullptr;
    }
    return why_;
}

}  // namespace rl

extern "C" char *ngx_http_rl_tls_conf(ngx_conf_t *cf,
                                      ngx_http_rl_zone_t *zone) noexcept {
    char err[256];
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "rl_zone \"%V\": SSL_CTX_new() failed (SSL: %s)",
                           &zone->name, rl::sslError(err, sizeof(err)));
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    ngx_pool_cleanup_t *cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == nullptr) {
        SSL_CTX_free(ctx);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    cln->handler = rl::freeContext;
    cln->data = ctx;
    zone->tls.ctx = ctx;

    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, zone->tls.verify ? SSL_VERIFY_PEER
                                             : SSL_VERIFY_NONE, nullptr);
    if (!rl::loadCa(cf, zone, ctx) || !rl::loadCertificate(cf, zone, ctx)) {
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

#else   /* a hiredis without TLS: "tls" fails nginx -t */

namespace rl {

bool TlsStep::start(redisAsyncContext *, const ngx_http_rl_tls_t &,
                    ngx_str_t) {
    std::snprintf(why_, sizeof(why_), "built without TLS");
    return false;
}

bool TlsStep::done() const { return false; }

const char *TlsStep::failure(const char *) { return nullptr; }

}  // namespace rl

extern "C" char *ngx_http_rl_tls_conf(ngx_conf_t *,
                                      ngx_http_rl_zone_t *) noexcept {
    return static_cast<char *>(NGX_CONF_ERROR);
}

#endif
