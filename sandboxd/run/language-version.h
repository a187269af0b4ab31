/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The runtimes' versions for GET /v1/languages: each row's Version= command, run on the host in the
 * background when a table is loaded, as nobody (setpriv: no groups, no new privileges, no
 * capabilities), with stdin /dev/null, stdout and stderr into a pipe read up to
 * LANGUAGE_VERSION_OUTPUT_MAX bytes, killed after LANGUAGE_VERSION_TIMEOUT_USEC. The first line it
 * printed becomes the row's version (language_set_version()); a probe that fails leaves it NULL. */

#include <systemd/sd-event.h>

#include "model/language.h"

#define LANGUAGE_VERSION_OUTPUT_MAX 4096U
#define LANGUAGE_VERSION_TIMEOUT_USEC (10U * 1000U * 1000U)
#define LANGUAGE_VERSION_SETPRIV "/usr/bin/setpriv"

typedef struct LanguageVersions LanguageVersions;

int language_versions_new(sd_event *event, LanguageVersions **ret);
/* Kills and reaps the probes still running. */
LanguageVersions *language_versions_free(LanguageVersions *v);
/* Start a probe for each row of t with Version= (t is referenced while one runs). */
void language_versions_probe(LanguageVersions *v, LanguageTable *t);
/* Probes still running (for tests and the stop). */
unsigned language_versions_running(const LanguageVersions *v);
