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

/* Shutdown (job_quiesce()): at a clean point now? Then quiet from here (events->quiet if due). */
void job_try_quiet(Job *j);

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

/* job.c: start the execution's service unit (the workspace and, with network, the proxy are ready). */
void job_start_service(Job *j);
void job_fail_internal(Job *j, const char *why);
/* The end before the unit exists: final now (after the proxy, if any). */
void job_end_before_unit(Job *j);
/* Finish now (called again once the proxy is done). */
void job_finalize(Job *j);

/* job-network.c */
/* Start the proxy's socket (with its service as an aux unit), then the service, then
 * job_start_service(). Failures end the job with an internal error. */
void job_network_start(Job *j);
/* Watch the proxy units of an adopted job (a restart): they are stopped when it ends; the log of
 * what the proxy did after the restart is lost. 0 or -ENOMEM. */
int job_network_adopt(Job *j);
/* Before the job is final: stop the proxy units and read the pipe to EOF (at most 3 s). true: still
 * waiting, job_finalize() is called again when done. */
bool job_network_finish(Job *j);
/* Shutdown: no more reads of the proxy's pipe, a line begun read to its end first. */
void job_network_quiesce(Job *j);
/* Free everything of the proxy (the units are stopped first if that did not happen). */
void job_network_release(Job *j);
