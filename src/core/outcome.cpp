#include "outcome.hpp"

namespace rl {

size_t bindingRule(const RuleOutcome* o, size_t n, bool allowed) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        const RuleOutcome& a = o[i];
        const RuleOutcome& b = o[best];
        bool better;
        if (!allowed) {
            better = a.retryMs > b.retryMs;
        } else {
            better = a.remaining < b.remaining ||
                     (a.remaining == b.remaining && a.resetMs > b.resetMs);
        }
        if (better) {
            best = i;
        }
    }
    return best;
}

int64_t secondsCeil(int64_t ms) {
    return ms <= 0 ? 0 : (ms + 999) / 1000;
}

}  // namespace rl
