/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "scoped-id.h"

#define SCOPED_ID_DOMAIN "sandboxd scoped id"

int scoped_id(char buf[static SCOPED_ID_MAX], const char *prefix, const char *owner, const char *name) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        size_t np;
        int ok;

        if (!prefix || !name)
                return -EINVAL;
        np = strlen(prefix);
        if (np == 0 || np > SCOPED_ID_PREFIX_MAX || strspn(prefix, "abcdefghijklmnopqrstuvwxyz") != np)
                return -EINVAL;
        if (!owner)
                owner = "";

        {
                EVP_MD_CTX *ctx = EVP_MD_CTX_new();

                if (!ctx)
                        return -ENOMEM;
                /* Each part with its NUL: ("a", "b:c") and ("a:b", "c") are different inputs. */
                ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
                     EVP_DigestUpdate(ctx, SCOPED_ID_DOMAIN, sizeof(SCOPED_ID_DOMAIN)) &&
                     EVP_DigestUpdate(ctx, prefix, np + 1) &&
                     EVP_DigestUpdate(ctx, owner, strlen(owner) + 1) &&
                     EVP_DigestUpdate(ctx, name, strlen(name) + 1) &&
                     EVP_DigestFinal_ex(ctx, md, &len);
                EVP_MD_CTX_free(ctx);
        }
        if (!ok || len < SCOPED_ID_HEX / 2)
                return -EIO;

        memcpy(buf, prefix, np);
        buf[np] = '_';
        for (size_t i = 0; i < SCOPED_ID_HEX / 2; i++)
                snprintf(buf + np + 1 + 2 * i, 3, "%02x", md[i]);
        return 0;
}
