/*
 * reply_error.cpp: what an error reply from Redis says (see
 * reply_error.hpp).
 */

#include "reply_error.hpp"

#include <array>

namespace rl {
namespace {

constexpr std::array<std::string_view, 10> kRefusals = {
    "OOM",      "MISCONF", "BUSY",       "LOADING",     "NOPERM",
    "NOAUTH",   "READONLY", "MASTERDOWN", "NOREPLICAS", "CLUSTERDOWN"};

/* The error code: the text's first word. Redis 6 and older wrapped a
 * script's call error as "ERR Error running script ...: -CODE ...": the
 * code after the last ": -" then. */
std::string_view codeOf(std::string_view text) {
    constexpr std::string_view wrapped = "ERR Error running script";
    if (text.substr(0, wrapped.size()) == wrapped) {
        size_t at = text.rfind(": -");
        if (at != std::string_view::npos) {
            text.remove_prefix(at + 3);
        }
    }
    size_t end = text.find_first_of(" \r\n");
    return text.substr(0, end);
}

}  // namespace

ReplyError classifyError(std::string_view text) {
    std::string_view code = codeOf(text);
    if (code == "NOSCRIPT") {
        return ReplyError::NoScript;
    }
    if (code == "MOVED" || code == "ASK") {
        return ReplyError::Redirect;
    }
    if (code == "TRYAGAIN") {
        return ReplyError::SlotBusy;
    }
    for (std::string_view r : kRefusals) {
        if (code == r) {
            return ReplyError::Refused;
        }
    }
    return ReplyError::Call;
}

bool refusalReconnects(std::string_view text) {
    std::string_view code = codeOf(text);
    return code == "READONLY" || code == "NOAUTH";
}

std::string_view errorSummary(std::string_view text, size_t max) {
    size_t end = text.find_first_of("\r\n");
    text = text.substr(0, end);
    size_t script = text.find(" script: ");
    if (script != std::string_view::npos) {
        text = text.substr(0, script);
    }
    return text.substr(0, max);
}

}  // namespace rl
