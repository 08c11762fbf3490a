#include "script.hpp"

#include "ngx_http_rl_script.h"
#include "sha1.hpp"

namespace rl {

std::string_view scriptText() {
    static constexpr char kText[] = NGX_HTTP_RL_SCRIPT;
    return {kText, sizeof(kText) - 1};
}

std::string_view scriptSha() {
    /* Computed on first use (configuration time, in the master). */
    static const struct Hex {
        char text[40];
        Hex() { toHex(sha1(scriptText()), text, 40); }
    } hex;
    return {hex.text, 40};
}

namespace {

/* key(k) and rule(k) give rule k's key and RuleArgs. */
template <class Key, class Rule>
void fill(const char** argv, size_t* argvlen, std::string_view command,
          std::string_view script, std::string_view count, Key key,
          Rule rule, size_t n, std::string_view now, bool refund) {
    size_t i = 0;
    auto put = [&](std::string_view s) {
        argv[i] = s.data();
        argvlen[i] = s.size();
        i++;
    };
    put(command);
    put(script);
    put(count);
    for (size_t k = 0; k < n; k++) {
        put(key(k));
    }
    put(count);
    put(now.data() != nullptr ? now : std::string_view("", 0));
    for (size_t k = 0; k < n; k++) {
        RuleArgs r = rule(k);
        put(r.spec);
        put(r.cost);
    }
    if (refund) {
        put("refund");
    }
}

}  // namespace

void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const std::string_view* keys, const RuleArgs* rules,
              size_t n, std::string_view now, bool refund) {
    fill(argv, argvlen, command, script, count,
         [&](size_t k) { return keys[k]; },
         [&](size_t k) { return rules[k]; }, n, now, refund);
}

void fillArgv(const char** argv, size_t* argvlen, std::string_view command,
              std::string_view script, std::string_view count,
              const char* const* keys, const size_t* keyLens,
              const char* const* ruleArgs, const size_t* ruleArgLens,
              size_t n, std::string_view now, bool refund) {
    static_assert(kArgsPerRule == 2, "spec, cost");
    fill(argv, argvlen, command, script, count,
         [&](size_t k) { return std::string_view(keys[k], keyLens[k]); },
         [&](size_t k) {
             const char* const* s = ruleArgs + kArgsPerRule * k;
             const size_t* l = ruleArgLens + kArgsPerRule * k;
             return RuleArgs{{s[0], l[0]}, {s[1], l[1]}};
         },
         n, now, refund);
}

}  // namespace rl
