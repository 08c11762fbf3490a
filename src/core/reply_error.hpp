/* What an error reply from Redis says: that the server cannot serve any
 * call now (an incident, as a timeout is), or something about this call
 * only (its requests get the failure policy, the store stays up), or
 * one of the replies the module follows (NOSCRIPT, MOVED, ASK). Read
 * from the reply's first word, its error code, as Redis 7 and Valkey
 * give it for a script's call too ("OOM command not allowed ...
 * script: ..."), and from the "-CODE" inside the text Redis 6 and
 * older wrapped it in ("ERR Error running script (call to f_...):
 * @user_script:1: -OOM command not allowed ..."). */
#pragma once

#include <string_view>

namespace rl {

enum class ReplyError {
    /* this call's alone: a key of the wrong type someone wrote
     * (WRONGTYPE), a script error (ERR ...), anything not below */
    Call,
    /* NOSCRIPT: the call goes again with the script's text */
    NoScript,
    /* MOVED, ASK: a cluster's slot is elsewhere */
    Redirect,
    /* TRYAGAIN: a cluster slot being migrated has the call's keys on
     * two nodes; the server serves its other slots */
    SlotBusy,
    /* the server serves no call now: out of memory under noeviction
     * (OOM), writes stopped by a failed save (MISCONF) or a missing
     * replica (NOREPLICAS), a long script (BUSY), a dataset loading
     * (LOADING), an ACL refusing the command or keys (NOPERM), a
     * connection not authenticated (NOAUTH), a replica (READONLY), a
     * replica cut from its master (MASTERDOWN), a cluster down
     * (CLUSTERDOWN) */
    Refused,
};

ReplyError classifyError(std::string_view text);

/* A refusal that a new connection may end: READONLY (the address may
 * lead to the master once connected again: a virtual IP, a proxy, a
 * name), NOAUTH (the connection lost its authentication). */
bool refusalReconnects(std::string_view text);

/* The error's text for a log line: its first line, without the script
 * details Redis appends (" script: SHA, on @user_script:N."), at most
 * `max` bytes. */
std::string_view errorSummary(std::string_view text, size_t max = 160);

}  // namespace rl
