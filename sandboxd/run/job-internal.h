/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the files of the job (job.c, job-control.c, job-artifacts.c) share; nobody else includes it. */

#include "job.h"

#define DRAIN_TIMEOUT_USEC (2 * USEC_PER_SEC)
/* Artifact paths below output/: bytes of one path, directory levels. */
#define ARTIFACT_PATH_MAX 1024
#define ARTIFACT_NESTING_MAX 16

/* job.c */
void job_maybe_finalize(Job *j);
/* The control channel reached EOF: the report (and the output) are in. */
void job_report_complete(Job *j);
bool path_startswith_dir(const char *path, const char *dir);

/* job-control.c */
int on_control(sd_event_source *s, int fd, uint32_t revents, void *userdata);
int build_control_payload(Job *j);
void parse_report(Job *j, HelperReport *report);

/* job-artifacts.c */
/* Does the unit's cgroup hold a process of the program (any non-root process)? */
bool unit_cgroup_has_program(Job *j);
void job_collect_artifacts(Job *j);
/* Is a process still in the unit's cgroup (one that survived the final SIGKILL)? */
bool job_unit_cgroup_populated(Job *j);
