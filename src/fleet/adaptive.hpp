/* Limits that follow the upstream (concurrency=auto, SPEC section 13):
 * worker 0's interval. Once a second it takes every entry's samples out
 * of the instance's table (shm/adaptive.hpp) and hands them to the law:
 * for an embedded zone, the core's (src/core/adaptive.hpp) here, N per
 * instance; for a Redis zone, lua/adaptive.lua's in Redis, one EVAL per
 * rule and key value on the worker's link to its slot, which sums them
 * with the other instances' and moves the fleet's N once an interval;
 * its reply (N, the fleet's latency and in-flight, the history) goes
 * back into the entry for the operator API and the metrics. Nothing of
 * it is on a request's path; a Redis that cannot answer skips a turn
 * (the interval's samples are lost, N stays where it is). */
#pragma once

#include "ngx.hpp"

/* (its C entry points, ngx_http_rl_adaptive_init and _exit, are in
 * ngx_http_rl.h) */
