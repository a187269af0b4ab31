/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "mime.h"
#include "util.h"

/* By extension, lower case, without the dot. The first match wins; keep it sorted by type family. */
static const struct {
        const char *ext;
        const char *type;
} ext_table[] = {
        /* text */
        { "txt",     "text/plain" },
        { "log",     "text/plain" },
        { "out",     "text/plain" },
        { "md",      "text/markdown" },
        { "csv",     "text/csv" },
        { "tsv",     "text/tab-separated-values" },
        { "html",    "text/html" },
        { "htm",     "text/html" },
        { "css",     "text/css" },
        { "js",      "text/javascript" },
        { "mjs",     "text/javascript" },
        { "py",      "text/x-python" },
        { "c",       "text/x-c" },
        { "h",       "text/x-c" },
        { "cpp",     "text/x-c++" },
        { "rs",      "text/x-rust" },
        { "go",      "text/x-go" },
        { "java",    "text/x-java" },
        { "sh",      "application/x-sh" },
        /* structured data */
        { "json",    "application/json" },
        { "jsonl",   "application/x-ndjson" },
        { "ndjson",  "application/x-ndjson" },
        { "geojson", "application/geo+json" },
        { "ipynb",   "application/x-ipynb+json" },
        { "xml",     "application/xml" },
        { "yaml",    "application/yaml" },
        { "yml",     "application/yaml" },
        { "toml",    "application/toml" },
        { "parquet", "application/vnd.apache.parquet" },
        { "sqlite",  "application/vnd.sqlite3" },
        { "db",      "application/vnd.sqlite3" },
        { "wasm",    "application/wasm" },
        /* documents */
        { "pdf",     "application/pdf" },
        /* images */
        { "png",     "image/png" },
        { "jpg",     "image/jpeg" },
        { "jpeg",    "image/jpeg" },
        { "gif",     "image/gif" },
        { "webp",    "image/webp" },
        { "bmp",     "image/bmp" },
        { "tif",     "image/tiff" },
        { "tiff",    "image/tiff" },
        { "ico",     "image/vnd.microsoft.icon" },
        { "svg",     "image/svg+xml" },
        /* audio, video */
        { "mp3",     "audio/mpeg" },
        { "wav",     "audio/wav" },
        { "ogg",     "audio/ogg" },
        { "flac",    "audio/flac" },
        { "mp4",     "video/mp4" },
        { "webm",    "video/webm" },
        /* archives */
        { "zip",     "application/zip" },
        { "gz",      "application/gzip" },
        { "tgz",     "application/gzip" },
        { "tar",     "application/x-tar" },
        { "bz2",     "application/x-bzip2" },
        { "xz",      "application/x-xz" },
        { "zst",     "application/zstd" },
        { "7z",      "application/x-7z-compressed" },
};

/* By leading bytes, only when the extension is missing or unknown. */
static const struct {
        const char *magic;
        size_t len;
        const char *type;
} magic_table[] = {
        { "\x89PNG\r\n\x1a\n", 8, "image/png" },
        { "\xff\xd8\xff",      3, "image/jpeg" },
        { "GIF87a",            6, "image/gif" },
        { "GIF89a",            6, "image/gif" },
        { "%PDF-",             5, "application/pdf" },
        { "PK\x03\x04",        4, "application/zip" },
        { "PK\x05\x06",        4, "application/zip" },   /* an empty archive */
};

/* ASCII only: strcasecmp() follows the locale (a Turkish 'I' is not 'i'). */
static bool ascii_caseeq(const char *a, const char *b) {
        for (;; a++, b++) {
                char x = *a >= 'A' && *a <= 'Z' ? *a + ('a' - 'A') : *a;
                char y = *b >= 'A' && *b <= 'Z' ? *b + ('a' - 'A') : *b;
                if (x != y)
                        return false;
                if (x == '\0')
                        return true;
        }
}

static const char *extension_of(const char *path) {
        const char *base, *dot;

        base = strrchr(path, '/');
        base = base ? base + 1 : path;
        dot = strrchr(base, '.');
        if (!dot || dot == base || dot[1] == '\0')   /* "name", ".bashrc", "name." */
                return NULL;
        return dot + 1;
}

const char *mime_type_guess(const char *path, const uint8_t *head, size_t head_len) {
        const char *ext = path ? extension_of(path) : NULL;

        if (ext)
                for (size_t i = 0; i < ELEMENTSOF(ext_table); i++)
                        if (ascii_caseeq(ext, ext_table[i].ext))
                                return ext_table[i].type;

        if (head)
                for (size_t i = 0; i < ELEMENTSOF(magic_table); i++)
                        if (head_len >= magic_table[i].len &&
                            memcmp(head, magic_table[i].magic, magic_table[i].len) == 0)
                                return magic_table[i].type;

        return MIME_DEFAULT;
}
