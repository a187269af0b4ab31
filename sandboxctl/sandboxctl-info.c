/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* languages, health, nodes */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandboxctl.h"
#include "sandboxctl-http.h"
#include "sandboxctl-info.h"
#include "sandboxctl-json.h"
#include "sandboxctl-table.h"
#include "sandboxctl-util.h"

typedef struct CtlLanguage {
        CtlString name, source, version;
        bool compiled, available;
        char *aliases; /* comma-separated, owned */
} CtlLanguage;

static void language_array_free(CtlLanguage *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i].aliases);
        free(l);
}

static int language_parse(json_object *j, CtlLanguage *ret) {
        static const CtlField fields[] = {
                { "name", FIELD_STRING, offsetof(CtlLanguage, name), true },
                { "source", FIELD_STRING, offsetof(CtlLanguage, source), false },
                { "compiled", FIELD_BOOLEAN, offsetof(CtlLanguage, compiled), false },
                { "available", FIELD_BOOLEAN, offsetof(CtlLanguage, available), false },
                { "version", FIELD_STRING, offsetof(CtlLanguage, version), false },
        };
        json_object *aliases = NULL;
        CtlLanguage l = {};
        size_t n, len = 0;
        int r;

        r = json_dispatch(j, "a language", fields, ELEMENTSOF(fields), &l);
        if (r < 0)
                return r;

        if (json_object_object_get_ex(j, "aliases", &aliases) && aliases) {
                if (!json_object_is_type(aliases, json_type_array))
                        return log_error_errno(-EBADMSG,
                                               "Malformed answer from sandboxd: 'aliases' is not an array.");
                n = json_object_array_length(aliases);
                for (size_t i = 0; i < n; i++) {
                        json_object *a = json_object_array_get_idx(aliases, i);

                        if (!a || !json_object_is_type(a, json_type_string))
                                return log_error_errno(-EBADMSG, "Malformed answer from sandboxd: "
                                                       "an alias is not a string.");
                        len += (size_t) json_object_get_string_len(a) + 1;
                }
                l.aliases = calloc(1, len + 1);
                if (!l.aliases)
                        return log_oom();
                for (size_t i = 0; i < n; i++) {
                        if (i > 0)
                                strcat(l.aliases, ",");
                        strcat(l.aliases, json_object_get_string(json_object_array_get_idx(aliases, i)));
                }
        }

        *ret = l;
        return 0;
}

int verb_languages(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        json_object *list = NULL;
        CtlLanguage *languages = NULL;
        size_t n = 0, w_name = 4, w_aliases = 7, w_source = 6;
        int r;

        r = http_call_ok("GET", "/v1/languages", NULL, false, false, &answer);
        if (r != 0)
                return r;

        if (!json_object_is_type(answer, json_type_object) ||
            !json_object_object_get_ex(answer, "languages", &list) || !list ||
            !json_object_is_type(list, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: no 'languages' array.");
                return EX_UNAVAILABLE;
        }

        /* Check all of it before printing anything, also with --json. */
        n = json_object_array_length(list);
        languages = calloc(MAX(n, (size_t) 1), sizeof(CtlLanguage));
        if (!languages) {
                (void) log_oom();
                return EX_OSERR;
        }
        for (size_t i = 0; i < n; i++) {
                r = language_parse(json_object_array_get_idx(list, i), languages + i);
                if (r < 0) {
                        language_array_free(languages, n);
                        return exit_status_for(r, EX_UNAVAILABLE);
                }
                w_name = MAX(w_name, languages[i].name.len);
                w_aliases = MAX(w_aliases, strlen(strempty(languages[i].aliases)));
                w_source = MAX(w_source, languages[i].source.len);
        }

        if (arg_json)
                r = print_json(answer);
        else {
                printf("%-*s %-*s %-*s %-8s %-9s %s\n", (int) w_name, "NAME", (int) w_aliases, "ALIASES",
                       (int) w_source, "SOURCE", "COMPILED", "AVAILABLE", "VERSION");
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *v = NULL;

                        /* The daemon's text of a runtime's output: shown without control characters. */
                        if (languages[i].version.s && !(v = strdup(languages[i].version.s)))
                                return log_oom();
                        for (char *c = v; c && *c; c++)
                                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                                        *c = ' ';
                        printf("%-*s %-*s %-*s %-8s %-9s %s\n", (int) w_name, languages[i].name.s, (int) w_aliases,
                               strempty(languages[i].aliases), (int) w_source, strempty(languages[i].source.s),
                               languages[i].compiled ? "yes" : "no", languages[i].available ? "yes" : "no",
                               v ?: "-");
                }
                r = flush_stdout();
        }
        language_array_free(languages, n);
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;
}

int health_fetch(CtlHealth *ret, json_object **ret_answer) {
        static const CtlField fields[] = {
                { "status", FIELD_STRING, offsetof(CtlHealth, status), true },
                { "version", FIELD_STRING, offsetof(CtlHealth, version), false },
                { "running", FIELD_INTEGER, offsetof(CtlHealth, running), false },
                { "queued", FIELD_INTEGER, offsetof(CtlHealth, queued), false },
                { "slots", FIELD_INTEGER, offsetof(CtlHealth, slots), false },
                { "queue_max", FIELD_INTEGER, offsetof(CtlHealth, queue_max), false },
                { "finished", FIELD_INTEGER, offsetof(CtlHealth, finished), false },
        };
        int r;

        *ret = (CtlHealth) {};
        r = http_call_ok("GET", "/v1/health", NULL, false, false, ret_answer);
        if (r != 0)
                return r;
        if (json_dispatch(*ret_answer, "the health answer", fields, ELEMENTSOF(fields), ret) < 0)
                return EX_UNAVAILABLE;
        return 0;
}

int verb_health(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *answer = NULL;
        CtlHealth h;
        int r;

        r = health_fetch(&h, &answer);
        if (r != 0)
                return r;

        if (arg_json)
                r = print_json(answer);
        else {
                printf("%7s: ", "Status");
                fputs_escaped(stdout, h.status.s, h.status.len, false);
                fputc('\n', stdout);
                if (h.version.s) {
                        printf("%7s: ", "Version");
                        fputs_escaped(stdout, h.version.s, h.version.len, false);
                        fputc('\n', stdout);
                }
                if (h.running.set) {
                        printf("%7s: %" PRIi64, "Running", h.running.value);
                        if (h.slots.set)
                                printf(" of %" PRIi64 " slots", h.slots.value);
                        fputc('\n', stdout);
                }
                if (h.queued.set) {
                        printf("%7s: %" PRIi64, "Queued", h.queued.value);
                        if (h.queue_max.set)
                                printf(" of at most %" PRIi64, h.queue_max.value);
                        fputc('\n', stdout);
                }
                r = flush_stdout();
        }
        if (r < 0)
                return EX_OSERR;

        /* Usable as a probe: "sandboxctl health && ..." */
        return streq(h.status.s, "ok") ? EXIT_SUCCESS : EX_UNAVAILABLE;
}

/* One row of "nodes" in GET /v1/health. */
typedef struct CtlNode {
        CtlString name, lease_expires_at;
        CtlInteger epoch, slots, running;
        bool alive;
} CtlNode;

enum {
        NODE_COLUMN_NAME,
        NODE_COLUMN_EPOCH,
        NODE_COLUMN_STATE,
        NODE_COLUMN_RUNNING,
        NODE_COLUMN_LEASE,
        _NODE_COLUMN_MAX,
};

int verb_nodes(char **args, size_t n_args) {
        static const CtlField fields[] = {
                { "name", FIELD_STRING, offsetof(CtlNode, name), true },
                { "epoch", FIELD_INTEGER, offsetof(CtlNode, epoch), true },
                { "alive", FIELD_BOOLEAN, offsetof(CtlNode, alive), true },
                { "slots", FIELD_INTEGER, offsetof(CtlNode, slots), false },
                { "running", FIELD_INTEGER, offsetof(CtlNode, running), false },
                { "lease_expires_at", FIELD_STRING, offsetof(CtlNode, lease_expires_at), false },
        };
        static const CtlColumn columns[_NODE_COLUMN_MAX] = {
                [NODE_COLUMN_NAME] = { "NODE", false },
                [NODE_COLUMN_EPOCH] = { "EPOCH", true },
                [NODE_COLUMN_STATE] = { "STATE", false },
                [NODE_COLUMN_RUNNING] = { "RUNNING", true },
                [NODE_COLUMN_LEASE] = { "LEASE EXPIRES", false },
        };
        _cleanup_(json_object_putp) json_object *answer = NULL;
        _cleanup_(table_done) CtlTable t = {};
        _cleanup_free_ CtlNode *nodes = NULL;
        json_object *list = NULL;
        CtlHealth h;
        size_t n;
        int r;

        r = health_fetch(&h, &answer);
        if (r != 0)
                return r;
        /* A daemon from before the node registry has no "nodes": say so rather than list none. */
        if (!json_object_object_get_ex(answer, "nodes", &list) || !list ||
            !json_object_is_type(list, json_type_array)) {
                (void) log_error_errno(-EBADMSG, "Malformed answer from sandboxd: no 'nodes' array (a sandboxd "
                                       "without the node registry?).");
                return EX_UNAVAILABLE;
        }

        /* Check all of it before printing anything, also with --json. */
        n = json_object_array_length(list);
        nodes = calloc(MAX(n, (size_t) 1), sizeof(CtlNode));
        if (!nodes) {
                (void) log_oom();
                return EX_OSERR;
        }
        for (size_t i = 0; i < n; i++)
                if (json_dispatch(json_object_array_get_idx(list, i), "a node", fields, ELEMENTSOF(fields),
                                  nodes + i) < 0)
                        return EX_UNAVAILABLE;

        if (arg_json)
                return print_json(answer) < 0 ? EX_OSERR : EXIT_SUCCESS;

        r = table_init(&t, columns, _NODE_COLUMN_MAX, n);
        if (r < 0)
                return EX_OSERR;
        for (size_t i = 0; i < n; i++) {
                const CtlNode *x = nodes + i;
                char **row = table_row(&t, i);

                row[NODE_COLUMN_NAME] = cell_string(&x->name);
                row[NODE_COLUMN_EPOCH] = cell_printf("%" PRIi64, x->epoch.value);
                row[NODE_COLUMN_STATE] = strdup(x->alive ? "alive" : "expired");
                if (x->running.set && x->slots.set)
                        row[NODE_COLUMN_RUNNING] = cell_printf("%" PRIi64 "/%" PRIi64, x->running.value,
                                                               x->slots.value);
                else
                        row[NODE_COLUMN_RUNNING] = strdup("-");
                row[NODE_COLUMN_LEASE] = cell_timestamp(&x->lease_expires_at);
        }
        r = table_print(&t);
        if (r < 0)
                return EX_OSERR;
        if (n > 0)
                fputc('\n', stdout);
        printf("%zu node%s listed.\n", n, n == 1 ? "" : "s");
        return flush_stdout() < 0 ? EX_OSERR : EXIT_SUCCESS;
}
