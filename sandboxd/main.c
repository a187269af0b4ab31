/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>

#include "log.h"
#include "manager.h"
#include "model/conf.h"
#include "model/language.h"
#include "strv.h"
#include "net/net-policy.h"

static void help(void) {
        printf("sandboxd [OPTIONS...]\n\n"
               "Runs untrusted code in hardened transient systemd units.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show the version\n"
               "     --config-dir=DIR   Read DIR/sandboxd.conf and DIR/sandboxd.conf.d/ (default %s/sandboxd)\n"
               "     --languages-dir=DIR  Read the vendor language files from DIR (default %s);\n"
               "                        CONFIG-DIR/languages/ overrides them\n"
               "     --helper=PATH      Use PATH as sandbox-exec (overrides Helper=)\n"
               "     --net-worker=PATH  Use PATH as the network worker sandboxd-net (default %s)\n"
               "     --proxy=PATH       Use PATH as the egress proxy sandboxd-proxy (default %s)\n"
               "     --environments-dir=DIR\n"
               "                        Read the environments from DIR (overrides EnvironmentsDirectory=)\n"
               "     --check-config     Load and validate the configuration, then exit\n",
               SYSCONFDIR, SANDBOXD_LANGUAGES_DIR, SANDBOXD_NET_PATH, SANDBOXD_PROXY_PATH);
}

int main(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_CONFIG_DIR, ARG_HELPER, ARG_NET_WORKER, ARG_PROXY, ARG_ENVIRONMENTS_DIR, ARG_CHECK,
               ARG_LANGUAGES_DIR };
        static const struct option options[] = {
                { "help",         no_argument,       NULL, 'h' },
                { "version",      no_argument,       NULL, ARG_VERSION },
                { "config-dir",   required_argument, NULL, ARG_CONFIG_DIR },
                { "helper",       required_argument, NULL, ARG_HELPER },
                { "languages-dir", required_argument, NULL, ARG_LANGUAGES_DIR },
                { "net-worker",   required_argument, NULL, ARG_NET_WORKER },
                { "proxy",        required_argument, NULL, ARG_PROXY },
                { "environments-dir", required_argument, NULL, ARG_ENVIRONMENTS_DIR },
                { "check-config", no_argument,       NULL, ARG_CHECK },
                {}
        };
        _cleanup_(manager_freep) Manager *m = NULL;
        const char *config_dir = SYSCONFDIR "/sandboxd", *helper = NULL, *net_worker = NULL, *proxy = NULL,
                   *languages_dir = SANDBOXD_LANGUAGES_DIR, *environments_dir = NULL;
        bool check = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        puts("sandboxd " PACKAGE_VERSION);
                        return 0;
                case ARG_CONFIG_DIR:
                        config_dir = optarg;
                        break;
                case ARG_LANGUAGES_DIR:
                        languages_dir = optarg;
                        break;
                case ARG_HELPER:
                        helper = optarg;
                        break;
                case ARG_NET_WORKER:
                        net_worker = optarg;
                        break;
                case ARG_PROXY:
                        proxy = optarg;
                        break;
                case ARG_ENVIRONMENTS_DIR:
                        if (optarg[0] != '/') {
                                log_error("--environments-dir= must be an absolute path.");
                                return 2;
                        }
                        environments_dir = optarg;
                        break;
                case ARG_CHECK:
                        check = true;
                        break;
                default:
                        return 2;
                }
        if (optind < argc) {
                log_error("This program takes no arguments.");
                return 2;
        }

        if (check) {
                _cleanup_(config_freep) Config *cfg = config_new();
                _cleanup_free_ char *error = NULL;

                if (!cfg)
                        return 1;
                _cleanup_(net_policy_freep) NetPolicy *np = NULL;

                r = config_load(cfg, config_dir, &error);
                if (r >= 0)
                        r = net_policy_load(cfg, &np, &error);
                if (r < 0) {
                        fprintf(stderr, "%s\n", error ?: "out of memory");
                        return 1;
                }
                /* The language files: each refused one is an error here, as it would be logged. */
                {
                        _cleanup_free_ char *etc = NULL;
                        _cleanup_(language_table_unrefp) LanguageTable *t = NULL;
                        _cleanup_strv_free_ char **errors = NULL;

                        if (asprintf(&etc, "%s/languages", config_dir) < 0)
                                return 1;
                        const char *dirs[] = { languages_dir, etc };
                        r = language_table_load(dirs, ELEMENTSOF(dirs), &t, &errors);
                        if (r < 0) {
                                fprintf(stderr, "Cannot load the language definitions: %s\n", strerror(-r));
                                return 1;
                        }
                        for (char **e = errors; e && *e; e++)
                                fprintf(stderr, "%s\n", *e);
                        if (errors)
                                return 1;
                        printf("Configuration in %s is valid; %zu languages defined in %s and %s.\n", config_dir,
                               language_table_count(t), languages_dir, etc);
                }
                return 0;
        }

        r = manager_new(config_dir, languages_dir, helper, net_worker, proxy, environments_dir, &m);
        if (r < 0)
                return 1;
        /* Non-zero also when the loop ended because the bus went away: systemd restarts us. */
        r = manager_run(m);
        return r == 0 ? 0 : 1;
}
