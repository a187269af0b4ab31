/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "key-name.h"
#include "secret-file.h"

#define HASH_PREFIX "sha256:"
#define HASH_LEN 32

typedef struct AuthEntry {
        char name[AUTH_NAME_MAX + 1];
        uint8_t hash[HASH_LEN];
        bool admin;
        unsigned line;
} AuthEntry;

struct AuthTable {
        AuthEntry *entries;
        size_t n;
};

AuthTable *auth_table_free(AuthTable *t) {
        if (!t)
                return NULL;
        /* Hashes are not secrets, but there is no reason to leave them in freed memory either. */
        if (t->entries)
                OPENSSL_cleanse(t->entries, t->n * sizeof(AuthEntry));
        free(t->entries);
        free(t);
        return NULL;
}

size_t auth_table_size(const AuthTable *t) {
        return t ? t->n : 0;
}



static int parse_hash(const char *s, uint8_t ret[static HASH_LEN]) {
        const char *hex = startswith(s, HASH_PREFIX);

        if (!hex || strlen(hex) != HASH_LEN * 2)
                return -EINVAL;
        return unhexmem(hex, HASH_LEN * 2, ret);
}

int auth_parse_text(const char *text, const char *filename, AuthTable **ret, char **ret_error) {
        _cleanup_(auth_table_freep) AuthTable *t = NULL;
        _cleanup_free_ char *copy = NULL;
        unsigned line = 0;

        copy = strdup(text);
        t = calloc(1, sizeof(AuthTable));
        if (!copy || !t)
                return -ENOMEM;

        /* Split by hand, as in conf.c: empty lines must count. */
        for (char *p = copy; p; ) {
                char *l = p, *save = NULL, *fields[4];
                size_t n_fields = 0;
                AuthEntry e = {};

                p = strchr(p, '\n');
                if (p)
                        *p++ = 0;
                line++;

                while (*l && isspace((unsigned char) *l))
                        l++;
                if (!*l || *l == '#')
                        continue;

                for (char *f = strtok_r(l, " \t\r\v\f", &save); f && n_fields < ELEMENTSOF(fields);
                     f = strtok_r(NULL, " \t\r\v\f", &save))
                        fields[n_fields++] = f;

                if (n_fields < 2 || n_fields > 3)
                        return error_set(ret_error, "%s:%u: expected 'NAME sha256:HASH [admin]'", filename, line);
                if (!key_name_is_valid(fields[0]))
                        return error_set(ret_error, "%s:%u: invalid key name '%.80s' (want [A-Za-z0-9_.-]{1,%d})",
                                         filename, line, fields[0], AUTH_NAME_MAX);
                /* The value itself is not echoed: it might be a plaintext key pasted by mistake. */
                if (parse_hash(fields[1], e.hash) < 0)
                        return error_set(ret_error,
                                         "%s:%u: key '%s': the hash must be 'sha256:' and 64 hex digits "
                                         "(printf %%s \"$KEY\" | sha256sum), never the key itself",
                                         filename, line, fields[0]);
                if (n_fields == 3) {
                        if (!streq(fields[2], "admin"))
                                return error_set(ret_error, "%s:%u: key '%s': unknown flag '%.32s' (only 'admin')",
                                                 filename, line, fields[0], fields[2]);
                        e.admin = true;
                }

                for (size_t i = 0; i < t->n; i++) {
                        if (streq(t->entries[i].name, fields[0]))
                                return error_set(ret_error, "%s:%u: key name '%s' already used at line %u",
                                                 filename, line, fields[0], t->entries[i].line);
                        /* Two names for one key would make its owner ambiguous. */
                        if (memcmp(t->entries[i].hash, e.hash, HASH_LEN) == 0)
                                return error_set(ret_error, "%s:%u: key '%s' has the same hash as '%s' (line %u)",
                                                 filename, line, fields[0], t->entries[i].name, t->entries[i].line);
                }
                if (t->n >= AUTH_KEYS_MAX)
                        return error_set(ret_error, "%s:%u: more than %d keys", filename, line, AUTH_KEYS_MAX);

                strcpy(e.name, fields[0]);
                e.line = line;
                AuthEntry *ne = reallocarray(t->entries, t->n + 1, sizeof(AuthEntry));
                if (!ne)
                        return -ENOMEM;
                t->entries = ne;
                t->entries[t->n++] = e;
        }

        *ret = TAKE_PTR(t);
        return 0;
}

int auth_load(const char *path, AuthTable **ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t n;

        /* Hashes of high-entropy keys cannot be reversed, but the file still says which keys exist
         * and which are admins, and whoever can write it (or replace it) can mint keys. Its group
         * may read it (0640 root:sandboxd). */
        fd = secret_file_open(path, geteuid(), SECRET_GROUP_READ, "API key file", &st, ret_error);
        if (fd < 0)
                return fd;
        if (st.st_size > AUTH_FILE_MAX) {
                (void) error_set(ret_error, "%s: larger than %d bytes", path, AUTH_FILE_MAX);
                return -EFBIG;
        }
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        n = loop_read(fd, buf, (size_t) st.st_size);
        if (n < 0) {
                (void) error_set(ret_error, "%s: cannot read: %s", path, strerror((int) -n));
                return (int) n;
        }
        buf[n] = 0;
        if (strlen(buf) != (size_t) n) {
                (void) error_set(ret_error, "%s: contains a NUL byte", path);
                return -EBADMSG;
        }
        return auth_parse_text(buf, path, ret, ret_error);
}

/* The alphabets a key may be drawn from, smallest first, and what one character of each is worth at
 * most, in thousandths of a bit. A key is credited with the smallest alphabet that holds all its
 * characters: "0123" could be decimal, so it is. Anything beyond base64's characters gets no more
 * credit than base64: the floor is a length, not a measure of randomness. */
static const struct {
        const char *chars;
        unsigned millibits;
} key_alphabets[] = {
        { "0123456789",                                                             3321 },  /* log2(10) */
        { "0123456789abcdefABCDEF",                                                 4000 },
        { "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=",    6000 },
        { NULL,                                                                     6000 },
};

size_t auth_key_min_length(const char *key, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(key_alphabets); i++) {
                const char *chars = key_alphabets[i].chars;
                bool fits = true;

                for (size_t j = 0; chars && fits && j < len; j++)
                        fits = key[j] != 0 && strchr(chars, key[j]);
                if (fits)
                        return (AUTH_KEY_BITS_MIN * 1000 + key_alphabets[i].millibits - 1) / key_alphabets[i].millibits;
        }
        return SIZE_MAX;        /* not reached: the last row takes everything */
}

int auth_check(const AuthTable *t, const char *bearer, const char **ret_name, bool *ret_admin) {
        uint8_t digest[HASH_LEN];
        unsigned digest_len = 0;
        size_t len, match = 0;

        if (!bearer)
                return -EINVAL;
        len = strnlen(bearer, AUTH_TOKEN_MAX + 1);
        if (len == 0)
                return -EINVAL;
        if (len > AUTH_TOKEN_MAX)
                return -E2BIG;

        if (EVP_Digest(bearer, len, digest, &digest_len, EVP_sha256(), NULL) != 1 || digest_len != HASH_LEN)
                return -EIO;

        /* Every entry is compared, and the matching index is selected with a mask instead of a branch
         * or an early exit: the time taken does not depend on which entry matched. Hashes are
         * unique (auth_parse_text refuses duplicates), so at most one matches. */
        for (size_t i = 0; i < auth_table_size(t); i++) {
                size_t eq = (size_t) (CRYPTO_memcmp(digest, t->entries[i].hash, HASH_LEN) == 0);

                match |= ((size_t) 0 - eq) & (i + 1);
        }
        OPENSSL_cleanse(digest, sizeof(digest));

        if (match == 0)
                return -EACCES;
        if (ret_name)
                *ret_name = t->entries[match - 1].name;
        if (ret_admin)
                *ret_admin = t->entries[match - 1].admin;
        /* Only now, for a key that matched: which keys exist is not revealed by the answer, and the
         * holder of a weak key learns that it must be replaced. */
        if (len < auth_key_min_length(bearer, len))
                return -EKEYREJECTED;
        return 0;
}

const char *auth_bearer_token(const char *header) {
        const char *p;

        if (!header || strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t'))
                return NULL;
        p = header + 6;
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}
