/*
 * api/json.cpp: the operator API's answers (SPEC section 8): JSON
 * written into buffers of the request's pool as it is made, then sent
 * as one chain, in the manner of nginx's stub_status (the length known,
 * one output_filter). Every answer is application/json; an error is
 * {"error": {"status", "text", "code"}}.
 */

#include "api.hpp"

#include "core/key_text.hpp"
#include "core/top_keys.hpp"

namespace rl::api {

namespace {

constexpr size_t kChunk = 8192;

ngx_int_t sendHeader(ngx_http_request_t *r, ngx_uint_t status, off_t len) {
    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    if (len > 0) {
        ngx_str_set(&r->headers_out.content_type, "application/json");
        r->headers_out.content_type_len = r->headers_out.content_type.len;
    }
    /* what the API says now, not what a cache kept */
    if (!header(r, "Cache-Control", "no-store")) {
        return NGX_ERROR;
    }
    return ngx_http_send_header(r);
}

}  // namespace

bool header(ngx_http_request_t *r, const char *name, const char *value) {
    ngx_str_t v = {ngx_strlen(value), reinterpret_cast<u_char *>(
                                          const_cast<char *>(value))};
    return ngx_http_rl_add_header(r, name, ngx_strlen(name), &v) == NGX_OK;
}

u_char *Json::room(size_t n) {
    if (failed_) {
        return nullptr;
    }
    ngx_buf_t *b = last_ != nullptr ? last_->buf : nullptr;
    if (b == nullptr || static_cast<size_t>(b->end - b->last) < n) {
        auto *cl = ngx_alloc_chain_link(pool_);
        b = ngx_create_temp_buf(pool_, n > kChunk ? n : kChunk);
        if (cl == nullptr || b == nullptr) {
            failed_ = true;
            return nullptr;
        }
        cl->buf = b;
        cl->next = nullptr;
        if (last_ != nullptr) {
            last_->next = cl;
        } else {
            first_ = cl;
        }
        last_ = cl;
    }
    return b->last;
}

Json &Json::raw(const char *s, size_t n) {
    if (n == 0) {
        return *this;
    }
    u_char *p = room(n);
    if (p != nullptr) {
        last_->buf->last = ngx_cpymem(p, s, n);
        length_ += n;
    }
    return *this;
}

Json &Json::str(std::string_view s) {
    u_char *p = room(json::stringMax(s.size()));
    if (p != nullptr) {
        auto *end = reinterpret_cast<u_char *>(
            json::writeString(reinterpret_cast<char *>(p), s));
        length_ += static_cast<size_t>(end - p);
        last_->buf->last = end;
    }
    return *this;
}

Json &Json::num(int64_t v) {
    u_char *p = room(NGX_INT64_LEN + 1);
    if (p != nullptr) {
        u_char *end = ngx_http_rl_decimal(p, v);
        length_ += static_cast<size_t>(end - p);
        last_->buf->last = end;
    }
    return *this;
}

Json &seconds(Json &out, uint64_t us) {
    out.num(static_cast<int64_t>(us / 1000000));
    uint64_t frac = us % 1000000;
    if (frac > 0) {
        char digits[8] = {'.'};
        size_t n = 1;
        for (uint64_t d = 100000; frac > 0; d /= 10) {
            digits[n++] = static_cast<char>('0' + frac / d);
            frac %= d;
        }
        out.raw(digits, n);
    }
    return out;
}

Json &keyValue(Json &out, const RuleSet &set, std::string_view value) {
    char text[keyTextMax(top::kValueMax)];
    size_t cap = sizeof(text) - 3;
    size_t n = keyText(text, cap, value, set.address);
    return out.str({text, n});
}

ngx_int_t send(ngx_http_request_t *r, ngx_uint_t status, const Json &body) {
    if (body.failed()) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_int_t rc = sendHeader(r, status, static_cast<off_t>(body.length()));
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only ||
        body.chain() == nullptr) {
        return rc;
    }
    ngx_chain_t *cl = body.chain();
    while (cl->next != nullptr) {
        cl = cl->next;
    }
    cl->buf->last_buf = r == r->main ? 1 : 0;
    cl->buf->last_in_chain = 1;
    return ngx_http_output_filter(r, body.chain());
}

ngx_int_t sendEmpty(ngx_http_request_t *r, ngx_uint_t status) {
    r->header_only = 1;
    return sendHeader(r, status, 0);
}

ngx_int_t sendError(ngx_http_request_t *r, const Error &e) {
    Json out(r->pool);
    out.raw("{\"error\":{\"status\":").num(e.status)
        .raw(",\"text\":").str(e.text)
        .raw(",\"code\":").str(e.code).raw("}}\n");
    return send(r, static_cast<ngx_uint_t>(e.status), out);
}

}  // namespace rl::api
