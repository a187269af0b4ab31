/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* key new [NAME]: 32 bytes from getrandom(), as 43 base64url characters (256 bits, well above the
 * 128 sandboxd wants of a key: sandboxd/api/auth.h), and the line for the key file, "NAME
 * sha256:HEX", which holds only the hash. Nothing is written anywhere: the key goes to whoever runs
 * this, the line to the administrator's key file. Output, on stdout:
 *
 *     KEY
 *     NAME sha256:HEX
 *
 * or with --json {"name", "key", "hash", "line"}. */

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "key-name.h"
#include "sandboxctl.h"
#include "sandboxctl-json.h"
#include "sandboxctl-key.h"
#include "sandboxctl-util.h"

#define KEY_BYTES 32

static int random_bytes(uint8_t *p, size_t n) {
        size_t got = 0;

        while (got < n) {
                ssize_t k = getrandom(p + got, n - got, 0);

                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k > 0)
                        got += (size_t) k;
        }
        return 0;
}

int verb_key(char **args, size_t n_args) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *key = NULL, *line = NULL;
        uint8_t raw[KEY_BYTES], digest[32];
        char hash[sizeof("sha256:") + 64], default_name[sizeof("key-") + 8];
        const char *name;
        unsigned digest_len = 0;
        int r;

        if (!streq(args[0], "new")) {
                (void) log_error_errno(-EINVAL, "Use 'key new [NAME]'.");
                return EX_USAGE;
        }
        if (n_args > 1 && !key_name_is_valid(args[1])) {
                (void) log_error_errno(-EINVAL, "Invalid key name '%s': use 1 to %d of A-Z a-z 0-9 _ . -",
                                       args[1], KEY_NAME_MAX);
                return EX_USAGE;
        }

        r = random_bytes(raw, sizeof(raw));
        if (r < 0) {
                (void) log_error_errno(r, "Cannot get random bytes: %m");
                return EX_OSERR;
        }
        key = base64url_encode(raw, sizeof(raw));
        OPENSSL_cleanse(raw, sizeof(raw));
        if (!key) {
                (void) log_oom();
                return EX_OSERR;
        }
        /* The hash of the key's text, as the daemon hashes the bearer token it is shown. */
        if (EVP_Digest(key, strlen(key), digest, &digest_len, EVP_sha256(), NULL) != 1 || digest_len != 32) {
                OPENSSL_cleanse(key, strlen(key));
                (void) log_error_errno(-EIO, "Cannot compute SHA-256.");
                return EX_SOFTWARE;
        }
        strcpy(hash, "sha256:");
        hexmem(digest, sizeof(digest), hash + strlen("sha256:"));
        /* Without a name: one from the hash, unique in any file of keys made this way. */
        snprintf(default_name, sizeof(default_name), "key-%.8s", hash + strlen("sha256:"));
        name = n_args > 1 ? args[1] : default_name;
        if (asprintf(&line, "%s %s", name, hash) < 0) {
                line = NULL;
                OPENSSL_cleanse(key, strlen(key));
                (void) log_oom();
                return EX_OSERR;
        }

        if (arg_json) {
                o = json_object_new_object();
                if (!o || json_add(o, "name", json_object_new_string(name)) < 0 ||
                    json_add(o, "key", json_object_new_string(key)) < 0 ||
                    json_add(o, "hash", json_object_new_string(hash)) < 0 ||
                    json_add(o, "line", json_object_new_string(line)) < 0)
                        r = log_oom();
                else
                        r = print_json(o);
        } else {
                printf("%s\n%s\n", key, line);
                r = flush_stdout();
        }
        OPENSSL_cleanse(key, strlen(key));
        return r < 0 ? EX_OSERR : EXIT_SUCCESS;
}
