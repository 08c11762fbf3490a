/* The one C++ entrance to nginx: its headers, as C, before anything else.
 * The pure core (src/core) never includes this file. */
#pragma once

extern "C" {
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>

#include "ngx_http_rl.h"

/* nginx's auth_basic, whose location conf tells whether it checked a
 * request's user (api/live.cpp); weak: NULL in an nginx built without
 * it */
extern ngx_module_t ngx_http_auth_basic_module __attribute__((weak));
}

#include <string_view>

namespace rl {

/* An nginx string's bytes, seen from C++ (no copy). */
inline std::string_view viewOf(const ngx_str_t &s) {
    return {reinterpret_cast<const char *>(s.data), s.len};
}

}  // namespace rl
