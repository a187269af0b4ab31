/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/mime.h"
#include "util.h"

typedef struct MimeRow {
        const char *name;
        const char *path;
        const char *head;               /* NULL: no head given */
        size_t head_len;
        const char *want;
} MimeRow;

#define NAME(name, path, want) { name, path, NULL, 0, want }
/* head_len from the literal, so embedded NULs count */
#define HEAD(name, path, head, want) { name, path, head, sizeof(head) - 1, want }

static const MimeRow rows[] = {
        NAME("csv", "result.csv", "text/csv"),
        NAME("text", "notes.txt", "text/plain"),
        NAME("json", "data.json", "application/json"),
        NAME("png by name", "plot.png", "image/png"),
        NAME("jpeg", "photo.jpeg", "image/jpeg"),
        NAME("jpg", "photo.jpg", "image/jpeg"),
        NAME("pdf by name", "report.pdf", "application/pdf"),
        NAME("html is only a label", "index.html", "text/html"),
        NAME("svg", "figure.svg", "image/svg+xml"),
        NAME("upper case", "PLOT.PNG", "image/png"),
        NAME("mixed case", "Data.Json", "application/json"),
        NAME("in a directory", "figures/2025/plot.png", "image/png"),
        NAME("dot in the directory only", "v1.2/README", MIME_DEFAULT),
        NAME("last extension counts", "archive.tar.gz", "application/gzip"),
        NAME("tar", "archive.tar", "application/x-tar"),
        NAME("no extension", "Makefile", MIME_DEFAULT),
        NAME("dot file", ".bashrc", MIME_DEFAULT),
        NAME("dot file in a directory", "conf/.env", MIME_DEFAULT),
        NAME("trailing dot", "name.", MIME_DEFAULT),
        NAME("unknown extension", "model.weights", MIME_DEFAULT),
        NAME("extension longer than any", "x.pngpngpngpng", MIME_DEFAULT),
        NAME("prefix of an extension", "x.pn", MIME_DEFAULT),
        NAME("non-ASCII extension", "x.p\xc3\xb1g", MIME_DEFAULT),
        NAME("empty path", "", MIME_DEFAULT),
        NAME("NULL path", NULL, MIME_DEFAULT),

        HEAD("PNG magic", "plot", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "image/png"),
        HEAD("JPEG magic", "photo", "\xff\xd8\xff\xe0\0\x10JFIF", "image/jpeg"),
        HEAD("GIF87a", "anim", "GIF87a\x01\0", "image/gif"),
        HEAD("GIF89a", "anim", "GIF89a\x01\0", "image/gif"),
        HEAD("PDF magic", "report", "%PDF-1.7\n", "application/pdf"),
        HEAD("ZIP magic", "bundle", "PK\x03\x04\x14\0", "application/zip"),
        HEAD("empty ZIP", "bundle", "PK\x05\x06", "application/zip"),
        HEAD("magic with unknown extension", "plot.bin2", "\x89PNG\r\n\x1a\n", "image/png"),
        HEAD("known extension wins over magic", "fake.txt", "\x89PNG\r\n\x1a\n", "text/plain"),
        HEAD("csv holding PDF bytes stays csv", "x.csv", "%PDF-1.4", "text/csv"),
        HEAD("truncated PNG magic", "plot", "\x89PNG\r\n", MIME_DEFAULT),
        HEAD("truncated JPEG magic", "photo", "\xff\xd8", MIME_DEFAULT),
        HEAD("GIF other version", "anim", "GIF90a", MIME_DEFAULT),
        HEAD("PK but no local header", "bundle", "PK\x01\x02", MIME_DEFAULT),
        HEAD("text head is not sniffed", "README", "hello world\n", MIME_DEFAULT),
        HEAD("empty head", "README", "", MIME_DEFAULT),
};

static void test_rows(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const MimeRow *r = &rows[i];
                const char *got = mime_type_guess(r->path, (const uint8_t *) r->head, r->head_len);

                if (!got || strcmp(got, r->want) != 0) {
                        print_error("row '%s': got '%s', want '%s'\n", r->name, strna(got), r->want);
                        fail();
                }
        }
}

/* head_len is the bound, not the magic's length: a head that stops short never matches even when
 * the buffer behind it holds the rest. */
static void test_head_len_is_the_bound(_unused_ void **state) {
        static const uint8_t png[] = "\x89PNG\r\n\x1a\n";

        assert_string_equal(mime_type_guess("x", png, 8), "image/png");
        assert_string_equal(mime_type_guess("x", png, 7), MIME_DEFAULT);
        assert_string_equal(mime_type_guess("x", png, 0), MIME_DEFAULT);
        assert_string_equal(mime_type_guess("x", NULL, 8), MIME_DEFAULT);
}

/* No type carries parameters (see mime.h): the bytes were never checked against a charset. */
static void test_no_parameters(_unused_ void **state) {
        for (size_t i = 0; i < ELEMENTSOF(rows); i++)
                assert_null(strchr(mime_type_guess(rows[i].path, NULL, 0), ';'));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rows),
                cmocka_unit_test(test_head_len_is_the_bound),
                cmocka_unit_test(test_no_parameters),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
