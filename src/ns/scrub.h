/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scrub.h — after a session, no value aisb passed in survives in the home or in aisb's state.
 *
 * aisb passes secrets into the sandbox by value (--env, --env-file, the bridged harness keys);
 * the harness may write them down where the next session reads them (measured: codex 0.171 keeps
 * `declare -x KEY="<value>"` in ~/.codex/shell_snapshots/NAME.sh, 0644, after any interactive
 * session, and a later `aisb -- sh` in another project read it from the shared home). aisb knows
 * every value it passed, so after the workload is gone the supervisor scans what the session
 * changed: the files of the persistent home whose ctime is not older than the session's start
 * (the sandbox cannot set a ctime), and the whole session dir (egress log, a kept overlay upper,
 * the ephemeral home's bridged files) and the session's quarantine. Each occurrence is
 * overwritten in place by a mask of the same length ("REDACTEDREDA..."), so offsets and sizes
 * stay (JSON, TOML, shell, SQLite pages and length-prefixed records still parse: the key just no
 * longer works); a file that cannot be rewritten is removed; one that can be neither is named.
 * The report names the variables and the files, never a value.
 *
 * The walk never follows a symlink or crosses a mount, opens every name with O_NOFOLLOW below a
 * directory fd, reads only regular files, and is bounded (entries, depth, bytes): what it does
 * not reach is named as not checked, never judged clean.
 */
#ifndef AISB_NS_SCRUB_H
#define AISB_NS_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/plan.h"

/* Values shorter than this are not looked for: a short value ("1", "true", "prod") is in too many
 * files to be a secret's trace, and masking it would break them. */
#define SCRUB_MIN_LEN 8
#define SCRUB_MAX_ENTRIES 500000          /* directory entries looked at, per tree */
#define SCRUB_MAX_DEPTH 128
#define SCRUB_MAX_BYTES ((uint64_t)4 << 30) /* bytes of changed files read, per tree */
#define SCRUB_MAX_NEEDLES 64              /* bits of struct scrub_file.needles */

/* One value to look for; @names is the variables that carried it (", "-joined). @placeholder:
 * every variable that carried it holds a --key-via-gate placeholder, not a key: the report says
 * so. It is masked all the same (docs/agents.md, "Secrets after the session": it works with no
 * gate but this session's, which is gone, so nothing is lost by masking it; left in a shared
 * home it would be a stale key that a later harness sends and its endpoint refuses; and masking
 * it takes the same one pass, where the report shows the user where the harness writes its key,
 * which is where the real key would be without --key-via-gate). */
struct scrub_needle {
	const char *value;
	size_t len;
	bool placeholder;
	char names[256];
};

struct scrub_file {
	char *path;          /* relative to the tree's root */
	uint64_t needles;    /* bit i: needle i was found */
	bool renamed;        /* the needle was in its name: renamed to the masked name (@path) */
	bool removed;        /* could not be rewritten: removed */
	bool failed;         /* could be neither rewritten nor removed */
};

struct scrub_report {
	struct scrub_file *files;
	size_t n_files;
	uint64_t entries, bytes;
	char *stopped_at;    /* a bound was hit here: below and after it nothing was checked */
	const char *stop_why;
	int error;           /* the tree could not be opened (-errno); 0 when it does not exist */
};

/* Builds the needles from @p's secret env values (at most SCRUB_MAX_NEEDLES, equal values
 * merged, the longest first); *@n_short gets how many secret values were too short to look for. Pure. Does not
 * log. Return: the number of needles. */
size_t scrub_needles(const struct aisb_plan *p, struct scrub_needle *out, size_t *n_short);

/* Masks every occurrence of every needle in @buf[0..@n) (the mask never matches a needle);
 * *@found gets bit i set for each needle i found. Pure. Does not log.
 * Return: the number of occurrences masked. */
size_t scrub_buffer(char *buf, size_t n, const struct scrub_needle *nd, size_t n_nd, uint64_t *found);

/* Writes the mask for @len bytes into @out. Pure. Does not log. */
void scrub_mask(char *out, size_t len);

/* Scans the tree at @root (files changed at or after @since; NULL: every file) and masks the
 * needles in place. Return: 0 (see @rep for what was found and whether a bound stopped it) or
 * -errno when @root cannot be opened (-ENOENT is 0 with nothing done). Does not log. */
int scrub_tree(const char *root, const struct timespec *since, const struct scrub_needle *nd, size_t n_nd,
	       struct scrub_report *rep);

void scrub_report_free(struct scrub_report *rep);

/* Supervisor, before the sandbox exists: when @p passes values and has a persistent home,
 * records that this session's check is pending ($state/scrub/<home>/<session id>, start time,
 * held with flock until scrub_session()). A supervisor killed before its check leaves the record
 * unlocked, and the next session on the home checks the files changed since that start (for the
 * values it passes itself: aisb keeps no value on disk). Return: 0 or -errno (the run must not
 * start). Logs on failure. */
int scrub_begin(const struct aisb_plan *p, const struct aisb_session *ss, const struct timespec *since);

/* Supervisor, after the workload is gone (init reaped): scrubs the persistent home (files
 * changed since @since), the session dir and the session's quarantine for @p's secret values,
 * and logs what was masked or removed, by variable name and file, or what could not be checked.
 * The home's check reaches back to the start of an earlier session whose record was left
 * unlocked (scrub_begin()); a complete check removes those records and its own. Return: the
 * number of files changed. Logs. */
size_t scrub_session(const struct aisb_plan *p, const struct aisb_session *ss, const struct timespec *since);

/* Renders the --dry-run line ("after the session: the home's changed files ... for $A, $B").
 * Does not log. */
void scrub_describe(const struct aisb_plan *p, char *buf, size_t n);

#endif
