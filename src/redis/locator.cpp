/*
 * locator.cpp: a server at an address of the configuration (see
 * locator.hpp): redis=, and a cluster's nodes (redis/cluster.cpp). A
 * host name, where the http block has a resolver, is looked up again
 * before each connect; else the address resolved at load is the one.
 */

#include "locator.hpp"

#include "link.hpp"

namespace rl {

void ServerText::set(ngx_str_t h, ngx_int_t p) {
    hostLen = h.len < NGX_SOCKADDR_STRLEN ? h.len : NGX_SOCKADDR_STRLEN;
    ngx_memcpy(host, h.data, hostLen);
    host[hostLen] = '\0';
    port = p;
    ngx_str_t t = {hostLen, host};
    bool v6 = ngx_strlchr(host, host + hostLen, ':') != nullptr;
    u_char *end = ngx_sprintf(addr, v6 ? "[%V]:%i" : "%V:%i", &t, p);
    addrLen = static_cast<size_t>(end - addr);
}

bool numericHost(ngx_str_t host) {
    if (ngx_inet_addr(host.data, host.len) != INADDR_NONE) {
        return true;
    }
#if (NGX_HAVE_INET6)
    u_char a[16];
    if (ngx_inet6_addr(host.data, host.len, a) == NGX_OK) {
        return true;
    }
#endif
    return false;
}

bool hostName(ngx_str_t host) {
    if (host.len == 0 || host.len > NGX_SOCKADDR_STRLEN) {
        return false;
    }
    for (size_t i = 0; i < host.len; i++) {
        u_char ch = host.data[i];
        if (!(ch >= 'a' && ch <= 'z') && !(ch >= 'A' && ch <= 'Z') &&
            !(ch >= '0' && ch <= '9') && ch != '-' && ch != '.' &&
            ch != '_') {
            return false;
        }
    }
    return !numericHost(host);
}

AddressLocator::AddressLocator(const ngx_http_rl_server_t &server,
                               bool numericAddr, const Resolving &resolving,
                               ngx_str_t label, ngx_log_t *log)
    : server_(server), lookup_(server.name, server.host, resolving, label,
                               log),
      numericAddr_(numericAddr) {}

void AddressLocator::locate(Link *link) {
    if (!lookup_.on()) {
        link->located(&server_, nullptr);
        return;
    }
    link_ = link;
    lookup_.start(looked, this);
}

void AddressLocator::cancel() {
    lookup_.cancel();
    link_ = nullptr;
}

void AddressLocator::looked(void *data) noexcept {
    auto *self = static_cast<AddressLocator *>(data);
    Link *link = self->link_;
    self->link_ = nullptr;
    self->server_.host = self->lookup_.host();
    if (self->numericAddr_) {
        self->text_.set(self->server_.host, self->server_.port);
        self->server_.addr = self->text_.server().addr;
    }
    if (link != nullptr) {
        link->located(&self->server_, nullptr);
    }
}

}  // namespace rl
