/* SPDX-License-Identifier: GPL-2.0-or-later */
/* autophase-internal.h — the pure parts of the pipeline driver, for autophase.c and its tests */
#ifndef AISB_PIPELINE_AUTOPHASE_INTERNAL_H
#define AISB_PIPELINE_AUTOPHASE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#define AUTOPHASE_DIR ".agents/phases"
#define AUTOPHASE_VALIDATE ".agents/validate.sh"
#define AUTOPHASE_LAUNCHER ".agents/launcher"
#define AUTOPHASE_TRAILER "Aisb-Phase"
#define AUTOPHASE_MAX_PHASES 1000
#define AUTOPHASE_MAX_NAME 128
#define AUTOPHASE_MAX_FILE (1u << 20)  /* a phase file, validate.sh, the launcher file */
#define AUTOPHASE_MAX_HISTORY 10000    /* commits scanned for delivered phases */
#define AUTOPHASE_MAX_WORDS 64         /* words of a launcher command */

/**
 * autophase_phase_name() - whether @file is a phase file name, and its phase name
 * @file: an entry of .agents/phases/
 * @name: receives the name without ".md" (at least AUTOPHASE_MAX_NAME + 1 bytes)
 *
 * A phase file is NN-name.md: one or more digits, '-', then letters, digits, '.', '_' or '-'
 * (so the name is safe in argv, messages and a commit trailer). Pure.
 */
bool autophase_phase_name(const char *file, char *name);

/**
 * autophase_split_launcher() - the words of a launcher command
 * @cmd: the command line: words separated by blanks; no quoting, no expansion, no shell
 * @out: receives a NULL-terminated vector (strv_free())
 *
 * Pure. Return: 0; -EINVAL for an empty command or a control character; -E2BIG past
 * AUTOPHASE_MAX_WORDS; -ENOMEM.
 */
int autophase_split_launcher(const char *cmd, char ***out);

/* Whether a launcher's program is one of aisb's harnesses (pi, codex, claude): it then runs as
 * the run's harness, with its config bridged, instead of as a `--` command. Pure. */
bool autophase_is_harness(const char *prog);

/**
 * autophase_title() - a commit subject for a phase: "NAME: TITLE" from the file's first
 *                     "# " heading (control characters dropped, at most 72 bytes of title), or
 *                     "NAME" without one
 * @name: the phase name
 * @text: the phase file
 * @len: its length
 *
 * Pure. Return: a malloc'd subject, or NULL on ENOMEM.
 */
char *autophase_title(const char *name, const char *text, size_t len);

/**
 * autophase_parse_history() - which phases the history holds
 * @log: `git log --format=%H%x09%(trailers:key=Aisb-Phase,valueonly,separator=%x2C)` output,
 *       newest first
 * @names: the phase names to look for
 * @n: how many
 * @commits: receives, per name, the newest commit id delivering it (malloc'd) or NULL
 *
 * Pure. Return: 0 or -ENOMEM.
 */
int autophase_parse_history(const char *log, char *const *names, size_t n, char **commits);

/**
 * autophase_preview_word() - a run flag as previews show it
 * @prev: the word before @arg, or NULL
 * @arg: the word
 *
 * The value of `--env NAME=VALUE` (and `--env=NAME=VALUE`) becomes `<redacted>`, credentials of a
 * URL are hidden (gitrun_redact()): a preview names what is passed, never a value (issue 23).
 * Pure. Return: malloc'd, or NULL on ENOMEM.
 */
char *autophase_preview_word(const char *prev, const char *arg);

#define AUTOPHASE_MAX_FEEDBACK (8u << 10) /* validate.sh's output kept for a fix prompt (its tail) */

/**
 * autophase_prompt() - the prompt of one agent run, the seed's first_prompt / fix_prompt
 * @phase: the phase name
 * @rel: the phase file's path from the top of the work tree
 * @text: the phase file (as it was before the unit), @len its length
 * @round: 0 for the first prompt, else the fix round (1..@rounds)
 * @rounds: how many fix rounds there are
 * @status: the exit status of the failed validation (fix rounds)
 * @out: the tail of its output (fix rounds), @out_len its length; control bytes but '\n' and
 *       '\t' are replaced
 *
 * The phase's task, then what the agent cannot do in the sandbox (push, reach the network
 * beyond its allowlist, edit the gate, commit: the driver commits); a fix prompt starts with the
 * failure and ends with validate.sh's output. Pure. Return: malloc'd, NULL on ENOMEM.
 */
char *autophase_prompt(const char *phase, const char *rel, const char *text, size_t len, unsigned round,
		       unsigned rounds, int status, const char *out, size_t out_len);

/* The rc files a host launcher is looked up in, in order (the seed's): every file of
 * ~/.bashrc.d/ in name order, then these, relative to the home. */
#define AUTOPHASE_RC_DIR ".bashrc.d"
#define AUTOPHASE_RC_FILES { ".bashrc", ".bash_aliases", ".profile" }
#define AUTOPHASE_DEFAULT_PI_CMD "sandbox-pi"
#define AUTOPHASE_PROBE_SECONDS 10     /* the rc probe's bound */
#define AUTOPHASE_PROBE_MAX (64u << 10) /* what the probe may print */

/* Whether @name can be a launcher's name (a function, alias or PATH program): letters, digits
 * and "_.:+-", not starting with '-'; such a name is safe in the unit's bash script. Pure. */
bool autophase_launcher_name_ok(const char *name);

/* Whether a captured function definition forwards its arguments ("$@", $*, ${@...}): one that
 * does not (ends at `--env NAME`, the shape written for typing by hand) would run the image's
 * default harness with no prompt. Pure. */
bool autophase_forwards_args(const char *definition);

#endif
