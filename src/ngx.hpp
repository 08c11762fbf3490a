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
}
