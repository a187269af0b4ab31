/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The risk scan (model/risk-scan.c), pure, over hostile source text: the first byte picks a rule
 * set, a class mask, a policy and whether the caller asks; the rest is the program (NULs and all).
 * Invariants: at most RISK_HITS_MAX hits, each of a class in the mask and with a pattern from the
 * table; the same input scans the same twice; the choice is strong exactly when a reason says so,
 * never standard where the caller or the policy asked, refused only for never + caller; the
 * record's JSON parses back with the same tier and at most RISK_HITS_MAX + 3 reasons, within
 * ISOLATION_JSON_MAX bytes. */

#include <errno.h>
#include <json-c/json.h>
#include <string.h>

#include "fuzz.h"
#include "model/risk-scan.h"
#include "util.h"

static const char *const sets[] = { "python", "node", "bash", "c", "go", "rust", "java", "ruby",
                                    "perl", "php", "lua", "r", "sql", "cobol" };

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RiskScan a, b;
        IsolationChoice c;
        json_object *o, *tier, *reasons;
        const char *code;
        size_t len;
        uint8_t k;
        int r;

        if (size < 2)
                return 0;
        k = data[0];
        code = (const char *) data + 2;
        len = size - 2;
        const char *set = sets[k % ELEMENTSOF(sets)];
        unsigned mask = data[1] & RISK_CLASSES_ALL;

        fuzz_check(risk_scan(set, mask, code, len, &a) == a.n && a.n <= RISK_HITS_MAX);
        fuzz_check(risk_scan(set, mask, code, len, &b) == a.n && memcmp(&a, &b, sizeof(a)) == 0);
        for (size_t i = 0; i < a.n; i++) {
                fuzz_check(a.hits[i].class >= 0 && a.hits[i].class < _RISK_CLASS_MAX);
                fuzz_check(mask & (1u << a.hits[i].class));
                fuzz_check(a.hits[i].what && strlen(a.hits[i].what) > 0 && strlen(a.hits[i].what) < 48);
        }

        IsolationSettings s = {
                .policy = (IsolationPolicy) ((k >> 4) % _ISOLATION_POLICY_MAX),
                .classes = mask,
                .long_run_ms = (k & 0x40) ? 30000 : 0,
        };
        bool caller = k & 0x80;
        uint64_t timeout = (uint64_t) data[1] * 1000;

        r = isolation_choose(&s, set, NULL, code, len, timeout, caller, &c);
        if (s.policy == ISOLATION_POLICY_NEVER && caller) {
                fuzz_check(r == -EPERM);
                return 0;
        }
        fuzz_check(r == 0);
        fuzz_check(c.strong == (c.by_policy || c.by_caller || c.by_long_run || c.scan.n > 0));
        if (s.policy == ISOLATION_POLICY_NEVER)
                fuzz_check(!c.strong);
        if (caller || s.policy == ISOLATION_POLICY_ALWAYS)
                fuzz_check(c.strong);

        o = isolation_to_json(&c);
        if (!o)
                return 0;       /* out of memory */
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        fuzz_check(strlen(text) <= ISOLATION_JSON_MAX);
        json_object *back = json_tokener_parse(text);
        fuzz_check(back && json_object_object_get_ex(back, "tier", &tier) &&
                   json_object_object_get_ex(back, "reasons", &reasons));
        fuzz_check(streq(json_object_get_string(tier), c.strong ? "strong" : "standard"));
        fuzz_check(json_object_array_length(reasons) <= RISK_HITS_MAX + 3);
        fuzz_check(c.strong || json_object_array_length(reasons) == 0);
        json_object_put(back);
        json_object_put(o);
        return 0;
}
